//! Connected accounts: the person's own accounts at MCP servers that act as each person
//! (OAuth, per person): connect one, see until when its token runs, disconnect it.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::ui::{Confirm, ErrorNote, StatusBadge, action_error, grid, loaded, succeeded};
use crate::error::PanelError;

/// A per-person server, and the person's account there if connected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountRow {
    pub server: String,
    /// Where connecting (again) starts.
    pub connect: String,
    /// The authorization's id, state, expiry and date, once connected.
    pub connected: Option<(String, String, String, String)>,
}

#[server]
pub async fn my_accounts() -> Result<Vec<AccountRow>, PanelError> {
    use crate::auth::ssr::require_admin;
    use crate::server::{minute, state};
    let account = require_admin().await?;
    let rows = engine::service::apps::connectable(&state(), &account).await?;
    Ok(rows
        .into_iter()
        .map(|row| AccountRow {
            connect: engine::service::upstreams::connect_link(None, &row.server),
            connected: row.authorization.map(|a| {
                let expires = a.expires_at.map_or_else(|| "not said".into(), minute);
                (a.id.to_string(), a.status.label().into(), expires, minute(a.authorized_at))
            }),
            server: row.server,
        })
        .collect())
}

#[server]
pub async fn disconnect_account(id: String) -> Result<(), PanelError> {
    use crate::auth::ssr::require_admin;
    use crate::server::state;
    let account = require_admin().await?;
    let id = id.parse().map_err(|_| PanelError::invalid("which account?"))?;
    Ok(engine::service::apps::disconnect(&state(), &account, id).await?)
}

#[component]
pub fn ConnectionsPage() -> impl IntoView {
    let disconnect = ServerAction::<DisconnectAccount>::new();
    let disconnected = succeeded(disconnect);
    let accounts = Resource::new(move || disconnected.get(), |_| my_accounts());
    view! {
        <Title text="Connected accounts" />
        <h1>"Connected accounts"</h1>
        <p class="muted">
            "MCP servers that act as you: your agents' calls to them use your own account there. Connect it once; \
             disconnecting stops those calls until you connect again."
        </p>
        {loaded(accounts, move |rows| {
            view! {
                <section class="card">
                    {grid(rows, "No server acts as each person here.", &["Server", "State", "Token expires", "Connected", ""], move |row| {
                        let connect = row.connect.clone();
                        match row.connected {
                            Some((id, status, expires, at)) => {
                                let id = StoredValue::new(id);
                                let server = row.server.clone();
                                view! {
                                    <tr>
                                        <td>{row.server}</td>
                                        <td><StatusBadge status=status /></td>
                                        <td>{expires}</td>
                                        <td class="small">{at}</td>
                                        <td class="actions">
                                            <a class="button" href=connect rel="external">"Connect again"</a>
                                            <Confirm
                                                ask="Disconnect…"
                                                confirm=format!("Disconnect {server}")
                                                keep="Keep it"
                                                on_confirm=Callback::new(move |()| {
                                                    disconnect.dispatch(DisconnectAccount { id: id.get_value() });
                                                })
                                            />
                                        </td>
                                    </tr>
                                }
                                .into_any()
                            }
                            None => view! {
                                <tr>
                                    <td>{row.server}</td>
                                    <td><StatusBadge status="not connected" /></td>
                                    <td></td>
                                    <td></td>
                                    <td><a class="button primary" href=connect rel="external">"Connect"</a></td>
                                </tr>
                            }
                            .into_any(),
                        }
                    })}
                    <ErrorNote error=action_error(disconnect) />
                </section>
            }
        })}
    }
}
