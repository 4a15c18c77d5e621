//! What a tool's server asks the person running it in the playground while the call runs —
//! elicitation (a form made from the schema it sends, or a link to open) and sampling (a reply
//! typed in place of a model's), as MCP Inspector answers them — and the log messages it sends.
//! A question waits in the process that runs the call, for the account that started it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{field, initial};
use crate::error::PanelError;
use crate::pages::ui::ErrorNote;

/// A question of a run under way, as the server sent it (`method`, `params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Asked {
    /// The handle [`answer_run`] answers it by.
    pub question: String,
    pub method: String,
    pub params: Value,
}

/// How the person running the tool answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// Elicitation accepted, with the form's content (none for a link).
    Accept(Option<Value>),
    /// Elicitation declined.
    Decline,
    /// Elicitation dismissed, or sampling refused.
    Cancel,
    /// Sampling: the text the model would have answered.
    Reply(String),
}

const SAMPLE: &str = "sampling/createMessage";

/// Whether `url` is one the playground links to: http(s) only, never a script.
fn is_web_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

#[cfg(feature = "ssr")]
pub use self::ssr::{PageRelay, Questions};

#[cfg(feature = "ssr")]
mod ssr {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use engine::tool::{ClientRelay, RelayFuture};
    use serde_json::{Value, json};
    use tokio::sync::{mpsc, oneshot};

    use super::{Answer, Asked, SAMPLE};
    use crate::error::PanelError;
    use crate::pages::playground::stream::RunEvent;

    const ELICIT: &str = "elicitation/create";

    /// How long a question waits for its answer.
    const WAIT: Duration = Duration::from_secs(5 * 60);

    /// How many questions one account may leave waiting; a server asking more is refused.
    const PER_ACCOUNT: usize = 8;

    /// The questions waiting in this process, by handle.
    #[derive(Clone, Default)]
    pub struct Questions(Arc<Mutex<HashMap<String, Waiting>>>);

    struct Waiting {
        /// The account that started the run: only it answers.
        by: String,
        method: String,
        answer: oneshot::Sender<Result<Value, String>>,
    }

    impl Questions {
        /// Answers `question` for `by`. A question unknown, gone or someone else's is the
        /// same refusal; an answer that does not fit the question leaves it waiting.
        pub fn answer(&self, question: &str, by: &str, answer: Answer) -> Result<(), PanelError> {
            let mut waiting = self.0.lock().expect("questions");
            let gone = || {
                PanelError::invalid(
                    "this question is not waiting here: it was answered, its run ended, or the run is on another replica",
                )
            };
            let asked = waiting.get(question).filter(|w| w.by == by).ok_or_else(gone)?;
            let result = result(&asked.method, answer)?;
            let asked = waiting.remove(question).ok_or_else(gone)?;
            // The run may have ended meanwhile; the answer then has nobody to go to.
            let _ = asked.answer.send(result);
            Ok(())
        }
    }

    /// The result the server receives for `answer` to a `method` request.
    fn result(method: &str, answer: Answer) -> Result<Result<Value, String>, PanelError> {
        Ok(match (method, answer) {
            (ELICIT, Answer::Accept(Some(content))) => Ok(json!({"action": "accept", "content": content})),
            (ELICIT, Answer::Accept(None)) => Ok(json!({"action": "accept"})),
            (ELICIT, Answer::Decline) => Ok(json!({"action": "decline"})),
            (ELICIT, Answer::Cancel) => Ok(json!({"action": "cancel"})),
            (SAMPLE, Answer::Reply(text)) => Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": text},
                "model": "toolgate-playground",
                "stopReason": "endTurn",
            })),
            (SAMPLE, Answer::Cancel) => Err("the person running the tool in the playground refused".into()),
            (method, _) => {
                return Err(PanelError::invalid(format!("this answer does not fit a {method} request")));
            }
        })
    }

    /// Forgets a question when its request ends, answered or not.
    struct Forget(Questions, String);

    impl Drop for Forget {
        fn drop(&mut self) {
            self.0.0.lock().expect("questions").remove(&self.1);
        }
    }

    /// The playground page as the MCP client of a run: questions and log messages go to the
    /// page with the run's other events.
    pub struct PageRelay {
        pub questions: Questions,
        /// The account running the tool.
        pub by: String,
        pub events: mpsc::Sender<RunEvent>,
    }

    impl ClientRelay for PageRelay {
        fn request(&self, request: Value) -> RelayFuture {
            let method = request["method"].as_str().unwrap_or_default().to_string();
            let params = request["params"].clone();
            let (questions, events, by) = (self.questions.clone(), self.events.clone(), self.by.clone());
            Box::pin(async move {
                if ![ELICIT, SAMPLE].contains(&method.as_str()) {
                    return Err(format!("the playground does not answer {method} requests"));
                }
                if let Some(url) = params.get("url").and_then(Value::as_str)
                    && !super::is_web_link(url)
                {
                    return Err(format!("the playground opens only http(s) links, not `{url}`"));
                }
                let question = uuid::Uuid::new_v4().simple().to_string();
                let (answer, answered) = oneshot::channel();
                {
                    let mut all = questions.0.lock().expect("questions");
                    if all.values().filter(|w| w.by == by).count() >= PER_ACCOUNT {
                        return Err(format!(
                            "{PER_ACCOUNT} questions wait for this account's answers already"
                        ));
                    }
                    all.insert(question.clone(), Waiting { by, method: method.clone(), answer });
                }
                let _forget = Forget(questions, question.clone());
                let gone = || "the playground page went away".to_string();
                events.send(RunEvent::Asks(Asked { question, method, params })).await.map_err(|_| gone())?;
                // Answered, or the run is over (its page stopped reading), or too late.
                tokio::select! {
                    answer = answered => answer.map_err(|_| gone())?,
                    () = events.closed() => Err(gone()),
                    () = tokio::time::sleep(WAIT) => {
                        Err(format!("nobody answered in the playground within {} minutes", WAIT.as_secs() / 60))
                    }
                }
            })
        }

        fn notify(&self, notification: Value) {
            if self.events.try_send(RunEvent::Notice(notification)).is_err() {
                tracing::debug!("a playground run's message dropped: the page reads slower than they come");
            }
        }

        /// The playground shows everything a server logs.
        fn log_level(&self) -> Option<String> {
            Some("debug".into())
        }

        /// It samples (the admin replies) and takes forms and links to open.
        fn capabilities(&self) -> Value {
            serde_json::json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}})
        }
    }
}

/// Answers a question of a run under way.
#[server(endpoint = "answer_run", input = leptos::server_fn::codec::Json)]
pub async fn answer_run(question: String, answer: Answer) -> Result<(), PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    state().questions.answer(&question, caller.actor().as_str(), answer)
}

/// The questions of the run under way, each with its way of answering.
#[component]
pub fn OpenQuestions(asked: RwSignal<Vec<Asked>>) -> impl IntoView {
    view! {
        <For each=move || asked.get() key=|a| a.question.clone() let:question>
            <Question question asked />
        </For>
    }
}

/// One question: its form or reply box, and its buttons. Answered, it goes.
#[component]
fn Question(question: Asked, asked: RwSignal<Vec<Asked>>) -> impl IntoView {
    let handle = question.question.clone();
    let send = Action::new(move |answer: &Answer| answer_run(handle.clone(), answer.clone()));
    let done = question.question.clone();
    Effect::new(move |_| {
        if let Some(Ok(())) = send.value().get() {
            asked.update(|all| all.retain(|a| a.question != done));
        }
    });
    let error = move || send.value().get().and_then(Result::err).map(|e| e.to_string());
    let params = question.params;
    let message = params["message"].as_str().unwrap_or_default().to_string();
    let body = if question.method == SAMPLE {
        let reply = RwSignal::new(String::new());
        view! {
            <h2>"The tool's server asks for a model's reply (sampling)"</h2>
            {params["systemPrompt"].as_str().map(|s| view! { <p class="muted small">"System prompt: " {s.to_string()}</p> })}
            <ol class="sampling-messages">
                {params["messages"].as_array().cloned().unwrap_or_default().iter().map(sampled_message).collect_view()}
            </ol>
            <label>
                "Reply as the model"
                <textarea rows="4" prop:value=move || reply.get() on:input=move |ev| reply.set(event_target_value(&ev))></textarea>
            </label>
            <div class="actions">
                <button type="button" class="primary" on:click=move |_| { send.dispatch(Answer::Reply(reply.get())); }>"Send reply"</button>
                <button type="button" on:click=move |_| { send.dispatch(Answer::Cancel); }>"Refuse"</button>
            </div>
        }
        .into_any()
    } else if let Some(url) = params["url"].as_str().filter(|url| is_web_link(url)).map(str::to_string) {
        view! {
            <h2>"The tool's server asks you to open a page"</h2>
            <p>{message}</p>
            <p><a href=url.clone() target="_blank" rel="noopener noreferrer">{url.clone()}</a></p>
            <div class="actions">
                <button type="button" class="primary" on:click=move |_| { send.dispatch(Answer::Accept(None)); }>"Done"</button>
                <button type="button" on:click=move |_| { send.dispatch(Answer::Decline); }>"Decline"</button>
                <button type="button" on:click=move |_| { send.dispatch(Answer::Cancel); }>"Cancel"</button>
            </div>
        }
        .into_any()
    } else {
        let schema = params["requestedSchema"].clone();
        let content = RwSignal::new(initial(&schema));
        view! {
            <h2>"The tool's server asks you (elicitation)"</h2>
            <p>{message}</p>
            {field(Vec::new(), String::new(), schema, false, content)}
            <div class="actions">
                <button type="button" class="primary" on:click=move |_| { send.dispatch(Answer::Accept(Some(content.get()))); }>"Accept"</button>
                <button type="button" on:click=move |_| { send.dispatch(Answer::Decline); }>"Decline"</button>
                <button type="button" on:click=move |_| { send.dispatch(Answer::Cancel); }>"Cancel"</button>
            </div>
        }
        .into_any()
    };
    view! {
        <section class="card question" role="dialog">
            {body}
            <ErrorNote error />
        </section>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_http_links_are_followed() {
        assert!(super::is_web_link("https://example.com/consent") && super::is_web_link("HTTP://a"));
        for script in ["javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,<script>", "//evil"] {
            assert!(!super::is_web_link(script), "{script}");
        }
    }
}

/// One message of a sampling request: who says it, and its text (or what its blocks are).
fn sampled_message(message: &Value) -> impl IntoView + use<> {
    let blocks = match &message["content"] {
        Value::Array(blocks) => blocks.clone(),
        block => vec![block.clone()],
    };
    let text: Vec<String> = blocks
        .iter()
        .map(|b| {
            b["text"].as_str().map_or_else(
                || format!("[{} block]", b["type"].as_str().unwrap_or("unknown")),
                str::to_string,
            )
        })
        .collect();
    view! { <li><strong>{message["role"].as_str().unwrap_or("user").to_string()} ": "</strong>{text.join("\n")}</li> }
}

/// The log messages (and other notifications) the tool's server sent during the run.
#[component]
pub fn Messages(notices: RwSignal<Vec<Value>>) -> impl IntoView {
    view! {
        <Show when=move || !notices.read().is_empty()>
            <section class="card messages">
                <h2>"Messages from the server"</h2>
                <ul class="log">
                    {move || notices.get().iter().map(notice).collect_view()}
                </ul>
            </section>
        </Show>
    }
}

/// One notification: a log message as `level · logger: data`, anything else by its method.
fn notice(notification: &Value) -> impl IntoView + use<> {
    let params = &notification["params"];
    let (what, data) = match notification["method"].as_str() {
        Some("notifications/message") => {
            let level = params["level"].as_str().unwrap_or("info");
            let logger = params["logger"].as_str().map(|l| format!(" · {l}")).unwrap_or_default();
            (format!("{level}{logger}"), &params["data"])
        }
        method => (method.unwrap_or("notification").to_string(), params),
    };
    let data = data.as_str().map_or_else(|| data.to_string(), str::to_string);
    view! { <li><span class="muted small">{what}</span> " " <code>{data}</code></li> }
}
