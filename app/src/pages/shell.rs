//! The frame around every signed-in page: navigation, the signed-in user, sign-out.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::{A, Outlet};

use super::ui::role_name;
use crate::auth::{Logout, Me, current_admin};
use crate::error::PanelError;

/// The signed-in administrator, shared by the pages inside the shell.
pub type MeResource = Resource<Result<Me, PanelError>>;

#[component]
pub fn Shell() -> impl IntoView {
    let me: MeResource = Resource::new(|| (), |_| current_admin());
    provide_context(me);
    let logout = ServerAction::<Logout>::new();
    // On a phone the navigation folds behind a button; choosing a page folds it again.
    let menu = RwSignal::new(false);

    // A session that ends while the page is open (expiry, sign-out elsewhere) leads to login.
    Effect::new(move |_| {
        if let Some(Err(PanelError::Unauthorized)) = me.get() {
            let navigate = leptos_router::hooks::use_navigate();
            navigate("/login", Default::default());
        }
    });

    view! {
        <div class="shell">
            <aside class="sidebar" class:open=move || menu.get()>
                <div class="sidebar-head">
                    <a class="brand" href="/">
                        "Toolgate"
                    </a>
                    <button
                        type="button"
                        class="menu-toggle"
                        aria-controls="navigation"
                        aria-expanded=move || menu.get().to_string()
                        on:click=move |_| menu.update(|open| *open = !*open)
                    >
                        "Menu"
                    </button>
                </div>
                <nav id="navigation" on:click=move |_| menu.set(false)>
                    <AdminsOnly>
                        <A href="/" exact=true>
                            "Dashboard"
                        </A>
                    </AdminsOnly>
                    <OwnersOnly>
                        <A href="/servers">"Servers"</A>
                        <A href="/tools">"Tools"</A>
                    </OwnersOnly>
                    <AdminsOnly>
                        <A href="/tenants">"Tenants"</A>
                    </AdminsOnly>
                    <OwnersOnly>
                        <A href="/groups">"Groups"</A>
                    </OwnersOnly>
                    <AdminsOnly>
                        <A href="/playground">"Playground"</A>
                        <A href="/audit">"Audit"</A>
                    </AdminsOnly>
                    <OwnersOnly>
                        <A href="/config">"Configuration"</A>
                        <A href="/tokens">"Tokens"</A>
                        <A href="/accounts">"Accounts"</A>
                        <A href="/sign-in">"Sign-in"</A>
                    </OwnersOnly>
                    <A href="/apps">"Connected apps"</A>
                    <A href="/connections">"Connected accounts"</A>
                </nav>
            </aside>
            <div class="workspace">
                <header class="topbar">
                    <Transition fallback=|| ()>
                        {move || {
                            me.get()
                                .and_then(Result::ok)
                                .map(|me| {
                                    view! {
                                        <span class="whoami">
                                            <A href="/account" attr:class="user" attr:title="Your account">
                                                {me.username}
                                            </A>
                                            <span class="badge">{role_name(&me.role).to_string()}</span>
                                        </span>
                                    }
                                })
                        }}
                    </Transition>
                    <ActionForm action=logout>
                        <button type="submit" class="link" disabled=move || logout.pending().get()>
                            "Sign out"
                        </button>
                    </ActionForm>
                </header>
                <main class="content">
                    <Outlet />
                </main>
            </div>
        </div>
    }
}

/// What only owners may use (a tenant administrator is not offered it).
#[component]
pub fn OwnersOnly(children: ChildrenFn) -> impl IntoView {
    view! { <OfferedTo who=|me| me.owner children /> }
}

/// What administrators use (a member is not offered it).
#[component]
pub fn AdminsOnly(children: ChildrenFn) -> impl IntoView {
    view! { <OfferedTo who=|me| !me.member children /> }
}

/// `children`, shown once the signed-in account is known and `who` says it is for them (to an
/// account with a one-time password, nothing is: it chooses its own first).
///
/// The Transition's own view reads the account: a read the Transition sees is one the server
/// waits for before rendering it. Behind a `<Show when=…>` the read came only as the page was
/// written, so a slow answer rendered the links as not offered while the browser, which has
/// the answer, hydrated them as offered: the page failed to hydrate.
#[component]
fn OfferedTo(who: fn(&Me) -> bool, children: ChildrenFn) -> impl IntoView {
    let me = expect_context::<MeResource>();
    view! {
        <Transition fallback=|| ()>
            {move || {
                let offered = me.get().and_then(Result::ok).is_some_and(|me| !me.password_temporary && who(&me));
                offered.then(|| children())
            }}
        </Transition>
    }
}

/// What a tenant administrator sees instead of an owner's page (the address's `page`), sent
/// here by the server: what the page is for, and what is theirs instead.
#[component]
pub fn NotAllowed() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(axum::http::StatusCode::FORBIDDEN);
    }
    let query = leptos_router::hooks::use_query_map();
    let page = move || query.read().get("page").unwrap_or_else(|| "That page".to_string());
    view! {
        <Title text="Not allowed" />
        <h1>"This page is for owners"</h1>
        <p>
            <code>{page}</code>
            " is where owners manage what every tenant shares: servers, tools, groups, the \
             configuration, admin tokens, accounts and sign-in. As a tenant administrator you \
             manage your tenants: their tools, keys, members and limits, the playground and \
             their audit log."
        </p>
        <p>
            <a href="/tenants">"Your tenants"</a>
        </p>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(axum::http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found" />
        <main class="content">
            <h1>"Page not found"</h1>
            <p>
                <a href="/">"Back to the dashboard"</a>
            </p>
        </main>
    }
}
