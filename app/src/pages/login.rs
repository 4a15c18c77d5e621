//! The sign-in page: reachable without a session. A password, or the OpenID provider's button
//! when single sign-on is set up (with local passwords off, the form is for the break-glass
//! owner only). After sign-in the person lands where they were going (`?next=`).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::auth::{Login, sign_in_choices};

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    let sso_error = move || query.read().get("sso_error").map(|code| sso_failure(&code).to_string());
    let error =
        move || login.value().get().and_then(Result::err).map(|err| err.to_string()).or_else(sso_error);
    let choices = Resource::new(|| (), |_| sign_in_choices());
    let password_form = move |break_glass: bool| {
        view! {
            <ActionForm action=login>
                {break_glass.then(|| view! { <p class="muted">"Passwords are off: only the break-glass owner signs in here."</p> })}
                <input type="hidden" name="next" value=next />
                <label>
                    "Username"
                    <input type="text" name="username" autocomplete="username" required autofocus=!break_glass />
                </label>
                <label>
                    "Password"
                    <input type="password" name="password" autocomplete="current-password" required />
                </label>
                <button type="submit" class="primary" disabled=move || login.pending().get()>
                    {move || if login.pending().get() { "Signing in…" } else { "Sign in" }}
                </button>
            </ActionForm>
        }
    };
    view! {
        <Title text="Sign in" />
        <main class="login">
            <div class="card login-card">
                <h1 class="brand">"Toolgate"</h1>
                <p class="muted">"Sign in to Toolgate"</p>
                <Transition fallback=|| ()>
                    {move || choices.get().map(|choices| {
                        let (sso, local) = match choices {
                            Ok(choices) => (choices.sso, choices.local_passwords),
                            Err(_) => (None, true),
                        };
                        let start = move || {
                            let query = form_urlencoded::Serializer::new(String::new()).append_pair("next", &next()).finish();
                            format!("/sso/start?{query}")
                        };
                        view! {
                            {sso.clone().map(|name| view! { <a class="button primary sso" href=start rel="external">{format!("Sign in with {name}")}</a> })}
                            {if local || sso.is_none() {
                                password_form(false).into_any()
                            } else {
                                view! { <details><summary>"Break-glass sign-in"</summary>{password_form(true)}</details> }.into_any()
                            }}
                        }
                    })}
                </Transition>
                <Show when=move || error().is_some()>
                    <p class="error" role="alert">
                        {error}
                    </p>
                </Show>
            </div>
        </main>
    }
}

/// What the sign-in page says when single sign-on failed, by the code it came back with (a link
/// cannot put words of its own on this page).
fn sso_failure(code: &str) -> &'static str {
    match code {
        "no_access" => {
            "Your account was not let in: no sign-in rule admits it. Ask an owner of this Toolgate."
        }
        "disabled" => "This account is disabled; ask an administrator of your tenant.",
        "name_taken" => "A local account has your name already: sign in with its password, or ask an owner.",
        "provider" => {
            "The sign-in provider could not be reached or answered wrongly; try again, or tell an owner."
        }
        "not_configured" => "Single sign-on is not set up.",
        "invalid" => "The sign-in did not complete; start again.",
        _ => "Signing in failed on the server; try again shortly.",
    }
}
