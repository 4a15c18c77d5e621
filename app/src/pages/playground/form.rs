//! The playground's arguments form: inputs generated from the schema a tool's LLM sees, and
//! the values it proposes before anything is typed.

use leptos::prelude::*;
use serde_json::{Map, Value, json};

/// A value a schema proposes before the user types: its default, else an empty shape.
pub(super) fn initial(schema: &Value) -> Value {
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
pub(super) enum Step {
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
pub(super) fn field(
    path: Vec<Step>,
    label: String,
    schema: Value,
    required: bool,
    root: RwSignal<Value>,
) -> AnyView {
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
