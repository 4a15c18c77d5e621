//! The sign-in page: the only page reachable without a session.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::auth::Login;

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let error = move || login.value().get().and_then(Result::err).map(|err| err.to_string());
    view! {
        <Title text="Sign in" />
        <main class="login">
            <ActionForm action=login attr:class="card login-card">
                <h1 class="brand">"Toolgate"</h1>
                <p class="muted">"Sign in to the admin panel"</p>
                <label>
                    "Username"
                    <input
                        type="text"
                        name="username"
                        autocomplete="username"
                        required
                        autofocus
                    />
                </label>
                <label>
                    "Password"
                    <input type="password" name="password" autocomplete="current-password" required />
                </label>
                <Show when=move || error().is_some()>
                    <p class="error" role="alert">
                        {error}
                    </p>
                </Show>
                <button type="submit" class="primary" disabled=move || login.pending().get()>
                    {move || if login.pending().get() { "Signing in…" } else { "Sign in" }}
                </button>
            </ActionForm>
        </main>
    }
}
