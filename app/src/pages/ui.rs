//! Small pieces every page uses. Everything here renders text through Leptos, which escapes
//! it: names and descriptions from upstream servers are untrusted.

use leptos::prelude::*;
use serde_json::Value;

use crate::error::PanelError;

/// A connection or tool status as a coloured badge.
#[component]
pub fn StatusBadge(#[prop(into)] status: String) -> impl IntoView {
    let class = format!("status status-{}", status.replace(' ', "-"));
    view! { <span class=class>{status}</span> }
}

/// A JSON value, pretty-printed, with a copy button.
#[component]
pub fn JsonBlock(value: Value, #[prop(optional, into)] label: Option<String>) -> impl IntoView {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    view! {
        <figure class="json">
            <figcaption>
                <span>{label}</span>
                <CopyButton text=text.clone() />
            </figcaption>
            <pre>{text}</pre>
        </figure>
    }
}

/// Filters kept in the page's address (`path?key=value…`), so that a filtered page can be
/// reloaded, bookmarked and shared: each starts as the address says, and a change rewrites the
/// address (in place: the back button does not step through every keystroke).
pub fn filters_in_address<const N: usize>(
    path: &'static str,
    keys: [&'static str; N],
) -> [RwSignal<String>; N] {
    let query = leptos_router::hooks::use_query_map();
    let filters = keys.map(|key| RwSignal::new(query.read_untracked().get(key).unwrap_or_default()));
    let navigate = leptos_router::hooks::use_navigate();
    Effect::new(move |first: Option<()>| {
        let address: leptos_router::params::ParamsMap = keys
            .into_iter()
            .zip(filters)
            .map(|(key, value)| (key, value.get()))
            .filter(|(_, value)| !value.is_empty())
            .collect();
        // The first run only subscribes: the address is already what the filters say.
        if first.is_some() {
            let to = format!("{path}{}", address.to_query_string());
            navigate(
                &to,
                leptos_router::NavigateOptions { replace: true, scroll: false, ..Default::default() },
            );
        }
    });
    filters
}

/// Keeps what `resource` shows current while the page is open in the browser: every few
/// seconds `load(source())` runs again in the background, and `resource` takes its answer when
/// it differs from what is shown (`same` says when it does not: a page redrawn for nothing
/// would close what the user opened on it). An answer for a source that changed meanwhile (the
/// page moved on to another server) is dropped, a reload waits for the one before, and a failed
/// one leaves the page as it was.
pub fn kept_current<S, T, Fut>(
    resource: Resource<Result<T, PanelError>>,
    source: impl Fn() -> S + 'static,
    load: impl Fn(S) -> Fut + 'static,
    same: fn(&T, &T) -> bool,
) where
    S: PartialEq + 'static,
    T: Send + Sync + 'static,
    Fut: Future<Output = Result<T, PanelError>> + 'static,
{
    const PERIOD: std::time::Duration = std::time::Duration::from_secs(4);
    let reloading = std::rc::Rc::new(std::cell::Cell::new(false));
    let (source, load) = (std::rc::Rc::new(source), std::rc::Rc::new(load));
    // Effects run only in the browser.
    Effect::new(move |_| {
        let (source, load, reloading) = (source.clone(), load.clone(), reloading.clone());
        let reload = move || {
            if reloading.replace(true) {
                return;
            }
            let (source, reloading) = (source.clone(), reloading.clone());
            let asked = source();
            let fresh = load(source());
            leptos::task::spawn_local(async move {
                let answer = fresh.await;
                reloading.set(false);
                let Ok(fresh) = answer else { return };
                let shown =
                    resource.with_untracked(|shown| matches!(shown, Some(Ok(shown)) if same(shown, &fresh)));
                if !shown && source() == asked {
                    resource.set(Some(Ok(fresh)));
                }
            });
        };
        if let Ok(interval) = set_interval_with_handle(reload, PERIOD) {
            on_cleanup(move || interval.clear());
        }
    });
}

/// A table of `rows` under `headers` (an empty heading for an actions column), or `empty`
/// when there are none; a table wider than the screen scrolls inside its own box.
pub fn grid<T>(
    rows: Vec<T>,
    empty: &'static str,
    headers: &'static [&'static str],
    row: impl Fn(T) -> AnyView,
) -> AnyView {
    if rows.is_empty() {
        return view! { <p class="muted">{empty}</p> }.into_any();
    }
    view! {
        <div class="scroll">
            <table class="grid">
                <thead>
                    <tr>{headers.iter().map(|header| view! { <th>{*header}</th> }).collect_view()}</tr>
                </thead>
                <tbody>{rows.into_iter().map(row).collect_view()}</tbody>
            </table>
        </div>
    }
    .into_any()
}

/// The tenants that see something now, each a link to its page; "no tenant" for none.
pub fn seen_by(tenants: Vec<String>) -> AnyView {
    if tenants.is_empty() {
        return view! { <span class="muted">"no tenant"</span> }.into_any();
    }
    tenants
        .into_iter()
        .map(|slug| view! { <a href=format!("/tenants/{slug}")>{slug.clone()}</a> " " })
        .collect_view()
        .into_any()
}

/// The name and expiry fields of a new key or token (`what`: `key`, `token`), named
/// `<what>-name` and `<what>-expiry`; the expiry is whole days, empty for never.
#[component]
pub fn NameAndExpiry(
    what: &'static str,
    label: &'static str,
    placeholder: &'static str,
    name: RwSignal<String>,
    days: RwSignal<String>,
) -> impl IntoView {
    view! {
        <label>
            {label}
            <input type="text" name=format!("{what}-name") placeholder=placeholder prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
        </label>
        <label>
            "Expires after (days)"
            <input type="number" name=format!("{what}-expiry") min="1" max="3650" placeholder="never" prop:value=move || days.get() on:input=move |ev| days.set(event_target_value(&ev)) />
        </label>
    }
}

/// A form's primary button, in its actions row, disabled while `pending`.
#[component]
pub fn SaveButton(
    label: &'static str,
    #[prop(into)] pending: Signal<bool>,
    on_click: Callback<()>,
) -> impl IntoView {
    view! {
        <div class="actions">
            <button type="button" class="primary" disabled=move || pending.get() on:click=move |_| on_click.run(())>
                {label}
            </button>
        </div>
    }
}

/// When a key or token expires (or expired), or "never", as a table cell.
#[component]
pub fn ExpiryCell(expires: Option<String>, expired: bool) -> impl IntoView {
    let text = match expires {
        Some(at) if expired => format!("expired {at}"),
        Some(at) => at,
        None => "never".into(),
    };
    view! { <td class:expired=expired>{text}</td> }
}

/// A secret just made (an API key, an admin token), shown this once with a copy button.
#[component]
pub fn SecretOnce(what: &'static str, secret: String) -> impl IntoView {
    view! {
        <figure class="json new-key">
            <figcaption>
                <span>{format!("The new {what} — copy it now, it is not shown again")}</span>
                <CopyButton text=secret.clone() />
            </figcaption>
            <pre>{secret}</pre>
        </figure>
    }
}

/// A destructive action behind a second click: `ask` offers it, then `confirm` does it and
/// `keep` takes the offer back.
#[component]
pub fn Confirm(
    ask: &'static str,
    #[prop(into)] confirm: String,
    keep: &'static str,
    on_confirm: Callback<()>,
) -> impl IntoView {
    let asked = RwSignal::new(false);
    view! {
        <Show
            when=move || asked.get()
            fallback=move || view! { <button type="button" class="danger" on:click=move |_| asked.set(true)>{ask}</button> }
        >
            <button type="button" class="danger" on:click=move |_| on_confirm.run(())>{confirm.clone()}</button>
            <button type="button" on:click=move |_| asked.set(false)>{keep}</button>
        </Show>
    }
}

/// A button copying `text` to the clipboard, and saying whether it could.
#[component]
pub fn CopyButton(text: String) -> impl IntoView {
    let said = RwSignal::new("Copy");
    let text = StoredValue::new(text);
    let copy = move |_| {
        leptos::task::spawn_local(async move {
            let copied = copy_to_clipboard(&text.get_value()).await;
            said.set(if copied { "Copied" } else { "Copying failed: select the text and copy it" });
        });
    };
    view! { <button type="button" class="link copy" on:click=copy>{said}</button> }
}

/// Writes `text` to the clipboard; false where the browser has none for this page (it needs
/// a secure context) or refused.
#[cfg(feature = "hydrate")]
async fn copy_to_clipboard(text: &str) -> bool {
    let navigator = window().navigator();
    if !js_sys::Reflect::has(&navigator, &"clipboard".into()).unwrap_or(false) {
        return false;
    }
    wasm_bindgen_futures::JsFuture::from(navigator.clipboard().write_text(text)).await.is_ok()
}

/// On the server a click never happens.
#[cfg(not(feature = "hydrate"))]
async fn copy_to_clipboard(_: &str) -> bool {
    false
}

/// The error of the last run of an action, if it failed.
pub fn action_error<I, O>(action: ServerAction<I>) -> impl Fn() -> Option<String> + Copy
where
    I: leptos::server_fn::ServerFn<Output = O, Error = PanelError> + Clone + Send + Sync + 'static,
    O: Clone + Send + Sync + 'static,
{
    move || action.value().get().and_then(Result::err).map(|err| err.to_string())
}

/// How many runs of `action` have ended, refused ones too: a resource that reloads on this
/// shows what is stored again after each run, so a control that saves as it changes (a
/// checkbox) springs back when its change is refused.
pub fn settled<I, O>(action: ServerAction<I>) -> Memo<usize>
where
    I: leptos::server_fn::ServerFn<Output = O, Error = PanelError> + Clone + Send + Sync + 'static,
    O: Clone + Send + Sync + 'static,
{
    Memo::new(move |_| action.version().get())
}

/// How many runs of `action` have succeeded: a resource that reloads on this leaves the page
/// (and what the user typed into its forms) as it was when a run fails.
pub fn succeeded<I, O>(action: ServerAction<I>) -> Memo<usize>
where
    I: leptos::server_fn::ServerFn<Output = O, Error = PanelError> + Clone + Send + Sync + 'static,
    O: Clone + Send + Sync + 'static,
{
    Memo::new(move |before: Option<&usize>| {
        let version = action.version().get();
        let ok = action.value().with(|result| matches!(result, Some(Ok(_))));
        if ok { version } else { before.copied().unwrap_or(0) }
    })
}

/// Says `what` once the last run of `action` succeeded (a save the page shows no other way).
#[component]
pub fn Saved<I, O>(action: ServerAction<I>, what: &'static str) -> impl IntoView
where
    I: leptos::server_fn::ServerFn<Output = O, Error = PanelError> + Clone + Send + Sync + 'static,
    O: Clone + Send + Sync + 'static,
{
    let ok = move || !action.pending().get() && action.value().with(|v| matches!(v, Some(Ok(_))));
    view! {
        <Show when=ok>
            <p class="notice ok" role="status">{what}</p>
        </Show>
    }
}

/// A new password typed twice, as the form fields `password` and `again` (the server checks
/// that they match and the length).
#[component]
pub fn NewPassword(label: &'static str) -> impl IntoView {
    view! {
        <label>
            {label}
            <input type="password" name="password" autocomplete="new-password" minlength="12" required />
        </label>
        <label>
            "The same again"
            <input type="password" name="again" autocomplete="new-password" minlength="12" required />
        </label>
    }
}

/// Shows `error()` as an alert when there is one. It stands until what it is about is edited:
/// typing into the form (or section) it sits in puts it away; the next error shows again.
#[component]
pub fn ErrorNote(error: impl Fn() -> Option<String> + Send + Sync + Copy + 'static) -> impl IntoView {
    let edited = RwSignal::new(false);
    Effect::new(move |_| {
        error();
        edited.set(false);
    });
    let note = NodeRef::<leptos::html::P>::new();
    #[cfg(feature = "hydrate")]
    {
        let scope = |element: &web_sys::Element| element.closest("form, section").ok().flatten();
        let listener = window_event_listener(leptos::ev::input, move |ev| {
            let typed_in = event_target::<web_sys::Element>(&ev);
            let here = note.get_untracked().and_then(|note| scope(&note));
            if here.is_some() && here == scope(&typed_in) {
                edited.set(true);
            }
        });
        on_cleanup(move || listener.remove());
    }
    view! {
        <Show when=move || error().is_some() && !edited.get()>
            <p class="error" role="alert" node_ref=note>
                {error}
            </p>
        </Show>
    }
}

/// A loaded resource, or its error, or a loading note.
pub fn loaded<T: Clone + Send + Sync + 'static, V: IntoView + 'static>(
    resource: Resource<Result<T, PanelError>>,
    show: impl Fn(T) -> V + Send + Sync + Copy + 'static,
) -> impl IntoView {
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || {
                resource
                    .get()
                    .map(|result| match result {
                        Ok(value) => show(value).into_any(),
                        Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                    })
            }}
        </Transition>
    }
}

/// `n` things, the noun in the plural unless `n` is one: "1 call", "3 calls", "0 errors".
pub fn counted(n: i64, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// The roles as they are stored, and as the panel names them everywhere.
pub const ROLES: [(&str, &str); 3] =
    [("owner", "Owner"), ("tenant_admin", "Tenant administrator"), ("member", "Member")];

/// A stored role as the panel names it.
pub fn role_name(role: &str) -> &str {
    ROLES.iter().find(|(stored, _)| *stored == role).map_or(role, |(_, name)| name)
}

/// A choice of role, each option named as everywhere else.
pub fn role_options() -> impl IntoView {
    ROLES.map(|(value, name)| view! { <option value=value>{name}</option> }).collect_view()
}

/// A latency, or a dash when no call finished.
pub fn milliseconds(ms: Option<f64>) -> String {
    ms.map_or_else(|| "–".into(), |ms| format!("{ms:.1} ms"))
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn one_thing_is_singular_and_any_other_count_plural() {
        assert_eq!(
            [counted(1, "error"), counted(0, "error"), counted(2, "tool")],
            ["1 error", "0 errors", "2 tools"]
        );
    }
}
