//! The endpoint's rmcp `ServerHandler`, one per session (and per request on 2026-07-28 that
//! the direct way leaves to rmcp): the handshake, `list_changed` on a session's GET stream and
//! on `subscriptions/listen`, `logging/setLevel`, the meta tool, and the listings and calls that
//! come through rmcp.

use std::sync::Arc;

use engine::service::catalog::TenantTools;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, InitializeRequestParams, InitializeResult,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, ServiceError, SubscriptionContext,
};
use rmcp::transport::streamable_http_server::session::SessionRestoreMarker;
use rmcp::{ErrorData, ServerHandler};
use tracing::Instrument;

use super::super::TenantAccess;
use super::super::sessions::EquippedElsewhere;
use super::calls::Shared;
use super::calls::{
    Call, Changed, Client, Era, Listener, call_span, error_data, finds_in_session, not_authenticated,
    offers_meta_tool,
};
use super::items;
use super::session::{Equipped, Opening, SESSION_CHECK, SessionChoices};
use engine::service::catalog::META_TOOL;

/// One MCP session's handler: what all share, and what the session chose.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
    session: Arc<SessionChoices>,
}

impl Gateway {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Gateway { shared, session: Arc::default() }
    }
}

fn access(extensions: &rmcp::model::Extensions) -> Option<TenantAccess> {
    extensions.get::<axum::http::request::Parts>()?.extensions.get::<TenantAccess>().cloned()
}

/// The id of the session a request belongs to.
fn session_id(extensions: &rmcp::model::Extensions) -> Option<String> {
    let parts = extensions.get::<axum::http::request::Parts>()?;
    Some(parts.headers.get("mcp-session-id")?.to_str().ok()?.to_string())
}

/// The request's era: 2026-07-28 or later has no session and takes no requests.
fn era(context: &RequestContext<RoleServer>) -> Era {
    match context.protocol_version() {
        Some(version) if !version.has_initialize() => Era::Stateless,
        _ => Era::Handshake,
    }
}

impl Gateway {
    /// What the request's session chose; none for a request on 2026-07-28.
    fn session(&self, era: Era) -> Option<&SessionChoices> {
        (era == Era::Handshake).then_some(&*self.session)
    }

    /// Runs the meta tool: the session's active groups become `groups`.
    async fn equip(
        &self,
        tenant: &str,
        arguments: Option<JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let failed = |message: String| CallToolResult::error(vec![ContentBlock::text(message)]);
        let groups: Option<Vec<String>> =
            arguments.and_then(|mut args| serde_json::from_value(args.remove("groups")?).ok());
        let Some(groups) = groups else {
            return failed("`groups` must be a list of group names".into());
        };
        let snapshot = self.shared.catalog.snapshot();
        let Some(tenant_view) = snapshot.tenant(tenant) else {
            return failed(format!("unknown tenant `{tenant}`"));
        };
        let view = match tenant_view.equip(&groups) {
            Ok(view) => Arc::new(view),
            Err(unknown) => {
                let known: Vec<&str> = tenant_view.groups.iter().map(|g| g.name.as_str()).collect();
                return failed(format!(
                    "unknown groups: {}; the groups are: {}",
                    unknown.join(", "),
                    known.join(", ")
                ));
            }
        };
        let count = view.tools().len();
        self.session.lock().equipped =
            Some(Equipped { groups: groups.clone(), version: snapshot.version, view });
        // The choice follows the session to another replica.
        let mut message = format!("Equipped groups: {}. {count} tools are available now.", groups.join(", "));
        if let Some(id) = session_id(&context.extensions)
            && let Err(err) = engine::service::sessions::equip(&self.shared.pool, &id, &groups).await
        {
            tracing::warn!(error = %err, "could not record the groups a session equipped");
            message.push_str(
                " The choice could not be saved (Toolgate's database is away): if this session moves to \
                 another Toolgate replica, equip the groups again.",
            );
        }
        let _ = context.peer.notify_tool_list_changed().await;
        CallToolResult::success(vec![ContentBlock::text(message)])
    }

    /// Takes back what a session brought from the replica that opened it: the groups it
    /// equipped (less those removed meanwhile).
    fn restore(&self, extensions: &rmcp::model::Extensions) {
        let parts = extensions.get::<axum::http::request::Parts>();
        let brought = parts.and_then(|parts| parts.extensions.get::<EquippedElsewhere>());
        let (Some(access), Some(EquippedElsewhere(groups))) = (access(extensions), brought) else { return };
        let snapshot = self.shared.catalog.snapshot();
        let Some(tenant_view) = snapshot.tenant(&access.tenant) else { return };
        let mut groups = groups.clone();
        groups.retain(|name| tenant_view.groups.iter().any(|g| &g.name == name));
        let view = Arc::new(tenant_view.equip(&groups).expect("only known groups remain"));
        self.session.lock().equipped = Some(Equipped { groups, version: snapshot.version, view });
    }

    /// Who the request comes from, and the tenant's view it sees.
    fn tenant_view(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(TenantAccess, Arc<TenantTools>), ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let (view, _) = self
            .shared
            .view(&access.tenant, self.session(era(context)))
            .ok_or_else(|| ErrorData::invalid_params(format!("unknown tenant `{}`", access.tenant), None))?;
        Ok((access, view))
    }

    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (access, view) = self.tenant_view(&context)?;
        let era = era(&context);
        if request.name == META_TOOL && offers_meta_tool(&view, era) {
            // It writes PostgreSQL and renders a list: it counts like a call.
            let result = match self.shared.executor.admit_toolless(&view, &access.caller).await {
                Ok(()) => self.equip(&access.tenant, request.arguments, &context).await,
                Err(limited) => CallToolResult::error(vec![ContentBlock::text(limited.to_string())]),
            };
            return Ok(CallToolResponse::Complete(result));
        }
        let finds = finds_in_session(&view, era, &request.name);
        let level = self.session.lock().level;
        let peer = context.peer.clone();
        let listener = Listener::new(
            Client::Peer(peer.clone()),
            &context.meta,
            era,
            level,
            context.client_capabilities(),
        );
        let call = Call { access, view, params: request, listener, era, cancelled: context.ct };
        let answer = self.shared.call(call).await;
        if finds
            && matches!(&answer, Ok(CallToolResponse::Complete(result)) if result.structured_content.is_some())
        {
            // Tools were found: they are listed from now on.
            let _ = peer.notify_tool_list_changed().await;
        }
        answer
    }
}

/// Tells a session's client that a list changed.
async fn tell_session(peer: &Peer<RoleServer>, changed: Changed) -> Result<(), ServiceError> {
    match changed {
        Changed::Tools => peer.notify_tool_list_changed().await,
        Changed::Prompts => peer.notify_prompt_list_changed().await,
        Changed::Resources => peer.notify_resource_list_changed().await,
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_extensions_with(engine::service::catalog::apps::capability())
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities).with_server_info(engine::implementation())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.session.lock().capabilities = Some(request.capabilities.clone());
        if context.extensions.get::<SessionRestoreMarker>().is_some() {
            self.restore(&context.extensions);
        }
        let parts = context.extensions.get::<axum::http::request::Parts>();
        if let Some(opening) = parts.and_then(|parts| parts.extensions.get::<Opening>()) {
            let _ = opening.0.set(self.session.clone());
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(access) = access(&context.extensions) else { return };
        let (gateway, peer) = (self.clone(), context.peer);
        tokio::spawn(async move {
            // The task ends with its session; rmcp has no signal for that, so it looks.
            let closed = async {
                let mut check = tokio::time::interval(SESSION_CHECK);
                while !peer.is_transport_closed() {
                    check.tick().await;
                }
            };
            let session = Some(&*gateway.session);
            let updates = items::relay_updates(
                gateway.shared.executor.resource_updates(),
                |update| {
                    gateway.session.covering(update).filter(|uri| gateway.shared.serves(&access.tenant, uri))
                },
                |uri| peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)),
            );
            tokio::select! {
                () = gateway.shared.announce_changes(&access.tenant, session, |changed| tell_session(&peer, changed)) => {}
                () = updates => {}
                () = closed => {}
            }
        });
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(items::accepted(requested))
    }

    /// A 2026-07-28 client's subscription, when the direct way left it to rmcp.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let (access, view) = self.tenant_view(subscription.request_context())?;
        let (accepted, sink) = (subscription.accepted(), subscription.sink());
        // rmcp acknowledged the subscription before this handler ran.
        let acknowledged = std::future::ready(Ok(()));
        let listening = self
            .shared
            .listen(&access, &view, accepted, acknowledged, |notification| sink.send(notification));
        tokio::select! {
            listened = listening => listened,
            () = subscription.cancelled() => Ok(()),
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.lock().level = request.level;
        Ok(())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let era = era(&context);
        Ok(self.shared.listing(&access.tenant, self.session(era), era, &access.caller).await)
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let (_, view) = self.tenant_view(&context)?;
        Ok(items::prompts(&view))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (access, view) = self.tenant_view(&context)?;
        // A client of the handshake era cannot answer a server's questions in band.
        if era(&context) == Era::Handshake {
            let got = self
                .shared
                .executor
                .get_prompt(&view, &access.caller, &request.name, request.arguments)
                .await;
            return got.map(GetPromptResponse::Complete).map_err(error_data);
        }
        self.shared.executor.prompt(&view, &access.caller, request).await.map_err(error_data)
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (_, view) = self.tenant_view(&context)?;
        Ok(items::resources(&view))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let (_, view) = self.tenant_view(&context)?;
        Ok(items::templates(&view))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (access, view) = self.tenant_view(&context)?;
        let read = self.shared.executor.read_resource(&view, &access.caller, &request.uri).await;
        read.map(ReadResourceResponse::Complete).map_err(|err| items::read_error(&request.uri, err))
    }

    /// Subscribes the session to a resource's updates (on the handshake era; a 2026-07-28
    /// client subscribes through `subscriptions/listen`).
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (access, view) = self.tenant_view(&context)?;
        let held = self.session.lock().subscriptions.iter().filter(|held| held.uri != request.uri).count();
        items::within_subscription_cap(held + 1)?;
        let subscription = self.shared.executor.subscribe(&view, &access.caller, &request.uri).await;
        let subscription = subscription.map_err(|err| items::read_error(&request.uri, err))?;
        let mut session = self.session.lock();
        session.subscriptions.retain(|held| held.uri != request.uri);
        session.subscriptions.push(subscription);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        access(&context.extensions).ok_or_else(not_authenticated)?;
        self.session.lock().subscriptions.retain(|held| held.uri != request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let (access, view) = self.tenant_view(&context)?;
        self.shared.executor.complete(&view, &access.caller, request).await.map_err(error_data)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let span = call_span(&request.name, &context.meta, parts.map(|p| &p.headers));
        self.answer_call(request, context).instrument(span).await
    }
}
