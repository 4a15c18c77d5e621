//! The playground's raw JSON editor: the arguments as JSON, the other way to write them than
//! the form.

use leptos::prelude::*;
use serde_json::Value;

/// The arguments as pretty JSON to edit, and below them why what was typed is not taken yet.
#[component]
pub(super) fn RawArguments(arguments: RwSignal<Value>, raw_error: RwSignal<Option<String>>) -> impl IntoView {
    // Raw JSON replaces the arguments once it parses; until then the form keeps its values.
    let parse_raw = move |text: String| match serde_json::from_str::<Value>(&text) {
        Ok(value) => {
            raw_error.set(None);
            arguments.set(value);
        }
        Err(err) => raw_error.set(Some(format!("not valid JSON: {err}"))),
    };
    view! {
        <textarea
            class="raw-json"
            rows="10"
            prop:value=move || serde_json::to_string_pretty(&arguments.get()).unwrap_or_default()
            on:change=move |ev| parse_raw(event_target_value(&ev))
        ></textarea>
        // Always there, so that the error going away does not move the button.
        <p class="field-error error" role="alert">{move || raw_error.get()}</p>
    }
}
