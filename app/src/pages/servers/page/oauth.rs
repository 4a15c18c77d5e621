//! The OAuth card of a server's page: whose token its calls use, who authorized it and each
//! token's state, and the ways to authorize.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::pages::ui::{Confirm, StatusBadge, grid};

/// Whose token an OAuth server's calls use, who authorized it, and what this owner may
/// authorize.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthView {
    /// How the mode reads: "one account for every tenant"...
    pub mode: String,
    pub authorizations: Vec<AuthorizationRow>,
    /// `(label, link)`: each authorization this owner may give, in the browser.
    pub authorize: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationRow {
    pub id: String,
    /// "every tenant", "tenant acme", "ann".
    pub whose: String,
    pub status: String,
    pub reason: Option<String>,
    /// The scopes the next authorization asks for, when the server wanted more.
    pub wanted_scopes: Option<String>,
    pub expires: String,
    pub by: String,
    pub at: String,
}

/// An OAuth server's card: who authorized it, each token's state, and the ways to authorize.
pub(super) fn oauth_card(oauth: OAuthView, forget: Callback<String>) -> AnyView {
    view! {
        <section class="card oauth">
            <h2>"OAuth"</h2>
            <p>"Calls use " <strong>{oauth.mode}</strong> "."</p>
            {grid(oauth.authorizations, "Nobody has authorized it yet.", &["Whose", "State", "Token expires", "Authorized by", "When", ""], move |a| {
                let id = StoredValue::new(a.id.clone());
                view! {
                    <tr>
                        <td>{a.whose.clone()}</td>
                        <td>
                            <StatusBadge status=a.status />
                            {a.reason.map(|reason| view! { <span class="small muted">" " {reason}</span> })}
                            {a.wanted_scopes.map(|scopes| view! { <span class="small wanted-scopes">" Authorizing asks for " <code>{scopes}</code></span> })}
                        </td>
                        <td>{a.expires}</td>
                        <td>{a.by}</td>
                        <td class="small">{a.at}</td>
                        <td>
                            <Confirm
                                ask="Forget…"
                                confirm=format!("Forget {}'s authorization", a.whose)
                                keep="Keep it"
                                on_confirm=Callback::new(move |()| forget.run(id.get_value()))
                            />
                        </td>
                    </tr>
                }
                .into_any()
            })}
            <div class="actions">
                {oauth.authorize.into_iter().map(|(label, link)| view! { <a class="button" href=link rel="external">{label}</a> }).collect_view()}
            </div>
            <p class="muted small">"Authorizing opens the server's sign-in; you come back here when it is done."</p>
        </section>
    }
    .into_any()
}
