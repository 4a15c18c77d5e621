//! The live catalog as the gateway and the panel read it: each tenant's tools, prompts and
//! resources under their exposed names, rebuilt on every change (`catalog` builds it).

pub use crate::catalog::apps;
pub use crate::catalog::items::{CatalogItem, TenantItems, exposed};
pub use crate::catalog::{
    Catalog, CatalogOptions, CatalogTool, META_TOOL, SEARCH_TOOL, TenantTools, search_tool,
};
