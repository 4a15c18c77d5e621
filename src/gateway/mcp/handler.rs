//! The endpoint's rmcp `ServerHandler`, one per session (and per request on 2026-07-28 that
//! the direct way leaves to rmcp): the handshake, `list_changed` on a session's GET stream and
//! on `subscriptions/listen`, `logging/setLevel`, the meta tool, and the listings and calls that
//! come through rmcp.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InitializeRequestParams,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::SessionRestoreMarker;
use rmcp::{ErrorData, ServerHandler};
use tracing::Instrument;

use super::super::TenantAccess;
use super::super::sessions::EquippedElsewhere;
use super::calls::{Call, Client, Era, Listener, call_span, not_authenticated, offers_meta_tool};
use super::{Equipped, META_TOOL, Opening, SESSION_CHECK, SessionChoices, Shared};

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
        if let Some(id) = session_id(&context.extensions)
            && let Err(err) = engine::store::mcp_sessions::equip(&self.shared.pool, &id, &groups).await
        {
            tracing::warn!(error = %err, "could not record the groups a session equipped");
        }
        let _ = context.peer.notify_tool_list_changed().await;
        let message = format!("Equipped groups: {}. {count} tools are available now.", groups.join(", "));
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

    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let era = era(&context);
        let (view, _) = self
            .shared
            .view(&access.tenant, self.session(era))
            .ok_or_else(|| ErrorData::invalid_params(format!("unknown tenant `{}`", access.tenant), None))?;
        if request.name == META_TOOL && offers_meta_tool(&view, era) {
            // It writes PostgreSQL and renders a list: it counts like a call.
            let result = match self.shared.executor.admit_toolless(&view, &access.caller).await {
                Ok(()) => self.equip(&access.tenant, request.arguments, &context).await,
                Err(limited) => CallToolResult::error(vec![ContentBlock::text(limited.to_string())]),
            };
            return Ok(CallToolResponse::Complete(result));
        }
        let level = self.session.lock().level;
        let client = Client::Peer(context.peer.clone());
        let listener = Listener::new(client, &context.meta, era, level, context.client_capabilities());
        let call = Call { access, view, params: request, listener, era, cancelled: context.ct };
        self.shared.call(call).await
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let capabilities =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_logging().build();
        ServerConfig::new(capabilities)
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
            tokio::select! {
                () = gateway.shared.announce_changes(&access.tenant, session, || peer.notify_tool_list_changed()) => {}
                () = closed => {}
            }
        });
    }

    fn accepted_subscription_filter(&self, _: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let access = access(&subscription.request_context().extensions).ok_or_else(not_authenticated)?;
        if subscription.accepted().tools_list_changed == Some(true) {
            let sink = subscription.sink();
            tokio::select! {
                () = self.shared.announce_changes(&access.tenant, None, || sink.notify_tool_list_changed()) => {}
                () = subscription.cancelled() => {}
            }
        } else {
            subscription.cancelled().await;
        }
        Ok(())
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
        Ok(self.shared.listing(&access.tenant, self.session(era), era))
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
