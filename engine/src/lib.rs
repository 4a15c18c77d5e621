//! Toolgate's execution backend, with no UI: the database and its embedded default, and the
//! administrators who configure everything else.
//!
//! The dependency direction is one-way: the binary and the panel call into `engine`; `engine`
//! knows nothing of Leptos or HTTP.

pub mod admin;
pub mod db;
