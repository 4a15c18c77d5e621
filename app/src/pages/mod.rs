//! The panel's pages, one module each.

mod audit;
mod config;
mod dashboard;
mod groups;
mod login;
mod playground;
mod servers;
mod shell;
mod tenants;
mod tokens;
mod tools;
pub(crate) mod ui;

pub use audit::AuditPage;
pub use config::ConfigPage;
pub use dashboard::Dashboard;
pub use groups::GroupsPage;
pub use login::LoginPage;
pub use playground::PlaygroundPage;
pub use servers::{ServerPage, ServersPage};
pub use shell::{NotFound, Shell};
pub use tenants::{TenantPage, TenantsPage};
pub use tokens::TokensPage;
pub use tools::{ToolPage, ToolsPage};
