//! The playground: pick a tenant and one of its tools, fill in a form generated from the
//! schema its LLM sees (or raw JSON), and run it through the same execution path as real
//! calls, answering what the tool's server asks meanwhile ([`asked`]). Recent runs can be
//! replayed or edited. Below, the tenant's prompts and resources ([`items`]).

use leptos::prelude::*;
use leptos::server_fn::codec::{StreamingText, TextStream};
use leptos_meta::Title;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::ui::{ErrorNote, JsonBlock, StatusBadge};
use crate::error::PanelError;

mod asked;
mod items;
#[cfg(feature = "ssr")]
pub use asked::Questions;
use asked::{Asked, Messages, OpenQuestions};
use items::PromptsAndResources;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayTool {
    pub name: String,
    pub description: String,
    /// The input schema the tenant's LLM sees.
    pub schema: Value,
}

#[server]
pub async fn playground_tenants() -> Result<Vec<String>, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenants = engine::service::tenants::list(&state(), &caller).await?;
    Ok(tenants.into_iter().map(|t| t.slug).collect())
}

#[server]
pub async fn playground_tools(tenant: String) -> Result<Vec<PlayTool>, PanelError> {
    use crate::server::{caller, state};
    if tenant.is_empty() {
        return Ok(Vec::new());
    }
    let caller = caller().await?;
    let tenant = caller.tenant(&tenant)?;
    let snapshot = state().catalog.snapshot();
    Ok(snapshot
        .tenant(tenant.slug().as_str())
        .map(|view| view.tools())
        .unwrap_or_default()
        .iter()
        .map(|t| PlayTool {
            name: t.exposed_name.clone(),
            description: t.description.clone(),
            schema: (*t.input_schema).clone(),
        })
        .collect())
}

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

    use engine::exec::{CallHooks, CallRequest};
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
    let relay = asked::PageRelay {
        questions: state.questions.clone(),
        by: caller.actor().as_str().to_string(),
        events,
    };
    let hooks = CallHooks { progress: Some(sink), client: Some(Arc::new(relay)) };
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

/// A test invocation in the playground's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PastRun {
    pub at: String,
    pub tool: String,
    /// Who ran it (`admin:<name>`).
    pub by: String,
    pub arguments: Value,
    pub status: String,
    pub latency_ms: f64,
}

/// The tenant's newest test invocations, from the invocation records (so the history
/// outlives the page, and shows other administrators' runs too).
#[server]
pub async fn playground_history(tenant: String) -> Result<Vec<PastRun>, PanelError> {
    use crate::server::{caller, minute, state};
    if tenant.is_empty() {
        return Ok(Vec::new());
    }
    let caller = caller().await?;
    let tenant = caller.tenant(&tenant)?;
    Ok(engine::service::tenants::test_runs(&state(), &tenant)
        .await?
        .into_iter()
        .map(|r| PastRun {
            at: minute(r.at),
            tool: r.tool,
            by: r.caller,
            arguments: r.arguments,
            status: r.status,
            latency_ms: r.latency_us as f64 / 1000.0,
        })
        .collect())
}

/// A value a schema proposes before the user types: its default, else an empty shape.
fn initial(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema.get("anyOf").and_then(Value::as_array).and_then(|v| v.first()) {
        return initial(first);
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut object = Map::new();
            for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten()
            {
                let required = schema["required"].as_array().is_some_and(|r| r.iter().any(|n| n == name));
                if required || property.get("default").is_some() {
                    object.insert(name.clone(), initial(property));
                }
            }
            Value::Object(object)
        }
        Some("array") => json!([]),
        Some("boolean") => json!(false),
        Some("integer" | "number") => Value::Null,
        _ => json!(""),
    }
}

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

fn get_at<'a>(value: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Key(k) => v.get(k),
        Step::Index(i) => v.get(i),
    })
}

/// Sets (or with `None` removes) the value at `path`, creating objects on the way.
fn set_at(value: &mut Value, path: &[Step], new: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        if let Some(new) = new {
            *value = new;
        }
        return;
    };
    let mut target = value;
    for step in parents {
        target = match step {
            Step::Key(k) => {
                if !target.is_object() {
                    *target = json!({});
                }
                target.as_object_mut().expect("an object").entry(k.clone()).or_insert(json!({}))
            }
            Step::Index(i) => match target.get_mut(*i) {
                Some(item) => item,
                None => return,
            },
        };
    }
    match (last, new) {
        (Step::Key(k), Some(new)) => {
            if !target.is_object() {
                *target = json!({});
            }
            target.as_object_mut().expect("an object").insert(k.clone(), new);
        }
        (Step::Key(k), None) => {
            if let Some(object) = target.as_object_mut() {
                object.remove(k);
            }
        }
        (Step::Index(i), Some(new)) => {
            if let Some(item) = target.get_mut(*i) {
                *item = new;
            }
        }
        (Step::Index(i), None) => {
            if let Some(items) = target.as_array_mut()
                && *i < items.len()
            {
                items.remove(*i);
            }
        }
    }
}

/// The form for `schema` at `path` of `root`: inputs for scalars and enums, nested fieldsets
/// for objects, add/remove lists for arrays, and a variant picker for `anyOf`.
fn field(path: Vec<Step>, label: String, schema: Value, required: bool, root: RwSignal<Value>) -> AnyView {
    let description = schema.get("description").and_then(Value::as_str).map(str::to_string);
    let title = view! {
        <span class="field-name">
            {label.clone()} {required.then(|| view! { <abbr class="required" title="required">"*"</abbr> })}
        </span>
    };
    let hint = description.map(|d| view! { <span class="muted small">{d}</span> });
    let options = choices(&schema);
    if let Some(variants) =
        schema.get("anyOf").and_then(Value::as_array).cloned().filter(|_| options.is_none())
    {
        let chosen = RwSignal::new(0usize);
        let names: Vec<String> = variants
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.get("title")
                    .or(v.get("type"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or(format!("variant {}", i + 1))
            })
            .collect();
        let set_path = path.clone();
        let pick_variants = variants.clone();
        return view! {
            <fieldset class="variant">
                <legend>{title}</legend>
                {hint}
                <select on:change=move |ev| {
                    let index: usize = event_target_value(&ev).parse().unwrap_or(0);
                    chosen.set(index);
                    root.update(|r| set_at(r, &set_path, Some(initial(&pick_variants[index]))));
                }>
                    {names.into_iter().enumerate().map(|(i, n)| view! { <option value=i.to_string()>{n}</option> }).collect_view()}
                </select>
                {move || field(path.clone(), String::new(), variants[chosen.get()].clone(), false, root)}
            </fieldset>
        }
        .into_any();
    }
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("string").to_string();
    let read_path = path.clone();
    let current = move || root.with(|r| get_at(r, &read_path).cloned());
    match kind.as_str() {
        "object" => {
            let required_names: Vec<String> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let inner = properties
                .into_iter()
                .map(|(name, property)| {
                    let mut child = path.clone();
                    child.push(Step::Key(name.clone()));
                    let required = required_names.contains(&name);
                    field(child, name, property, required, root)
                })
                .collect_view();
            if path.is_empty() {
                view! { <div class="schema-form">{inner}</div> }.into_any()
            } else {
                view! { <fieldset><legend>{title}</legend>{hint}{inner}</fieldset> }.into_any()
            }
        }
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(json!({"type": "string"}));
            let count = move || current().and_then(|v| v.as_array().map(Vec::len)).unwrap_or(0);
            let (add_path, add_items) = (path.clone(), items.clone());
            view! {
                <fieldset>
                    <legend>{title}</legend>
                    {hint}
                    {move || {
                        (0..count())
                            .map(|i| {
                                let mut child = path.clone();
                                child.push(Step::Index(i));
                                let remove = child.clone();
                                view! {
                                    <div class="array-item">
                                        {field(child, format!("#{}", i + 1), items.clone(), false, root)}
                                        <button type="button" class="link" on:click=move |_| root.update(|r| set_at(r, &remove, None))>
                                            "Remove"
                                        </button>
                                    </div>
                                }
                            })
                            .collect_view()
                    }}
                    <button
                        type="button"
                        on:click=move |_| {
                            root.update(|r| {
                                let mut list = get_at(r, &add_path).and_then(Value::as_array).cloned().unwrap_or_default();
                                list.push(initial(&add_items));
                                set_at(r, &add_path, Some(Value::Array(list)));
                            })
                        }
                    >
                        "Add an item"
                    </button>
                </fieldset>
            }
            .into_any()
        }
        "boolean" => view! {
            <label class="check">
                <input
                    type="checkbox"
                    prop:checked=move || current().and_then(|v| v.as_bool()).unwrap_or(false)
                    on:change=move |ev| root.update(|r| set_at(r, &path, Some(json!(event_target_checked(&ev)))))
                />
                {title}
                {hint}
            </label>
        }
        .into_any(),
        _ => {
            let numeric = matches!(kind.as_str(), "integer" | "number");
            let text = move || match current() {
                Some(Value::String(s)) => s,
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            let write = move |raw: String| {
                let value = if raw.is_empty() && !required {
                    None
                } else if numeric {
                    // Kept as typed when it is not a number yet; validation says so on run.
                    Some(serde_json::from_str::<Value>(&raw).ok().filter(Value::is_number).unwrap_or(Value::String(raw)))
                } else {
                    Some(Value::String(raw))
                };
                root.update(|r| set_at(r, &path, value));
            };
            let input = match options {
                Some(options) => view! {
                    <select prop:value=text on:change=move |ev| write(event_target_value(&ev))>
                        <option value="">"—"</option>
                        {options
                            .into_iter()
                            .map(|(value, title)| view! { <option value=value>{title}</option> })
                            .collect_view()}
                    </select>
                }
                .into_any(),
                None => view! {
                    <input
                        type=if numeric { "number" } else { "text" }
                        step="any"
                        required=required
                        prop:value=text
                        on:input=move |ev| write(event_target_value(&ev))
                    />
                }
                .into_any(),
            };
            view! { <label>{title}{hint}{input}</label> }.into_any()
        }
    }
}

/// The values a scalar may take, each with its title: an `enum` (titled by `enumNames` if
/// given), or a `oneOf`/`anyOf` of `const`s (as elicitation's titled choices are written).
fn choices(schema: &Value) -> Option<Vec<(String, String)>> {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        let title = |i: usize, v: &Value| names.and_then(|n| n.get(i)).map_or_else(|| text(v), text);
        return Some(values.iter().enumerate().map(|(i, v)| (text(v), title(i, v))).collect());
    }
    let variants = schema.get("oneOf").or(schema.get("anyOf"))?.as_array()?;
    variants
        .iter()
        .map(|v| {
            let value = text(v.get("const")?);
            Some((value.clone(), v.get("title").map_or(value, text)))
        })
        .collect()
}

/// One block of a tool's result, where it comes in the result: text (JSON pretty-printed),
/// an image shown at a size one can see, or what any other block is, named.
fn content_block(block: &Value) -> AnyView {
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

/// What a run was made with: the result on screen is stale once the choices differ.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    tenant: String,
    tool: String,
    arguments: Value,
}

impl Run {
    /// Whether this run was made with exactly these choices.
    fn made_with(&self, tenant: &str, tool: Option<&PlayTool>, arguments: &Value) -> bool {
        self.tenant == tenant && tool.is_some_and(|t| t.name == self.tool) && &self.arguments == arguments
    }
}

#[component]
pub fn PlaygroundPage() -> impl IntoView {
    let tenants = Resource::new(|| (), |_| playground_tenants());
    // `?tenant=…&tool=…` (the tool page's "Try it") opens on that tool.
    let query = leptos_router::hooks::use_query_map();
    let tenant = RwSignal::new(query.read_untracked().get("tenant").unwrap_or_default());
    let wanted = StoredValue::new(query.read_untracked().get("tool"));
    let tools = Resource::new(move || tenant.get(), playground_tools);
    let tool = RwSignal::new(None::<PlayTool>);
    let arguments = RwSignal::new(json!({}));
    let raw_tab = RwSignal::new(false);
    let raw_error = RwSignal::new(None::<String>);
    let live = Live {
        progress: RwSignal::new(None),
        asked: RwSignal::new(Vec::new()),
        notices: RwSignal::new(Vec::new()),
    };
    let run = Action::new_local(move |entry: &Run| {
        let entry = entry.clone();
        async move {
            live.progress.set(None);
            live.notices.set(Vec::new());
            let events = run_tool(entry.tenant, entry.tool, entry.arguments.to_string()).await?;
            let ended = outcome(events, live).await;
            live.asked.set(Vec::new());
            ended
        }
    });
    // The tenant's recorded runs as the tenant was chosen, and the runs made here since.
    let recorded = Resource::new(move || tenant.get(), playground_history);
    let made_here = RwSignal::new(Vec::<PastRun>::new());
    Effect::new(move |_| {
        tenant.track();
        made_here.set(Vec::new());
    });
    let pending_run = StoredValue::new(None::<Run>);
    let shown = RwSignal::new(None::<Run>);
    // Dropping the run's future ends its request, and with it the call on the server.
    let under_way = StoredValue::new(None::<ActionAbortHandle>);
    let cancelled = RwSignal::new(false);
    let cancel = move || {
        if let Some(handle) = under_way.try_update_value(Option::take).flatten() {
            handle.abort();
            live.asked.set(Vec::new());
            cancelled.set(true);
        }
        if let Some(entry) = pending_run.try_update_value(Option::take).flatten() {
            let past = PastRun {
                at: "just now".into(),
                tool: entry.tool,
                by: "you".into(),
                arguments: entry.arguments,
                status: "cancelled".into(),
                latency_ms: 0.0,
            };
            made_here.update(|h| h.insert(0, past));
        }
    };

    Effect::new(move |_| {
        let Some(Ok(list)) = tools.get() else { return };
        if let Some(found) = wanted.get_value().and_then(|name| list.into_iter().find(|t| t.name == name)) {
            arguments.set(initial(&found.schema));
            tool.set(Some(found));
        }
        wanted.set_value(None);
    });
    // Runs the chosen tool of the chosen tenant with the current arguments.
    let start = move || {
        let Some(chosen) = tool.get() else { return };
        let entry = Run { tenant: tenant.get(), tool: chosen.name, arguments: arguments.get() };
        cancelled.set(false);
        under_way.set_value(Some(run.dispatch(entry.clone())));
        pending_run.set_value(Some(entry));
    };
    // Each finished run goes to the history, newest first, and is what the result shows.
    Effect::new(move |_| {
        let Some(result) = run.value().get() else { return };
        let Some(entry) = pending_run.get_value() else { return };
        pending_run.set_value(None);
        under_way.set_value(None);
        if let Ok(outcome) = result {
            let past = PastRun {
                at: outcome.at,
                tool: entry.tool.clone(),
                by: "you".into(),
                arguments: entry.arguments.clone(),
                status: outcome.status,
                latency_ms: outcome.latency_ms,
            };
            made_here.update(|h| h.insert(0, past));
        }
        shown.set(Some(entry));
    });
    // The result on screen is stale once the tenant, the tool or the arguments differ from
    // the run that produced it.
    let stale = move || {
        shown.with(|run| {
            run.as_ref().is_some_and(|run| {
                tool.with(|t| arguments.with(|a| !run.made_with(&tenant.read(), t.as_ref(), a)))
            })
        })
    };
    // A replay puts back the tool and the arguments together (the history is the chosen
    // tenant's), then runs them, or leaves them to edit first.
    let replay_error = RwSignal::new(None::<String>);
    let replay = move |past: PastRun, now: bool| {
        let offered =
            tools.get().and_then(Result::ok).and_then(|list| list.into_iter().find(|t| t.name == past.tool));
        let Some(found) = offered else {
            replay_error.set(Some(format!("`{}` is no longer offered to this tenant", past.tool)));
            return;
        };
        replay_error.set(None);
        raw_error.set(None);
        tool.set(Some(found));
        arguments.set(past.arguments);
        if now {
            start();
        }
    };
    // Raw JSON replaces the arguments once it parses; until then the form keeps its values.
    let parse_raw = move |text: String| match serde_json::from_str::<Value>(&text) {
        Ok(value) => {
            raw_error.set(None);
            arguments.set(value);
        }
        Err(err) => raw_error.set(Some(format!("not valid JSON: {err}"))),
    };
    let choose_tool = move |name: String| {
        let found =
            tools.get().and_then(Result::ok).and_then(|list| list.into_iter().find(|t| t.name == name));
        if let Some(found) = &found {
            arguments.set(initial(&found.schema));
        }
        tool.set(found);
    };

    view! {
        <Title text="Playground" />
        <h1>"Playground"</h1>
        <div class="filters">
            <label>
                "Tenant "
                <select name="tenant" prop:value=move || tenant.get() on:change=move |ev| { tenant.set(event_target_value(&ev)); tool.set(None); }>
                    <option value="">"Choose…"</option>
                    <Transition fallback=|| ()>
                        {move || {
                            tenants.get().and_then(Result::ok).unwrap_or_default().into_iter()
                                .map(|t| {
                                    let (value, this) = (t.clone(), t.clone());
                                    view! { <option value=value selected=move || tenant.read() == this>{t}</option> }
                                })
                                .collect_view()
                        }}
                    </Transition>
                </select>
            </label>
            <label>
                "Tool "
                <select name="tool" prop:value=move || tool.get().map(|t| t.name).unwrap_or_default() on:change=move |ev| choose_tool(event_target_value(&ev))>
                    <option value="">"Choose…"</option>
                    <Transition fallback=|| ()>
                        {move || {
                            tools.get().and_then(Result::ok).unwrap_or_default().into_iter()
                                .map(|t| {
                                    let (value, this) = (t.name.clone(), t.name.clone());
                                    let chosen = move || tool.read().as_ref().is_some_and(|c| c.name == this);
                                    view! { <option value=value selected=chosen>{t.name}</option> }
                                })
                                .collect_view()
                        }}
                    </Transition>
                </select>
            </label>
        </div>
        {move || {
            tool.get()
                .map(|chosen| {
                    let schema = chosen.schema.clone();
                    view! {
                        <section class="card">
                            <p class="description">{chosen.description.clone()}</p>
                            <div class="tabs" role="tablist">
                                <button type="button" role="tab" class:active=move || !raw_tab.get() on:click=move |_| raw_tab.set(false)>"Form"</button>
                                <button type="button" role="tab" class:active=move || raw_tab.get() on:click=move |_| raw_tab.set(true)>"Raw JSON"</button>
                            </div>
                            <Show
                                when=move || raw_tab.get()
                                fallback=move || field(Vec::new(), String::new(), schema.clone(), false, arguments)
                            >
                                <textarea
                                    class="raw-json"
                                    rows="10"
                                    prop:value=move || serde_json::to_string_pretty(&arguments.get()).unwrap_or_default()
                                    on:change=move |ev| parse_raw(event_target_value(&ev))
                                ></textarea>
                                // Always there, so that the error going away does not move the button.
                                <p class="field-error error" role="alert">{move || raw_error.get()}</p>
                            </Show>
                            <div class="actions">
                                <button type="button" class="primary" disabled=move || run.pending().get() on:click=move |_| start()>
                                    {move || if run.pending().get() { "Running…" } else { "Run" }}
                                </button>
                                <Show when=move || run.pending().get()>
                                    <button type="button" class="cancel-run" on:click=move |_| cancel()>"Cancel"</button>
                                    <RunProgress progress=live.progress />
                                </Show>
                            </div>
                        </section>
                    }
                    .into_any()
                })
        }}
        <OpenQuestions asked=live.asked />
        <ErrorNote error=move || run.value().get().and_then(Result::err).map(|err| err.to_string()) />
        <Show when=move || cancelled.get() && !run.pending().get()>
            <p class="notice" role="status">"Cancelled: the call was stopped, at its server too, and is recorded as cancelled."</p>
        </Show>
        {move || {
            run.value().get().and_then(Result::ok).map(|outcome| {
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
                .into_any()
            })
        }}
        <Messages notices=live.notices />
        <ErrorNote error=move || replay_error.get() />
        <History recorded made_here replay />
        <PromptsAndResources tenant />
    }
}

/// How a run under way is doing, from its newest progress report.
#[component]
fn RunProgress(progress: RwSignal<Option<Report>>) -> impl IntoView {
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

/// What the page shows of the run under way.
#[derive(Clone, Copy)]
struct Live {
    /// The newest progress report.
    progress: RwSignal<Option<Report>>,
    /// The server's questions not answered yet.
    asked: RwSignal<Vec<Asked>>,
    /// The server's messages, the newest [`MESSAGES_SHOWN`].
    notices: RwSignal<Vec<Value>>,
}

const MESSAGES_SHOWN: usize = 200;

/// Reads a run's events into `live`, up to how it ended.
async fn outcome(events: TextStream<PanelError>, live: Live) -> Result<RunOutcome, PanelError> {
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

/// The tenant's runs, newest first, each to replay.
#[component]
fn History(
    recorded: Resource<Result<Vec<PastRun>, PanelError>>,
    made_here: RwSignal<Vec<PastRun>>,
    replay: impl Fn(PastRun, bool) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let runs = move || {
        let mut runs = made_here.get();
        runs.extend(recorded.get().and_then(Result::ok).unwrap_or_default());
        runs.truncate(20);
        runs
    };
    // The Transition's own view reads the runs (not a `Show` inside it): the server then waits
    // for them before rendering, as the browser hydrates with them.
    view! {
        <Transition fallback=|| ()>
            {move || (!runs().is_empty()).then(|| view! {
                <section class="card">
                    <h2>"Recent runs"</h2>
                    <div class="scroll">
                        <table class="grid history">
                            <tbody>
                                {move || {
                                    runs()
                                        .into_iter()
                                        .map(|past| {
                                            let (again, edit) = (past.clone(), past.clone());
                                            view! {
                                                <tr>
                                                    <td class="small">{past.at}</td>
                                                    <td><code>{past.tool}</code></td>
                                                    <td class="small"><code>{past.arguments.to_string()}</code></td>
                                                    <td><StatusBadge status=past.status /></td>
                                                    <td>{format!("{:.1} ms", past.latency_ms)}</td>
                                                    <td class="small muted">{past.by}</td>
                                                    <td>
                                                        <button type="button" class="link" on:click=move |_| replay(again.clone(), true)>"Replay"</button>
                                                        " "
                                                        <button type="button" class="link" on:click=move |_| replay(edit.clone(), false)>"Edit"</button>
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()
                                }}
                            </tbody>
                        </table>
                    </div>
                </section>
            })}
        </Transition>
    }
}
