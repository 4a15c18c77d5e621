//! Sign-in in the admin API: how people sign in (owners), the apps owners register, a
//! tenant's members and the apps people connected to it.

use axum::extract::{Path, State};
use axum::routing::{delete, get, post};
use axum::{Extension, Router};
use engine::service::members::{self, Credential};
use engine::service::{Admin, Services, apps, sign_in};
use engine::sso::SignInConfig;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::resources::{created, no_content, ok};
use super::{Answer, not_found};
use crate::gateway::Body;

pub(super) fn router() -> Router<Services> {
    Router::new()
        .route("/api/admin/v1/sign_in", get(settings).put(update_settings))
        .route("/api/admin/v1/oauth_clients", get(clients).post(register_client))
        .route("/api/admin/v1/oauth_clients/{id}", delete(delete_client))
        .route("/api/admin/v1/tenants/{slug}/members", get(list_members).post(add_member))
        .route("/api/admin/v1/tenants/{slug}/members/{username}", delete(remove_member).patch(edit_member))
        .route("/api/admin/v1/tenants/{slug}/members/{username}/invitation", post(invite_member))
        .route("/api/admin/v1/tenants/{slug}/apps", get(tenant_apps))
        .route("/api/admin/v1/tenants/{slug}/apps/{id}", delete(revoke_app))
}

async fn settings(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    ok(sign_in::config(&state, &admin.owner()?).await?)
}

async fn update_settings(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Body(config): Body<SignInConfig>,
) -> Answer {
    ok(sign_in::update(&state, &admin.owner()?, &config).await?)
}

async fn clients(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    ok(apps::clients(&state, &admin.owner()?).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewClient {
    name: String,
    redirect_uris: Vec<String>,
    /// It gets a client secret (else a public client, PKCE only).
    #[serde(default)]
    confidential: bool,
}

async fn register_client(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Body(client): Body<NewClient>,
) -> Answer {
    let owner = admin.owner()?;
    let (id, secret) =
        apps::register_client(&state, &owner, &client.name, client.redirect_uris, client.confidential)
            .await?;
    created(json!({"client_id": id, "client_secret": secret}))
}

async fn delete_client(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(id): Path<String>,
) -> Answer {
    apps::delete_client(&state, &admin.owner()?, &id).await?;
    no_content()
}

async fn list_members(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
) -> Answer {
    ok(members::list(&state, &admin.tenant(&slug)?).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMember {
    username: String,
    /// Left out: an invitation link is made instead (its token is in the answer).
    password: Option<String>,
}

async fn add_member(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
    Body(member): Body<NewMember>,
) -> Answer {
    let credential = match member.password {
        Some(password) => Credential::Password(password),
        None => Credential::Invitation,
    };
    created(members::add(&state, &admin.tenant(&slug)?, &member.username, credential).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberEdit {
    disabled: bool,
}

async fn edit_member(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((slug, username)): Path<(String, String)>,
    Body(edit): Body<MemberEdit>,
) -> Answer {
    members::set_disabled(&state, &admin.tenant(&slug)?, &username, edit.disabled).await?;
    no_content()
}

async fn invite_member(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((slug, username)): Path<(String, String)>,
) -> Answer {
    let invitation = members::invite(&state, &admin.tenant(&slug)?, &username).await?;
    created(json!({"invitation": invitation}))
}

async fn remove_member(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((slug, username)): Path<(String, String)>,
) -> Answer {
    members::remove(&state, &admin.tenant(&slug)?, &username).await?;
    no_content()
}

async fn tenant_apps(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
) -> Answer {
    ok(apps::of_tenant(&state, &admin.tenant(&slug)?).await?)
}

async fn revoke_app(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((slug, id)): Path<(String, String)>,
) -> Answer {
    let id: Uuid = id.parse().map_err(|_| not_found("no such app"))?;
    apps::revoke_of_tenant(&state, &admin.tenant(&slug)?, id).await?;
    no_content()
}
