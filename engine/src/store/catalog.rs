//! The whole configuration in one consistent read (a repeatable-read, read-only
//! transaction), for building a catalog snapshot.

use serde_json::Value;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

use super::Result;
use super::groups::{self, Group, ItemMember};
use super::item_overrides::StoredItemOverride;
use super::items::ItemKind;
use super::overrides::StoredOverride;
use super::settings::{self, Settings};
use super::sources::{self, Source};
use super::tenants::{self, Tenant};
use crate::model::CallLimits;

pub(crate) struct ToolRow {
    pub id: Uuid,
    pub source_id: Uuid,
    pub upstream_name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Value,
    pub tags: Vec<String>,
    pub strict: bool,
    pub timeout_ms: Option<i32>,
    pub held: bool,
    pub meta: Option<Value>,
}

/// A discovered prompt, resource or resource template.
pub(crate) struct ItemRow {
    pub source_id: Uuid,
    pub kind: ItemKind,
    pub key: String,
    pub definition: Value,
}

pub(crate) struct KeyRow {
    pub id: Uuid,
    pub tenant_id: Uuid,
    /// SHA-256 of the key.
    pub key_hash: Vec<u8>,
    pub expires_at: Option<time::OffsetDateTime>,
    pub limits: Json<CallLimits>,
}

pub(crate) struct Loaded {
    pub settings: Settings,
    pub tenants: Vec<Tenant>,
    pub sources: Vec<Source>,
    /// `catalog_epoch.tools` as read with everything else.
    pub tool_epoch: i64,
    /// `catalog_epoch.config` as read with everything else.
    pub config_epoch: i64,
    /// `None`: the caller said it has the tools already (see [`load`]).
    pub tools: Option<Vec<ToolRow>>,
    /// Read with the tools, and `None` with them.
    pub items: Option<Vec<ItemRow>>,
    pub groups: Vec<Group>,
    /// (group, tool)
    pub members: Vec<(Uuid, Uuid)>,
    /// (tenant, group, active)
    pub tenant_groups: Vec<(Uuid, Uuid, bool)>,
    pub overrides: Vec<StoredOverride>,
    pub item_overrides: Vec<StoredItemOverride>,
    /// The groups' prompts, resources and templates.
    pub item_members: Vec<ItemMember>,
    /// Unrevoked API keys.
    pub keys: Vec<KeyRow>,
}

/// Reads the configuration; the tools (and the other items upstreams offer) only when
/// `have_tools` (asked with the tool epoch, the sources and the group members just read) says
/// the caller's are not current.
pub(crate) async fn load(
    pool: &PgPool,
    have_tools: impl FnOnce(i64, &[Source], &[(Uuid, Uuid)]) -> bool,
) -> Result<Loaded> {
    let mut tx = pool.begin().await?;
    super::read_only(&mut tx).await?;
    let epochs = sqlx::query!("select tools, config from catalog_epoch").fetch_one(&mut *tx).await?;
    let (tool_epoch, config_epoch) = (epochs.tools, epochs.config);
    let settings = settings::get(&mut *tx).await?;
    let tenants = tenants::list(&mut *tx).await?;
    let sources = sources::list(&mut *tx).await?;
    let members: Vec<(Uuid, Uuid)> = sqlx::query!(
        "select m.group_id, t.id as tool_id from tool_group_member m join tool t using (source_id, upstream_name)
         order by 1, 2"
    )
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|r| (r.group_id, r.tool_id))
    .collect();
    let (tools, items) = match have_tools(tool_epoch, &sources, &members) {
        true => (None, None),
        false => {
            let tools = sqlx::query_as!(
                ToolRow,
                "select id, source_id, upstream_name, description, input_schema, output_schema,
                        annotations, tags, strict, timeout_ms, held, meta
                 from tool order by upstream_name, id"
            )
            .fetch_all(&mut *tx)
            .await?;
            let items = sqlx::query_as!(
                ItemRow,
                r#"select source_id, kind as "kind: ItemKind", key, definition from upstream_item
                   where not held order by kind, key, source_id"#
            )
            .fetch_all(&mut *tx)
            .await?;
            (Some(tools), Some(items))
        }
    };
    let groups = groups::list(&mut *tx).await?;
    let tenant_groups = sqlx::query!("select tenant_id, group_id, active from tenant_group")
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|r| (r.tenant_id, r.group_id, r.active))
        .collect();
    let overrides = super::overrides::all(&mut *tx).await?;
    let item_overrides = super::item_overrides::all(&mut *tx).await?;
    let item_members = groups::all_item_members(&mut *tx).await?;
    let keys = sqlx::query_as!(
        KeyRow,
        r#"select id, tenant_id, key_hash, expires_at, limits as "limits: Json<CallLimits>"
           from api_key where revoked_at is null"#
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Loaded {
        settings,
        tenants,
        sources,
        tool_epoch,
        config_epoch,
        tools,
        items,
        groups,
        members,
        tenant_groups,
        overrides,
        item_overrides,
        item_members,
        keys,
    })
}

/// How many configuration writes have been committed: a snapshot whose `config_epoch` is at
/// least this holds all of them.
pub(crate) async fn config_epoch(pool: &PgPool) -> Result<i64> {
    Ok(sqlx::query_scalar!("select config from catalog_epoch").fetch_one(pool).await?)
}
