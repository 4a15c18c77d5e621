//! The tenant's prompts, resources and resource templates as MCP lists them (each list the
//! tenant's own, as `tools/list` is: private, and never fresh for a fixed time); requests about
//! one go through the executor ([`engine::service::calls::Executor::get_prompt`] and the like), and the
//! updates of resources a client subscribed to are passed on.

use std::sync::Arc;

use engine::service::calls::ResourceUpdated;
use engine::service::catalog::CatalogItem;
use engine::service::catalog::TenantTools;
use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PromptListChangedNotification, ResourceListChangedNotification, ResourceUpdatedNotification,
    ResourceUpdatedNotificationParam, ServerNotification, SubscriptionFilter, ToolListChangedNotification,
};
use serde::de::DeserializeOwned;
use tokio::sync::broadcast::{self, error::RecvError};

use super::super::TenantAccess;
use super::calls::{Changed, Shared, error_data};

/// The definitions of `items` as rmcp's `T`.
fn definitions<T: DeserializeOwned>(items: &[Arc<CatalogItem>]) -> Vec<T> {
    items.iter().filter_map(|item| serde_json::from_value((*item.definition).clone()).ok()).collect()
}

pub(super) fn prompts(view: &TenantTools) -> ListPromptsResult {
    ListPromptsResult::with_all_items(definitions(view.items.prompts()))
        .with_ttl_ms(0)
        .with_cache_scope(CacheScope::Private)
}

pub(super) fn resources(view: &TenantTools) -> ListResourcesResult {
    ListResourcesResult::with_all_items(definitions(view.items.resources()))
        .with_ttl_ms(0)
        .with_cache_scope(CacheScope::Private)
}

pub(super) fn templates(view: &TenantTools) -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(definitions(view.items.templates()))
        .with_ttl_ms(0)
        .with_cache_scope(CacheScope::Private)
}

/// A failed read of `uri` as MCP's error: a URI no visible server offers is "resource not
/// found", naming the URI in its data (SEP-2164).
pub(super) fn read_error(uri: &str, err: engine::Error) -> ErrorData {
    match err {
        engine::Error::NotFound(_) => {
            ErrorData::resource_not_found(err.to_string(), Some(serde_json::json!({ "uri": uri })))
        }
        engine::Error::Conflict(_) => ErrorData::invalid_params(err.to_string(), None),
        err => error_data(err),
    }
}

/// The most resources one session (or one `subscriptions/listen` stream) subscribes to: each
/// holds a subscription at an upstream.
const MAX_SUBSCRIPTIONS: usize = 64;

/// Refuses a session's `held`-th subscription past [`MAX_SUBSCRIPTIONS`].
pub(super) fn within_subscription_cap(held: usize) -> Result<(), ErrorData> {
    match held <= MAX_SUBSCRIPTIONS {
        true => Ok(()),
        false => Err(ErrorData::invalid_params(
            format!(
                "a session subscribes to at most {MAX_SUBSCRIPTIONS} resources; unsubscribe from one first"
            ),
            None,
        )),
    }
}

/// Passes on, with `send`, each update from `updates` that `covered` says the client
/// subscribed to, under the URI it gives (the client's), until `send` fails; never ends
/// otherwise (a process without upstreams has nothing to pass on).
pub(super) async fn relay_updates<F, E>(
    updates: Option<broadcast::Receiver<ResourceUpdated>>,
    covered: impl Fn(&ResourceUpdated) -> Option<String>,
    mut send: impl FnMut(String) -> F,
) where
    F: Future<Output = Result<(), E>>,
{
    let Some(mut updates) = updates else { return std::future::pending().await };
    loop {
        match updates.recv().await {
            Ok(update) => {
                if let Some(uri) = covered(&update)
                    && send(uri).await.is_err()
                {
                    return;
                }
            }
            Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return std::future::pending().await,
        }
    }
}

impl Shared {
    /// What a client listening on 2026-07-28 hears, each notification given to `send`: the
    /// `accepted` lists' changes, and updates of the resources it subscribed to (each one the
    /// tenant reads, or it fails saying which is not), after `acknowledged` once every resource
    /// is subscribed to. Ends when sending fails or the catalog closes.
    pub(super) async fn listen<F, E>(
        &self,
        access: &TenantAccess,
        view: &TenantTools,
        accepted: &SubscriptionFilter,
        acknowledged: impl Future<Output = Result<(), E>>,
        send: impl Fn(ServerNotification) -> F,
    ) -> Result<(), ErrorData>
    where
        F: Future<Output = Result<(), E>>,
    {
        let uris = accepted.resource_subscriptions.as_deref().unwrap_or_default();
        within_subscription_cap(uris.len())?;
        // Listening first: an update sent as soon as the server takes the subscription counts.
        let updates = self.executor.resource_updates();
        let mut resources = Vec::new();
        for uri in uris {
            let subscribed = self.executor.subscribe(view, &access.caller, uri).await;
            resources.push(subscribed.map_err(|err| read_error(uri, err))?);
        }
        if acknowledged.await.is_err() {
            return Ok(());
        }
        let send = &send;
        let announce = |changed| async move {
            let (wanted, notification) = match changed {
                Changed::Tools => {
                    (accepted.tools_list_changed, ToolListChangedNotification::default().into())
                }
                Changed::Prompts => {
                    (accepted.prompts_list_changed, PromptListChangedNotification::default().into())
                }
                Changed::Resources => {
                    (accepted.resources_list_changed, ResourceListChangedNotification::default().into())
                }
            };
            if wanted == Some(true) { send(notification).await } else { Ok(()) }
        };
        let updates = relay_updates(
            updates,
            |update| {
                let uri = resources.iter().find_map(|subscription| subscription.covers(update))?;
                self.serves(&access.tenant, uri).then(|| uri.to_string())
            },
            |uri| send(ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri)).into()),
        );
        tokio::select! {
            () = self.announce_changes(&access.tenant, None, announce) => {}
            () = updates => {}
        }
        Ok(())
    }
}

/// What a server listening for `requested` sends: every list, and each resource asked for.
pub(super) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut offered =
        SubscriptionFilter::builder().tools_list_changed().prompts_list_changed().resources_list_changed();
    if let Some(uris) = &requested.resource_subscriptions {
        offered = offered.resource_subscriptions(uris.iter().cloned());
    }
    requested.intersection(&offered.build())
}
