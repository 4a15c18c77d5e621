//! The one error type every server function returns, shaped for the panel to show.

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum PanelError {
    /// No signed-in administrator (HTTP 401): the panel sends the browser to the login page.
    #[error("please sign in")]
    Unauthorized,
    /// The request was refused for a reason the user can act on; the text is safe to show.
    #[error("{0}")]
    Rejected(String),
    /// The server failed; the details are in its log under this reference, never here.
    #[error("something went wrong on the server (reference {0})")]
    Internal(String),
    /// The call itself failed on its way (network, encoding).
    #[error("the request failed: {0}")]
    Request(String),
}

impl FromServerFnError for PanelError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(err: ServerFnErrorErr) -> Self {
        // On the server these are requests that do not decode: the client's mistake, a 400.
        #[cfg(feature = "ssr")]
        if let ServerFnErrorErr::Args(_)
        | ServerFnErrorErr::MissingArg(_)
        | ServerFnErrorErr::Deserialization(_)
        | ServerFnErrorErr::UnsupportedRequestMethod(_) = &err
        {
            ssr::status(axum::http::StatusCode::BAD_REQUEST);
        }
        PanelError::Request(err.to_string())
    }
}

#[cfg(feature = "ssr")]
pub mod ssr {
    //! Constructors that also set the HTTP status of the server function's response.
    use super::PanelError;
    use axum::http::StatusCode;
    use leptos::prelude::use_context;
    use leptos_axum::ResponseOptions;

    pub(super) fn status(code: StatusCode) {
        if let Some(response) = use_context::<ResponseOptions>() {
            response.set_status(code);
        }
    }

    impl PanelError {
        pub fn unauthorized() -> Self {
            status(StatusCode::UNAUTHORIZED);
            PanelError::Unauthorized
        }

        pub fn rejected(code: StatusCode, message: impl ToString) -> Self {
            status(code);
            PanelError::Rejected(message.to_string())
        }

        /// Input the server cannot use (422), saying why.
        pub fn invalid(message: impl ToString) -> Self {
            Self::rejected(StatusCode::UNPROCESSABLE_ENTITY, message)
        }

        /// Logs `err` under a fresh reference and returns only the reference.
        pub fn internal(err: &dyn std::fmt::Display) -> Self {
            let reference = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
            tracing::error!(%reference, error = %err, "server function failed");
            status(StatusCode::INTERNAL_SERVER_ERROR);
            PanelError::Internal(reference)
        }
    }

    /// An engine error as the panel shows it: what the user can act on in words, Toolgate's
    /// own faults as a reference.
    impl From<engine::Error> for PanelError {
        fn from(err: engine::Error) -> Self {
            use engine::Error;
            let code = match &err {
                Error::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
                Error::Conflict(_) => StatusCode::CONFLICT,
                Error::NotFound(_) => StatusCode::NOT_FOUND,
                Error::Forbidden(_) => StatusCode::FORBIDDEN,
                Error::Limited(_) => StatusCode::TOO_MANY_REQUESTS,
                Error::Upstream(_) => StatusCode::BAD_GATEWAY,
                Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                Error::Internal(err) => return PanelError::internal(err),
            };
            PanelError::rejected(code, err)
        }
    }
}
