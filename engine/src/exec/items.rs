//! Requests about the prompts and resources a tenant sees — get a prompt, read a resource,
//! subscribe to its updates, complete an argument — each sent to the server that offers the item, under the server's
//! own name for it, for the MCP endpoint and the REST API alike.

use std::sync::Arc;

use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, GetPromptRequest,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult, JsonObject,
    ReadResourceRequest, ReadResourceRequestParams, ReadResourceResult, Reference, ResourceContents,
    ResultType, ServerResult,
};
use tokio::sync::broadcast;

use super::{Executor, ResourceUpdated, ServerRef, Upstream, correlation_id};
use crate::catalog::items::{CatalogItem, Unreadable};
use crate::catalog::{DEFAULT_TIMEOUT, TenantTools};
use crate::error::{Error, Missing};
use crate::model::UpstreamError;
use crate::store::items::ItemKind;
use crate::tool::{Caller, ToolContext, ToolError};

fn unknown(what: &str, name: &str) -> Error {
    Error::NotFound(Missing::Other(format!("{what} `{name}`")))
}

/// The refusal of prompt `name`, which asks for input first, to a client that cannot give it.
fn asks_first(name: &str, asks: &InputRequiredResult) -> Error {
    let keys: Vec<&str> = asks.input_requests.iter().flatten().map(|(key, _)| key.as_str()).collect();
    Error::Invalid(format!(
        "the prompt `{name}` asks for input first ({}), which only an MCP client on revision 2026-07-28 can give",
        keys.join(", ")
    ))
}

fn unexpected(answer: ServerResult) -> Error {
    Error::Upstream(UpstreamError::Down(format!("the server answered with something else: {answer:?}")))
}

impl Executor {
    /// Gets the prompt a tenant sees as `name`, filled with `arguments`, for a client that
    /// cannot answer a server's questions (REST, the panel): a prompt that asks first is
    /// refused, saying so.
    pub async fn get_prompt(
        &self,
        view: &TenantTools,
        caller: &Caller,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, Error> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        match self.prompt(view, caller, params).await? {
            GetPromptResponse::Complete(result) => Ok(result),
            GetPromptResponse::InputRequired(asks) => Err(asks_first(name, &asks)),
            other => Err(Error::Internal(format!("a prompt answer of an unknown kind: {other:?}").into())),
        }
    }

    /// Gets the prompt a tenant sees as `request.name` for an MCP client: its arguments and,
    /// on 2026-07-28, its answers to the server's questions (`inputResponses`, `requestState`)
    /// go to the server as they came, and the server's questions back to the client the same
    /// way.
    pub async fn prompt(
        &self,
        view: &TenantTools,
        caller: &Caller,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, Error> {
        let prompt = view.items.prompt(&request.name).ok_or_else(|| unknown("prompt", &request.name))?;
        let mut params = request;
        params.name = prompt.key.clone();
        params.meta = None;
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        match self.forward(view, caller, prompt, request).await? {
            ServerResult::GetPromptResult(mut result) => {
                result.result_type = Some(ResultType::COMPLETE);
                Ok(GetPromptResponse::Complete(result))
            }
            ServerResult::InputRequiredResult(asks) => Ok(GetPromptResponse::InputRequired(asks)),
            other => Err(unexpected(other)),
        }
    }

    /// Reads `uri` from the server that lists it (or whose template matches it); the contents
    /// are cut to the output cap, with a notice.
    pub async fn read_resource(
        &self,
        view: &TenantTools,
        caller: &Caller,
        uri: &str,
    ) -> Result<ReadResourceResult, Error> {
        let item = readable(view, uri)?;
        let own = own_uri(item, uri);
        let request =
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(ReadResourceRequestParams::new(own)));
        match self.forward(view, caller, item, request).await? {
            ServerResult::ReadResourceResult(mut read) => {
                read.result_type = Some(ResultType::COMPLETE);
                for content in &mut read.contents {
                    if let ResourceContents::TextResourceContents { uri: said, .. }
                    | ResourceContents::BlobResourceContents { uri: said, .. } = content
                        && said == own
                    {
                        *said = uri.to_string();
                    }
                }
                Ok(cap_read(read, self.inner.config.output_cap_bytes))
            }
            other => Err(unexpected(other)),
        }
    }

    /// Completes an argument of a prompt or a resource template the tenant sees.
    pub async fn complete(
        &self,
        view: &TenantTools,
        caller: &Caller,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, Error> {
        let item = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let item = view.items.prompt(&prompt.name).ok_or_else(|| unknown("prompt", &prompt.name))?;
                prompt.name = item.key.clone();
                item
            }
            Reference::Resource(template) => view
                .items
                .template(&template.uri)
                .ok_or_else(|| unknown("resource template", &template.uri))?,
            other => {
                return Err(Error::Invalid(format!("Toolgate cannot complete an argument of {other:?}")));
            }
        };
        // The caller's request metadata is not the server's.
        params.meta = None;
        let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
        match self.forward(view, caller, item, request).await? {
            ServerResult::CompleteResult(mut result) => {
                result.result_type = Some(ResultType::COMPLETE);
                Ok(result)
            }
            other => Err(unexpected(other)),
        }
    }

    /// Subscribes to updates of `uri`, which the tenant reads from the server that lists it
    /// (or whose template matches it), for as long as the answer is kept.
    pub async fn subscribe(
        &self,
        view: &TenantTools,
        caller: &Caller,
        uri: &str,
    ) -> Result<Subscription, Error> {
        let item = readable(view, uri)?;
        let (upstream, ctx) = self.admit_item(view, caller, item).await?;
        let target = ServerRef { id: item.source_id, name: &item.source_name };
        let own = own_uri(item, uri);
        let held = bounded(item, upstream.subscribe(target, own, &ctx)).await?;
        Ok(Subscription {
            uri: uri.to_string(),
            own: own.to_string(),
            connection: held.connection,
            _guard: held.guard,
        })
    }

    /// Every update of a resource an upstream sends (none without upstreams).
    pub fn resource_updates(&self) -> Option<broadcast::Receiver<ResourceUpdated>> {
        self.inner.upstream.as_ref().map(|upstream| upstream.resource_updates())
    }

    /// Sends `request` about `item` to its server for `caller`: counted against the tenant's
    /// and the caller's rate limits like a call, and bounded by the default call timeout. The
    /// answers are marked `resultType: "complete"` (an upstream on an older revision sends
    /// none, clients on 2026-07-28 refuse a result without it; older clients' answers lose it
    /// again).
    async fn forward(
        &self,
        view: &TenantTools,
        caller: &Caller,
        item: &CatalogItem,
        request: ClientRequest,
    ) -> Result<ServerResult, Error> {
        let (upstream, ctx) = self.admit_item(view, caller, item).await?;
        let target = ServerRef { id: item.source_id, name: &item.source_name };
        bounded(item, upstream.forward(target, request, &ctx)).await
    }

    /// The upstreams, once a request about `item` is admitted for `caller`, and its context.
    async fn admit_item(
        &self,
        view: &TenantTools,
        caller: &Caller,
        item: &CatalogItem,
    ) -> Result<(&Arc<dyn Upstream>, ToolContext), Error> {
        let server = || format!("server `{}`", item.source_name);
        let upstream = self.inner.upstream.as_ref().ok_or_else(|| Error::not_found(server()))?;
        self.admit_toolless(view, caller).await?;
        Ok((upstream, ToolContext::new(view.tenant_id, view.slug.as_str(), caller.clone(), correlation_id())))
    }
}

/// A subscription to a resource's updates, ended (upstream too, once nobody else holds one
/// there) when dropped.
pub struct Subscription {
    /// The resource's URI as the tenant's clients know it.
    pub uri: String,
    /// Its server's own URI for it.
    own: String,
    connection: u64,
    _guard: Box<dyn Send + Sync>,
}

impl Subscription {
    /// The URI the client knows the resource by, if `update` is about this subscription's
    /// resource, from where it subscribed.
    pub fn covers(&self, update: &ResourceUpdated) -> Option<&str> {
        (update.connection == self.connection && update.uri == self.own).then_some(&self.uri)
    }
}

/// The server's own URI for `uri`, which a tenant reads through `item`: a listed resource's
/// (an app's `ui://` URI is the tenant's under the server's prefix), else `uri` itself.
fn own_uri<'a>(item: &'a CatalogItem, uri: &'a str) -> &'a str {
    match item.kind {
        ItemKind::Resource => &item.key,
        ItemKind::Prompt | ItemKind::ResourceTemplate => uri,
    }
}

/// The item a read (or a subscription) of `uri` goes to.
fn readable<'a>(view: &'a TenantTools, uri: &str) -> Result<&'a Arc<CatalogItem>, Error> {
    view.items.reading(uri).map_err(|refused| match refused {
        Unreadable::Unknown(_) => unknown("resource", uri),
        Unreadable::Ambiguous { .. } => Error::Conflict(refused.to_string()),
    })
}

/// `request`'s answer from `item`'s server within the default call timeout.
async fn bounded<T>(
    item: &CatalogItem,
    request: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, Error> {
    match tokio::time::timeout(DEFAULT_TIMEOUT, request).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(err @ (ToolError::Tool(_) | ToolError::MissingCapability(_)))) => {
            Err(Error::Upstream(UpstreamError::Down(err.to_string())))
        }
        Ok(Err(ToolError::Internal(err))) => Err(Error::Internal(err)),
        Err(_) => Err(Error::Upstream(UpstreamError::Down(format!(
            "MCP server `{}` did not answer within {DEFAULT_TIMEOUT:?}",
            item.source_name
        )))),
    }
}

/// `read` with at most `cap` bytes of contents: a text cut at the cap ends with a notice, and
/// contents past it are left out, said by a last text content.
fn cap_read(mut read: ReadResourceResult, cap: usize) -> ReadResourceResult {
    let mut left = cap;
    let mut kept = Vec::with_capacity(read.contents.len());
    let mut dropped = 0;
    for mut content in std::mem::take(&mut read.contents) {
        let size = match &content {
            ResourceContents::TextResourceContents { text, .. } => text.len(),
            ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
            _ => 0,
        };
        if size <= left {
            left -= size;
            kept.push(content);
            continue;
        }
        if let ResourceContents::TextResourceContents { text, .. } = &mut content
            && left > TRUNCATED_READ.len()
        {
            let mut end = left - TRUNCATED_READ.len();
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str(TRUNCATED_READ);
            left = 0;
            kept.push(content);
            continue;
        }
        dropped += 1;
    }
    if dropped > 0 {
        let uri = kept.first().map(uri_of).unwrap_or_default();
        let notice = format!(
            "[{dropped} more contents left out: over Toolgate's {cap}-byte cap on what a read passes on]"
        );
        kept.push(ResourceContents::text(notice, uri));
    }
    read.contents = kept;
    read
}

/// What ends a read's text cut at the cap.
const TRUNCATED_READ: &str = "\n[truncated: over Toolgate's cap on what a read passes on]";

fn uri_of(content: &ResourceContents) -> String {
    match content {
        ResourceContents::TextResourceContents { uri, .. }
        | ResourceContents::BlobResourceContents { uri, .. } => uri.clone(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_over_the_cap_is_cut_and_says_so() {
        let read = ReadResourceResult::new(vec![
            ResourceContents::text("a".repeat(100), "docs://a"),
            ResourceContents::text("é".repeat(100), "docs://b"),
            ResourceContents::BlobResourceContents {
                uri: "docs://c".into(),
                mime_type: None,
                blob: "QUJD".repeat(50),
                meta: None,
            },
        ]);
        let capped = cap_read(read.clone(), 250);
        let texts: Vec<String> = capped
            .contents
            .iter()
            .map(|c| match c {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                _ => "blob".into(),
            })
            .collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert_eq!(texts[0].len(), 100);
        assert!(texts[1].ends_with(TRUNCATED_READ) && texts[1].len() <= 150, "{}", texts[1]);
        assert!(texts[2].starts_with("[1 more contents left out"), "{}", texts[2]);
        assert_eq!(cap_read(read.clone(), 10_000), read);
    }
}
