//! The signed-in account: who it is, and its password. An account that signed in with a
//! one-time password is sent here first and may do nothing else until it chose its own.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::shell::MeResource;
use super::ui::{ErrorNote, NewPassword, action_error, loaded, role_name, succeeded};
use crate::auth::ChangePassword;

#[component]
pub fn AccountPage() -> impl IntoView {
    let me = expect_context::<MeResource>();
    let change = ServerAction::<ChangePassword>::new();
    let changed = succeeded(change);
    // The frame's idea of the account (a one-time password) is out of date once it changed.
    Effect::new(move |_| {
        if changed.get() > 0 {
            me.refetch();
        }
    });
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    view! {
        <Title text="Your account" />
        <h1>"Your account"</h1>
        {loaded(me, move |me| {
            let username = me.username.clone();
            let form = me.has_password.then(|| {
                view! {
                    <section class="card">
                        <h2>{if me.password_temporary { "Choose your password" } else { "Change your password" }}</h2>
                        {me.password_temporary.then(|| view! {
                            <p class="notice warning" role="status">
                                "You signed in with a one-time password. Choose your own to go on: the one-time password then stops working."
                            </p>
                        })}
                        <ActionForm action=change>
                            <input type="hidden" name="next" value=next />
                            <input type="text" name="username" autocomplete="username" value=username hidden />
                            <label>
                                {if me.password_temporary { "One-time password" } else { "Current password" }}
                                <input type="password" name="current" autocomplete="current-password" required />
                            </label>
                            <NewPassword label="New password (at least 12 characters)" />
                            <button type="submit" class="primary" disabled=move || change.pending().get()>
                                "Save the new password"
                            </button>
                        </ActionForm>
                        <ErrorNote error=action_error(change) />
                    </section>
                }
            });
            view! {
                <p>"Signed in as " <strong>{me.username.clone()}</strong> {format!(" ({})", role_name(&me.role))} "."</p>
                {(!me.has_password).then(|| view! {
                    <p class="muted">"You sign in through single sign-on: your identity provider keeps your password."</p>
                })}
                {form}
            }
        })}
    }
}
