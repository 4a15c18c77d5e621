//! Toolgate's admin panel: a Leptos app rendered on the server and hydrated in the browser.
//!
//! Server functions are thin shims into `engine`; they and everything server-only sit behind
//! the `ssr` feature, so the wasm client never pulls `engine`, sqlx or tokio.
// The hydration futures of the larger pages nest deeper than rustc's default allows.
#![recursion_limit = "256"]

pub mod auth;
pub mod error;
mod pages;
#[cfg(feature = "ssr")]
mod server;
#[cfg(feature = "ssr")]
pub mod state;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::path;

use pages::{
    AccountPage, AccountsPage, AppsPage, AuditPage, AuthorizePage, ConfigPage, ConnectionsPage, Dashboard,
    GroupsPage, InvitePage, LoginPage, NotAllowed, NotFound, PlaygroundPage, ServerPage, ServersPage, Shell,
    SignInPage, TenantPage, TenantsPage, TokensPage, ToolPage, ToolsPage,
};

/// The pages a member may see (everything else is for administrators): a page and what is
/// under it, or with a trailing `/` what starts so.
const MEMBER_PAGES: &[&str] = &["/account", "/apps", "/connections", "/authorize/", "/oauth/upstream/start"];

/// The pages only owners may open (a tenant administrator is shown [`NOT_ALLOWED_PAGE`]), and
/// what is under them; of the catalog, only the list (a tool's page shows a tenant
/// administrator the tool as her tenants see it).
const OWNER_PAGES: &[&str] = &["/servers", "/groups", "/config", "/tokens", "/accounts", "/sign-in"];
const OWNERS_CATALOG: &str = "/tools";

/// Where a tenant administrator who asked for an owner's page lands (`?page=` says which).
pub const NOT_ALLOWED_PAGE: &str = "/not-allowed";

/// Whether `path` (of this site, perhaps with a query) is a page `page` names, as
/// [`MEMBER_PAGES`] does: `/account` is not `/accounts`.
pub fn is_page(path: &str, page: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    match page.strip_suffix('/') {
        Some(_) => path.starts_with(page),
        None => path == page || path.strip_prefix(page).is_some_and(|rest| rest.starts_with('/')),
    }
}

/// Whether a member may open `path`.
pub fn member_page(path: &str) -> bool {
    MEMBER_PAGES.iter().any(|page| is_page(path, page))
}

/// Whether only owners may open `path`.
pub fn owner_page(path: &str) -> bool {
    let page = path.split(['?', '#']).next().unwrap_or_default();
    page == OWNERS_CATALOG || OWNER_PAGES.iter().any(|owners| is_page(path, owners))
}

/// The HTML document around the app, rendered on the server. Its Content-Security-Policy
/// admits only this response's nonce for inline scripts (the hydration bootstrap) and the
/// site's own files for everything else.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let (Some(nonce), Some(response)) =
        (leptos::nonce::use_nonce(), use_context::<leptos_axum::ResponseOptions>())
    {
        let policy = content_security_policy(&nonce);
        response.insert_header(
            axum::http::header::CONTENT_SECURITY_POLICY,
            axum::http::HeaderValue::from_str(&policy).expect("a nonce is URL-safe base64"),
        );
    }
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The panel's policy: scripts from this site or carrying `nonce`, WebAssembly compiled from
/// them, styles, images (tool output arrives as `data:` URLs) and requests to this site only;
/// never framed.
#[cfg(feature = "ssr")]
fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'"
    )
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="toolgate" href="/pkg/toolgate.css" />
        <Title formatter=|page: String| format!("{page} · Toolgate") />
        <Router>
            <Routes fallback=NotFound>
                <Route path=path!("/login") view=LoginPage />
                <Route path=path!("/authorize/:id") view=AuthorizePage />
                <Route path=path!("/invite/:token") view=InvitePage />
                <ParentRoute path=path!("") view=Shell>
                    <Route path=path!("") view=Dashboard />
                    <Route path=path!("servers") view=ServersPage />
                    <Route path=path!("servers/:name") view=ServerPage />
                    <Route path=path!("tools") view=ToolsPage />
                    <Route path=path!("tools/:id") view=ToolPage />
                    <Route path=path!("tenants") view=TenantsPage />
                    <Route path=path!("tenants/:slug") view=TenantPage />
                    <Route path=path!("groups") view=GroupsPage />
                    <Route path=path!("playground") view=PlaygroundPage />
                    <Route path=path!("audit") view=AuditPage />
                    <Route path=path!("config") view=ConfigPage />
                    <Route path=path!("tokens") view=TokensPage />
                    <Route path=path!("sign-in") view=SignInPage />
                    <Route path=path!("apps") view=AppsPage />
                    <Route path=path!("connections") view=ConnectionsPage />
                    <Route path=path!("account") view=AccountPage />
                    <Route path=path!("accounts") view=AccountsPage />
                    <Route path=path!("not-allowed") view=NotAllowed />
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// The browser entry point: attaches the wasm client to the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
    // Lets end-to-end tests (and curious admins) see that the client took over the page.
    if let Some(root) = document().document_element() {
        let _ = root.set_attribute("data-hydrated", "true");
    }
}

#[cfg(test)]
mod tests {
    use super::{is_page, member_page, owner_page};

    #[test]
    fn a_page_is_itself_and_what_is_under_it_never_a_longer_name() {
        assert!(is_page("/account", "/account") && is_page("/account?next=%2F", "/account"));
        assert!(!is_page("/accounts", "/account"), "the owners' accounts page is not one's own");
        assert!(member_page("/apps/1") && member_page("/authorize/abc") && member_page("/account"));
        assert!(!member_page("/accounts") && !member_page("/appsx") && !member_page("/authorize"));
        assert!(owner_page("/servers/echo") && owner_page("/tools?q=x") && owner_page("/accounts"));
        assert!(!owner_page("/tenants/acme") && !owner_page("/audit") && !owner_page("/account"));
        assert!(!owner_page("/tools/0b7c4d1e-aaaa-4bbb-8ccc-123456789abc?tenant=acme"), "a tool's page");
    }
}
