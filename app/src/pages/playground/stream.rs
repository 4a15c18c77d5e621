//! A playground run as it streams: the server function that runs the tool and streams its
//! events (progress, questions, messages, then how it ended), the page's reading of them, and
//! what the page shows of them: the progress under way and the result.

use leptos::prelude::*;
use leptos::server_fn::codec::{StreamingText, TextStream};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::asked::Asked;
use crate::error::PanelError;
use crate::pages::ui::{JsonBlock, StatusBadge};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// When it ran (UTC, to the minute).
    pub at: String,
    pub status: String,
    pub output: Value,
    pub latency_ms: f64,
    pub correlation_id: Option<String>,
}

/// A progress report of a run under way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub done: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// What a run streams to the page, one JSON line each: progress reports, questions and log
/// messages while the tool works, then how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunEvent {
    Progress(Report),
    /// The tool's server asks the person running it something.
    Asks(Asked),
    /// A notification the tool's server sent (`{"method", "params"}`): a log message.
    Notice(Value),
    Done(RunOutcome),
    Refused(PanelError),
}

/// Runs a tool for the playground, streaming its progress. When the page stops reading
/// (Cancel), the request ends and with it the call: cancelled upstream, recorded as such.
#[server(endpoint = "run_tool", output = StreamingText)]
pub async fn run_tool(
    tenant: String,
    tool: String,
    arguments: String,
) -> Result<TextStream<PanelError>, PanelError> {
    use std::sync::Arc;

    use engine::service::calls::{CallHooks, CallRequest};
    use engine::tool::Progress;
    use futures::StreamExt;

    use crate::server::{caller, state};
    let caller = caller().await?;
    caller.tenant(&tenant)?;
    let arguments: Value = serde_json::from_str(&arguments)
        .map_err(|e| PanelError::invalid(format!("the arguments are not valid JSON: {e}")))?;
    // The stream is read after this function returns, outside its reactive context.
    let state = state();
    let (sink, reports) = engine::tool::progress_channel();
    let (events, asked) = tokio::sync::mpsc::channel(16);
    let relay = super::asked::PageRelay {
        questions: state.questions.clone(),
        by: caller.actor().as_str().to_string(),
        events,
    };
    let hooks = CallHooks { progress: Some(sink), client: Some(Arc::new(relay)), format: None };
    let call = async move {
        let request = CallRequest { name: tool, arguments };
        let result =
            engine::service::tenants::invoke(&state, &caller.tenant(&tenant)?, request, hooks).await?;
        Ok::<_, PanelError>(RunOutcome {
            at: crate::server::minute(time::OffsetDateTime::now_utc()),
            status: serde_json::to_value(result.status)
                .ok()
                .and_then(|s| s.as_str().map(str::to_string))
                .unwrap_or_default(),
            output: serde_json::to_value(&result.output).map_err(|e| PanelError::internal(&e))?,
            latency_ms: result.latency_ms,
            correlation_id: result.correlation_id,
        })
    };
    // Reports, questions and messages until the call ends (those still queued then are of
    // no use), and an empty line whenever nothing else was sent for a while: writing is how
    // the server learns that the page went away, which ends the call.
    let running = Some((Box::pin(call), reports, asked));
    let lines = futures::stream::unfold(running, |running| async move {
        let (mut call, mut reports, mut asked) = running?;
        let event = tokio::select! {
            ended = &mut call => {
                let event = match ended {
                    Ok(outcome) => RunEvent::Done(outcome),
                    Err(refused) => RunEvent::Refused(refused),
                };
                return Some((event_line(&event), None));
            }
            Some(report) = reports.recv() => {
                let Progress { progress: done, total, message } = report;
                event_line(&RunEvent::Progress(Report { done, total, message }))
            }
            Some(event) = asked.recv() => event_line(&event),
            () = tokio::time::sleep(std::time::Duration::from_secs(2)) => "\n".to_string(),
        };
        Some((event, Some((call, reports, asked))))
    });
    Ok(TextStream::new(lines.map(Ok)))
}

#[cfg(feature = "ssr")]
fn event_line(event: &RunEvent) -> String {
    serde_json::to_string(event).expect("events serialise") + "\n"
}

/// What the page shows of the run under way.
#[derive(Clone, Copy)]
pub(super) struct Live {
    /// The newest progress report.
    pub(super) progress: RwSignal<Option<Report>>,
    /// The server's questions not answered yet.
    pub(super) asked: RwSignal<Vec<Asked>>,
    /// The server's messages, the newest [`MESSAGES_SHOWN`].
    pub(super) notices: RwSignal<Vec<Value>>,
}

const MESSAGES_SHOWN: usize = 200;

/// Reads a run's events into `live`, up to how it ended.
pub(super) async fn outcome(events: TextStream<PanelError>, live: Live) -> Result<RunOutcome, PanelError> {
    use futures::StreamExt;
    let mut events = events.into_inner();
    // Chunks of the response need not end where lines do.
    let mut read = String::new();
    while let Some(chunk) = events.next().await {
        read.push_str(&chunk?);
        while let Some(end) = read.find('\n') {
            let line: String = read.drain(..=end).collect();
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<RunEvent>(&line) {
                Ok(RunEvent::Progress(report)) => live.progress.set(Some(report)),
                Ok(RunEvent::Asks(asked)) => live.asked.update(|all| all.push(asked)),
                Ok(RunEvent::Notice(notice)) => live.notices.update(|all| {
                    if all.len() == MESSAGES_SHOWN {
                        all.remove(0);
                    }
                    all.push(notice);
                }),
                Ok(RunEvent::Done(outcome)) => return Ok(outcome),
                Ok(RunEvent::Refused(refused)) => return Err(refused),
                Err(err) => {
                    return Err(PanelError::Request(format!("an answer the panel cannot read: {err}")));
                }
            }
        }
    }
    Err(PanelError::Request("the run ended without a result: the server went away".into()))
}

/// How a run under way is doing, from its newest progress report.
#[component]
pub(super) fn RunProgress(progress: RwSignal<Option<Report>>) -> impl IntoView {
    move || {
        progress.get().map(|Report { done, total, message }| {
            let amount = match total {
                Some(total) => format!("{done} of {total}"),
                None => done.to_string(),
            };
            view! {
                <span class="run-progress" role="status">
                    {total.map(|total| view! { <progress max=total value=done></progress> })}
                    " " {amount} {message.map(|m| format!(" · {m}"))}
                </span>
            }
        })
    }
}

/// A finished run's result: its status and latency, what it returned block by block, and the
/// full result; marked stale while `stale` says so.
#[component]
pub(super) fn RunResult(
    outcome: RunOutcome,
    stale: impl Fn() -> bool + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let blocks = outcome.output["content"].as_array().cloned().unwrap_or_default();
    view! {
        <section class="card result" class:stale=stale>
            <h2>
                "Result " <StatusBadge status=outcome.status.clone() />
                <span class="muted small">{format!(" {:.1} ms", outcome.latency_ms)}</span>
            </h2>
            <Show when=stale>
                <p class="notice stale-note">"Stale: the tenant, the tool or the arguments changed since this run. Run again to see their result."</p>
            </Show>
            {outcome.correlation_id.map(|id| view! { <p class="error">"Failed; correlation id " <code>{id}</code> " (details in the server log)."</p> })}
            {blocks.iter().map(content_block).collect_view()}
            <JsonBlock label="Full result" value=outcome.output />
        </section>
    }
}

/// One block of a tool's result, where it comes in the result: text (JSON pretty-printed),
/// an image shown at a size one can see, or what any other block is, named.
pub(super) fn content_block(block: &Value) -> AnyView {
    let text = |key: &str| block[key].as_str().map(str::to_string);
    match block["type"].as_str() {
        Some("text") => {
            let text = text("text").unwrap_or_default();
            let pretty = serde_json::from_str::<Value>(&text)
                .ok()
                .filter(|v| v.is_object() || v.is_array())
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or(text);
            view! { <pre class="output">{pretty}</pre> }.into_any()
        }
        Some("image") => match (text("mimeType"), text("data")) {
            (Some(mime), Some(data)) => {
                view! { <img class="output" src=format!("data:{mime};base64,{data}") alt="an image the tool returned" /> }
                    .into_any()
            }
            _ => view! { <p class="muted">"An image block without data."</p> }.into_any(),
        },
        other => {
            let kind = other.unwrap_or("unknown").to_string();
            let what = text("uri").or(text("mimeType")).unwrap_or_default();
            view! { <p class="muted output-other">{format!("A {kind} block")} " " <code>{what}</code> " (in the full result below)."</p> }
                .into_any()
        }
    }
}
