//! The tenant's prompts, resources and resource templates as MCP lists them; requests about
//! one go through the executor ([`engine::exec::Executor::get_prompt`] and the like).

use std::sync::Arc;

use engine::catalog::TenantTools;
use engine::catalog::items::CatalogItem;
use rmcp::ErrorData;
use rmcp::model::{ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult};
use serde::de::DeserializeOwned;

use super::calls::error_data;

/// The definitions of `items` as rmcp's `T`.
fn definitions<T: DeserializeOwned>(items: &[Arc<CatalogItem>]) -> Vec<T> {
    items.iter().filter_map(|item| serde_json::from_value((*item.definition).clone()).ok()).collect()
}

pub(super) fn prompts(view: &TenantTools) -> ListPromptsResult {
    ListPromptsResult::with_all_items(definitions(view.items.prompts()))
}

pub(super) fn resources(view: &TenantTools) -> ListResourcesResult {
    ListResourcesResult::with_all_items(definitions(view.items.resources()))
}

pub(super) fn templates(view: &TenantTools) -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(definitions(view.items.templates()))
}

/// A failed read as MCP's error: a URI no visible server offers is "resource not found".
pub(super) fn read_error(err: engine::Error) -> ErrorData {
    match err {
        engine::Error::NotFound(_) => ErrorData::resource_not_found(err.to_string(), None),
        engine::Error::Conflict(_) => ErrorData::invalid_params(err.to_string(), None),
        err => error_data(err),
    }
}
