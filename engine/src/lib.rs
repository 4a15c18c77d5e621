//! Toolgate's execution backend, with no UI. Its public face is [`service`], what the panel,
//! the admin API and the gateway ask of it (each operation taking the caller's authority), and
//! [`model`], the values they share. Beneath, in floors that import only downwards, in the
//! order a tool travels them:
//!
//! - `model`: names, roles, actors, limits, ceilings, exposed names; nothing of the engine;
//! - `store`: the configuration in PostgreSQL, on `model` only; every write is audited and
//!   notifies; SQL lives here only;
//! - `catalog`: who sees which tool under which name, as a live, immutable snapshot, with
//!   [`schema`], what the LLM receives as a tool's schema per provider;
//! - `exec`: how a call runs, on [`tool`]s such as the [`builtin`] ones; `upstream`: the MCP
//!   servers whose tools Toolgate serves;
//! - `service`, with [`config`] (the configuration document), [`admin`] (accounts), [`oauth`]
//!   (Toolgate as the authorization server of its endpoints) and [`sso`] (signing in through
//!   an OpenID provider).
//!
//! plus `db` (connecting, the embedded default), [`secret`] (encryption at rest) and the one
//! [`Error`] every operation returns. The floors are public only with the `test-support`
//! feature, for the workspace's tests and benchmarks. The binary and the panel call
//! into `engine`; `engine` knows nothing of Leptos or HTTP.

pub mod admin;
pub mod builtin;
pub mod config;
pub mod diff;
mod error;
pub mod model;
pub mod oauth;
pub mod schema;
pub mod secret;
pub mod service;
pub mod sso;
pub mod telemetry;
pub mod tool;

// The floors under `service`: reached through what it re-exports. The workspace's integration
// tests and benchmarks set up and measure them directly (`test-support`).
#[cfg(feature = "test-support")]
pub mod catalog;
#[cfg(not(feature = "test-support"))]
pub(crate) mod catalog;
#[cfg(feature = "test-support")]
pub mod db;
#[cfg(not(feature = "test-support"))]
pub(crate) mod db;
#[cfg(feature = "test-support")]
pub mod exec;
#[cfg(not(feature = "test-support"))]
pub(crate) mod exec;
#[cfg(feature = "test-support")]
pub mod store;
#[cfg(not(feature = "test-support"))]
pub(crate) mod store;
#[cfg(feature = "test-support")]
pub mod upstream;
#[cfg(not(feature = "test-support"))]
pub(crate) mod upstream;

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
