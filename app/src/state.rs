//! What every request handler and server function can reach on the server.

use std::ops::Deref;
use std::sync::Arc;

use axum::extract::FromRef;
use engine::service::Services;
use leptos::prelude::LeptosOptions;

/// The panel's state: Leptos' options and the services every surface shares (reached as
/// `state.pool`, `state.catalog`, ... through `Deref`).
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub services: Services,
    /// `TOOLGATE_PUBLIC_URL`: the base of the OAuth issuer and of every link the panel shows.
    pub public_url: Option<Arc<str>>,
    /// What tools ask the people running them in the playground, waiting for their answers.
    pub questions: crate::pages::playground::Questions,
}

impl Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}
