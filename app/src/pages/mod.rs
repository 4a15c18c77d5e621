//! The panel's pages, one module each.

mod dashboard;
mod login;
mod shell;

pub use dashboard::Dashboard;
pub use login::LoginPage;
pub use shell::{NotFound, Section, Shell, planned};
