//! Toolgate's execution backend, with no UI. The pipeline, in the order a tool travels it:
//!
//! - [`store`]: the configuration in PostgreSQL; every write is audited and notifies;
//! - [`catalog`]: who sees which tool under which name, as a live, immutable snapshot;
//! - [`schema`]: what the LLM receives as a tool's schema, per provider;
//! - [`exec`]: how a call runs, on [`tool`]s such as the [`builtin`] ones;
//! - [`upstream`]: the MCP servers whose tools Toolgate serves;
//! - [`service`]: what the panel, the admin API and the gateway ask of all this, written once;
//!
//! plus [`db`] (connecting, the embedded default), [`admin`] (accounts), [`oauth`] (Toolgate as
//! the authorization server of its endpoints), [`sso`] (signing in through an OpenID provider), [`secret`]
//! (encryption at rest), [`model`] (validated names) and the one [`Error`] every operation
//! returns. SQL lives in [`store`] only. The binary and the panel call into
//! `engine`; `engine` knows nothing of Leptos or HTTP.

pub mod admin;
pub mod builtin;
pub mod catalog;
pub mod config;
pub mod db;
pub mod diff;
mod error;
pub mod exec;
pub mod model;
pub mod oauth;
pub mod schema;
pub mod secret;
pub mod service;
pub mod sso;
pub mod store;
pub mod telemetry;
pub mod tool;
pub mod upstream;

pub use error::{Error, Missing, Result};

/// How Toolgate names itself to MCP peers: to its clients as their server, to upstream servers
/// as their client.
pub fn implementation() -> rmcp::model::Implementation {
    rmcp::model::Implementation::new("toolgate", env!("CARGO_PKG_VERSION")).with_title("Toolgate")
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
