//! The application layer against a real PostgreSQL database and a live catalog.

use std::time::{Duration, Instant};

use engine::catalog::{Catalog, CatalogOptions};
use engine::model::{Name, SourceKind, TenantSlug};
use engine::secret::SecretBox;
use engine::service::tenants;
use engine::store::overrides::OverrideInput;
use engine::store::sources::{NewSource, ToolDefinition};
use engine::store::{self, Actor};
use serde_json::json;
use sqlx::PgPool;

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        upstream_name: name.into(),
        description: format!("{name}s what it gets"),
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        output_schema: None,
        annotations: json!({}),
        tags: Vec::new(),
        strict: false,
        timeout_ms: None,
    }
}

/// A tenant's detail joins what is stored about it (keys, overrides, groups) with what its
/// LLM applications see now: the catalog's tools under their exposed names, with their size.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenants_detail_is_its_configuration_and_exactly_what_its_llm_sees(pool: PgPool) {
    let (actor, acme) = (Actor::system(), TenantSlug::parse("acme").unwrap());
    store::tenants::create(&pool, &actor, &acme, "Acme").await.unwrap();
    store::keys::create(&pool, &actor, &acme, "ci", None).await.unwrap();
    let up = NewSource {
        kind: SourceKind::Mcp,
        name: Name::parse("up").unwrap(),
        prefix: "up".into(),
        tags: Vec::new(),
        tenant: None,
    };
    store::sources::create(&pool, &actor, &up).await.unwrap();
    let ids =
        store::sources::sync_tools(&pool, &actor, &up.name, &[tool("echo"), tool("shout")]).await.unwrap();
    let renamed = OverrideInput { name: Some("say".into()), ..Default::default() };
    let secrets = SecretBox::from_key(&[0; 32]).unwrap();
    store::overrides::set(&pool, &secrets, &actor, &acme, ids[1], &renamed).await.unwrap();
    let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(5);
    let detail = loop {
        let detail = tenants::detail(&pool, &catalog, &acme).await.unwrap();
        if detail.tools.iter().any(|t| t.name == "say") {
            break detail;
        }
        assert!(Instant::now() < deadline, "the override never reached the catalog");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let upstream: Vec<(&str, &str)> = detail
        .tools
        .iter()
        .filter(|t| t.source == "up")
        .map(|t| (t.name.as_str(), t.description.as_str()))
        .collect();
    assert_eq!(upstream, [("say", "shouts what it gets"), ("up_echo", "echos what it gets")]);
    assert!(detail.tools.iter().all(|t| t.approx_tokens > 0));
    assert_eq!(detail.approx_tokens, detail.tools.iter().map(|t| t.approx_tokens).sum::<usize>());
    assert_eq!(
        (detail.tenant.slug.as_str(), detail.keys.len(), detail.keys[0].name.as_str()),
        ("acme", 1, "ci")
    );
    assert_eq!((detail.overrides.len(), detail.overrides[0].name.as_deref()), (1, Some("say")));
    assert!(detail.conflicts.is_empty());
    assert!(detail.snapshot_version <= catalog.snapshot().version);

    let nobody = TenantSlug::parse("nobody").unwrap();
    let missing = tenants::detail(&pool, &catalog, &nobody).await.unwrap_err();
    assert!(matches!(missing, store::Error::NotFound(_)), "{missing:?}");
}
