//! The panel's pages, one module each.

mod account;
mod apps;
mod audit;
mod authorize;
mod config;
mod connections;
mod dashboard;
mod groups;
mod invite;
mod login;
mod playground;
mod servers;
mod shell;
mod sign_in;
mod tenants;
mod tokens;
mod tools;
pub(crate) mod ui;

pub use account::AccountPage;
pub use apps::AppsPage;
pub use audit::AuditPage;
pub use authorize::AuthorizePage;
pub use config::ConfigPage;
pub use connections::ConnectionsPage;
pub use dashboard::Dashboard;
pub use groups::GroupsPage;
pub use invite::InvitePage;
pub use login::LoginPage;
pub use playground::PlaygroundPage;
pub use servers::{ServerPage, ServersPage};
pub use shell::{NotFound, Shell};
pub use sign_in::SignInPage;
pub use tenants::{TenantPage, TenantsPage};
pub use tokens::TokensPage;
pub use tools::{ToolPage, ToolsPage};
