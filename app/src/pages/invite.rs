//! An invitation link: the person a tenant's administrator invited chooses their password and
//! is signed in.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, NewPassword, action_error, loaded};

/// The account the invitation is for.
#[server]
pub async fn invitation(token: String) -> Result<String, PanelError> {
    use crate::server::state;
    engine::service::members::invitation(&state(), &token).await?.ok_or_else(|| {
        PanelError::invalid("this invitation link has expired or was used already; ask for a new one")
    })
}

/// Sets the password (typed twice) and signs the person in.
#[server]
pub async fn accept_invitation(token: String, password: String, again: String) -> Result<(), PanelError> {
    use crate::auth::ssr::{landing, open_session, session};
    use crate::server::state;
    if password != again {
        return Err(PanelError::invalid("the two passwords differ"));
    }
    let account = engine::service::members::accept(&state(), &token, password).await?;
    open_session(&session().await?, &account).await.map_err(|e| PanelError::internal(&e))?;
    leptos_axum::redirect(&landing(&account, None));
    Ok(())
}

#[component]
pub fn InvitePage() -> impl IntoView {
    let params = use_params_map();
    let token = move || params.read().get("token").unwrap_or_default();
    let invited = Resource::new(token, invitation);
    let accept = ServerAction::<AcceptInvitation>::new();
    view! {
        <Title text="Choose your password" />
        <main class="login">
            <div class="card login-card">
                <h1 class="brand">"Toolgate"</h1>
                {loaded(invited, move |username| view! {
                    <ActionForm action=accept>
                        <p>"Welcome, " <strong>{username}</strong> ". Choose the password you will sign in with."</p>
                        <input type="hidden" name="token" value=token() />
                        <NewPassword label="Password (at least 12 characters)" />
                        <button type="submit" class="primary" disabled=move || accept.pending().get()>"Set password and sign in"</button>
                    </ActionForm>
                })}
                <ErrorNote error=action_error(accept) />
            </div>
        </main>
    }
}
