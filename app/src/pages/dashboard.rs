//! The landing page after sign-in.

use leptos::prelude::*;
use leptos_meta::Title;

use super::shell::MeResource;

#[component]
pub fn Dashboard() -> impl IntoView {
    let me = expect_context::<MeResource>();
    view! {
        <Title text="Dashboard" />
        <h1>"Dashboard"</h1>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || {
                me.get()
                    .map(|me| match me {
                        Ok(me) => {
                            view! {
                                <p class="signed-in">
                                    "Signed in as " <strong>{me.username}</strong> " (" {me.role}
                                    ")."
                                </p>
                            }
                                .into_any()
                        }
                        Err(err) => view! { <p class="error">{err.to_string()}</p> }.into_any(),
                    })
            }}
        </Transition>
    }
}
