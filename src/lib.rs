//! The `toolgate` binary's library: command line, start-up, and the HTTP surfaces around the
//! panel (`app`) and the backend (`engine`).

mod admin_api;
pub mod cli;
mod gateway;
mod memory;
mod oauth;
mod operations;
pub mod settings;
pub mod startup;
mod telemetry;
mod web;
