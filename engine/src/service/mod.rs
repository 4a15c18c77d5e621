//! The application layer: what the panel, the admin API and the gateway ask of Toolgate,
//! written once. Each operation takes what it needs (the pool, the live catalog, the upstream
//! pool) and returns a typed read model that every surface shows in its own way.

pub mod tenants;
