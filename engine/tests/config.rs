//! Config as code against a real PostgreSQL database: export, declarative apply in one
//! transaction, dry runs, secrets as `{set: true}`, and tools named before they exist.

use engine::catalog::{Catalog, CatalogOptions};
use engine::config::{self, Action, Document};
use std::collections::BTreeMap;

use engine::model::{Name, TenantSlug};
use engine::secret::SecretBox;
use engine::store::sources::ToolDefinition;
use engine::store::{self, Actor, Error, SecretInput};
use serde_json::{Value, json};
use sqlx::PgPool;

fn secrets() -> SecretBox {
    SecretBox::from_key(&[9; 32]).unwrap()
}

fn actor() -> Actor {
    Actor::token("ci")
}

/// The example of DESIGN.md's configuration document (as JSON).
fn example() -> Value {
    json!({
        "tools_enabled": true,
        "default_tags": ["files"],
        "servers": [{
            "name": "everything",
            "prefix": "everything",
            "transport": "streamable_http",
            "url": "http://127.0.0.1:3001/mcp",
            "headers": {"Authorization": {"secret": "Bearer abc"}},
            "tenant": null,
            "tags": ["demo"],
            "enabled": true,
            "on_definition_change": "hold"
        }],
        "groups": [{
            "name": "math",
            "description": "Arithmetic tools",
            "active_by_default": false,
            "tools": ["everything_get-sum"]
        }],
        "tenants": [{
            "slug": "acme",
            "name": "Acme Corp",
            "enabled_tags": ["demo", "files"],
            "groups": {"math": true},
            "meta_tool": false,
            "tools": {
                "everything_echo": {"enabled": false},
                "everything_get-sum": {
                    "name": "add_numbers",
                    "description": "Add two numbers",
                    "timeout_ms": 5000,
                    "presets": {"b": 1},
                    "secret_presets": {"apiKey": "sk-PLAINTEXT"}
                }
            }
        }]
    })
}

fn document(value: Value) -> Document {
    serde_json::from_value(value).unwrap()
}

async fn apply(pool: &PgPool, value: Value, dry_run: bool) -> Result<Vec<config::Change>, Error> {
    config::apply(pool, &secrets(), &actor(), &document(value), dry_run).await
}

async fn audit_count(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from audit_event").fetch_one(pool).await.unwrap()
}

fn tool(upstream: &str) -> ToolDefinition {
    ToolDefinition {
        upstream_name: upstream.into(),
        description: format!("{upstream} upstream"),
        input_schema: json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
        output_schema: None,
        annotations: json!({}),
        tags: vec![],
        strict: false,
        timeout_ms: None,
        meta: None,
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_fresh_installation_exports_the_defaults(pool: PgPool) {
    let exported = config::export(&pool).await.unwrap();
    assert_eq!(
        serde_json::to_value(&exported).unwrap(),
        json!({"tools_enabled": true, "default_tags": [], "servers": [], "groups": [], "tenants": [],
               "sign_in": {"local_passwords": true}})
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_design_example_applies_round_trips_and_binds_tools_once_discovered(pool: PgPool) {
    let dry = apply(&pool, example(), true).await.unwrap();
    let summary: Vec<(Action, &str, &str)> =
        dry.iter().map(|c| (c.action, c.kind, c.name.as_str())).collect();
    assert_eq!(
        summary,
        [
            (Action::Update, "settings", "global"),
            (Action::Create, "server", "everything"),
            (Action::Create, "group", "math"),
            (Action::Create, "tenant", "acme"),
        ]
    );
    assert_eq!(audit_count(&pool).await, 0, "a dry run writes nothing");
    assert_eq!(config::export(&pool).await.unwrap().tenants.len(), 0);

    let applied = apply(&pool, example(), false).await.unwrap();
    assert_eq!(applied, dry, "the dry run showed exactly what applying does");
    assert_eq!(audit_count(&pool).await, 4, "one audit event per changed entity");

    // The export is the document with its defaults filled in and secrets as `{set: true}`.
    let exported = serde_json::to_value(config::export(&pool).await.unwrap()).unwrap();
    assert_eq!(exported["servers"][0]["headers"], json!({"Authorization": {"set": true}}));
    assert_eq!(
        exported["tenants"][0]["tools"]["everything_get-sum"]["secret_presets"],
        json!({"apiKey": {"set": true}})
    );
    assert_eq!(exported["tenants"][0]["tools"]["everything_echo"], json!({"enabled": false}));
    assert_eq!(exported["groups"][0]["tools"], json!(["everything_get-sum"]));
    let raw: String = sqlx::query_scalar(
        "select (select json_agg(m)::text from mcp_server m) || (select json_agg(o)::text from tool_override o)
                || (select json_agg(a)::text from audit_event a)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(!raw.contains("sk-PLAINTEXT") && !raw.contains("Bearer abc"), "secrets are stored encrypted");

    // Applying the export changes nothing. The original again gives its secrets as values,
    // which are never compared with the stored ones (that would confirm guesses): only they
    // show as changes.
    assert_eq!(apply(&pool, exported.clone(), false).await.unwrap(), []);
    let again = apply(&pool, example(), true).await.unwrap();
    assert_eq!(
        again.iter().map(|c| (c.kind, c.name.as_str())).collect::<Vec<_>>(),
        [("server", "everything"), ("tenant", "acme")]
    );
    assert_eq!(audit_count(&pool).await, 4);

    // The server's tools arrive later; the group and the overrides bind to them.
    store::servers::record_discovery(
        &pool,
        &Name::parse("everything").unwrap(),
        &[tool("echo"), tool("get-sum")],
    )
    .await
    .unwrap();
    let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    let snapshot = catalog.snapshot();
    let acme = snapshot.tenant("acme").unwrap();
    let names: Vec<&str> = acme.tools().iter().map(|t| t.exposed_name.as_str()).collect();
    assert_eq!(names, ["add_numbers"], "echo is disabled; get-sum renamed, in the active group");
    let add = acme.resolve("add_numbers").unwrap();
    assert_eq!(add.description, "Add two numbers");
    assert_eq!(add.presets.get("b"), Some(&json!(1)));
    assert!(add.secret_presets.contains_key("apiKey"));
    drop(snapshot);

    // An upstream that drops the tool for a while loses none of the tenant's choices.
    let server = Name::parse("everything").unwrap();
    store::servers::record_discovery(&pool, &server, &[tool("echo")]).await.unwrap();
    assert_eq!(apply(&pool, exported.clone(), true).await.unwrap(), []);
    store::servers::record_discovery(&pool, &server, &[tool("echo"), tool("get-sum")]).await.unwrap();
    // Back, it is a new tool to pinning, held until approved.
    let id = sqlx::query_scalar("select id from tool where upstream_name = 'get-sum'")
        .fetch_one(&pool)
        .await
        .unwrap();
    store::servers::approve(&pool, &actor(), id).await.unwrap();
    let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    assert!(catalog.snapshot().tenant("acme").unwrap().resolve("add_numbers").is_some());
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn secrets_keep_change_and_refuse_to_keep_nothing(pool: PgPool) {
    apply(&pool, example(), false).await.unwrap();
    let mut changed = example();
    changed["servers"][0]["headers"]["Authorization"] = json!({"secret": "Bearer xyz"});
    changed["tenants"][0]["tools"]["everything_get-sum"]["secret_presets"]["apiKey"] = json!({"set": true});
    let diff = apply(&pool, changed, true).await.unwrap();
    assert_eq!(diff.len(), 1);
    assert_eq!(
        diff[0].after.as_ref().unwrap()["headers"]["Authorization"],
        json!({"set": true, "changed": true})
    );
    assert!(!serde_json::to_string(&diff).unwrap().contains("xyz"), "a diff never shows a secret");

    let mut kept = example();
    kept["servers"][0]["headers"]["Authorization"] = json!({"set": true});
    kept["tenants"][0]["tools"]["everything_get-sum"]["secret_presets"]["apiKey"] = json!({"set": true});
    assert_eq!(apply(&pool, kept, true).await.unwrap(), []);

    let mut nothing_to_keep = example();
    nothing_to_keep["servers"][0]["headers"]["X-Other"] = json!({"set": true});
    let err = apply(&pool, nothing_to_keep, true).await.unwrap_err();
    assert!(err.to_string().contains("servers.everything: secret `X-Other` has no stored value"), "{err}");
}

/// A dry run must not confirm a guess: the stored value and any other show alike.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_dry_run_shows_a_given_secret_as_changed_whether_or_not_it_is_the_stored_one(pool: PgPool) {
    apply(&pool, example(), false).await.unwrap();
    let header_in = |document: Value| async {
        let diff = apply(&pool, document, true).await.unwrap();
        let server = diff.into_iter().find(|c| c.kind == "server").expect("the server shows");
        server.after.unwrap()["headers"]["Authorization"].clone()
    };
    let right = header_in(example()).await;
    let mut wrong = example();
    wrong["servers"][0]["headers"]["Authorization"] = json!({"secret": "Bearer wrong"});
    assert_eq!(right, header_in(wrong).await);
    assert_eq!(right, json!({"set": true, "changed": true}));
}

/// A stored secret kept with `{set: true}` would follow the server to wherever its URL now
/// points: the server's own headers and the tenants' secret presets on its tools are refused,
/// with what to do; the tenants' own credentials (which the document does not show) are
/// dropped, said in the dry run and in an update's answer, and audited.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_kept_secret_does_not_follow_its_server_to_a_new_url(pool: PgPool) {
    apply(&pool, example(), false).await.unwrap();
    let (server, acme) = (Name::parse("everything").unwrap(), TenantSlug::parse("acme").unwrap());
    let credentials =
        BTreeMap::from([("Authorization".to_string(), SecretInput::Value("Bearer acme".into()))]);
    store::servers::set_credentials(&pool, &secrets(), &actor(), &server, &acme, &credentials).await.unwrap();
    let mut moved = serde_json::to_value(config::export(&pool).await.unwrap()).unwrap();
    moved["servers"][0]["url"] = json!("http://127.0.0.1:3002/mcp");
    let refused = |message: &str, place: &str, secret: &str| {
        message.contains(&format!("{place}: secret{secret} must be given again"))
            && message.contains("URL, command or working directory change")
    };
    for dry_run in [true, false] {
        let message = apply(&pool, moved.clone(), dry_run).await.unwrap_err().to_string();
        assert!(refused(&message, "servers.everything", " `Authorization`"), "{message}");
    }
    moved["servers"][0]["headers"]["Authorization"] = json!({"secret": "Bearer abc"});
    for dry_run in [true, false] {
        let message = apply(&pool, moved.clone(), dry_run).await.unwrap_err().to_string();
        assert!(refused(&message, "tenants.acme.tools.everything_get-sum", " preset `apiKey`"), "{message}");
    }
    moved["tenants"][0]["tools"]["everything_get-sum"]["secret_presets"]["apiKey"] =
        json!({"secret": "sk-NEW"});
    let dropped = ["tenant `acme`'s credentials", "tenant `acme`'s secret preset `apiKey` of tool `get-sum`"];
    for dry_run in [true, false] {
        let changes = apply(&pool, moved.clone(), dry_run).await.unwrap();
        let change = changes.iter().find(|c| c.kind == "server").expect("the server changes");
        assert_eq!(change.dropped, dropped, "{changes:?}");
    }
    let left: i64 = sqlx::query_scalar("select count(*) from mcp_credential").fetch_one(&pool).await.unwrap();
    assert_eq!(left, 0, "the tenant's credentials are gone");
    let audited: Value = sqlx::query_scalar(
        "select after from audit_event where action = 'drop_given_secrets' and entity_id = 'everything'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(audited["dropped"], json!(dropped));

    // An update through the admin API's service says what it dropped in its answer.
    store::servers::set_credentials(&pool, &secrets(), &actor(), &server, &acme, &credentials).await.unwrap();
    let mut config = config::export(&pool).await.unwrap().servers.remove(0);
    config.url = Some("http://127.0.0.1:3003/mcp".into());
    config.headers.insert("Authorization".into(), SecretInput::Value("Bearer abc".into()));
    let updated = store::servers::update(&pool, &secrets(), &actor(), &config).await.unwrap();
    assert_eq!(updated.dropped, dropped);
    let answer = serde_json::to_value(&updated).unwrap();
    assert_eq!((&answer["url"], &answer["dropped"]), (&json!("http://127.0.0.1:3003/mcp"), &json!(dropped)));
    let unmoved = store::servers::update(&pool, &secrets(), &actor(), &config).await.unwrap();
    assert!(serde_json::to_value(&unmoved).unwrap().get("dropped").is_none());
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenants_ceiling_round_trips_and_bounds_its_choices(pool: PgPool) {
    let mut limited = example();
    limited["tenants"][0]["ceiling"] =
        json!({"tags": ["demo", "files"], "sources": ["everything"], "groups": ["math"], "shell": false});
    apply(&pool, limited.clone(), false).await.unwrap();
    let exported = serde_json::to_value(config::export(&pool).await.unwrap()).unwrap();
    assert_eq!(exported["tenants"][0]["ceiling"], limited["tenants"][0]["ceiling"]);
    assert!(apply(&pool, exported, true).await.unwrap().is_empty(), "the export applies as no change");

    let mut beyond = limited.clone();
    beyond["tenants"][0]["enabled_tags"] = json!(["demo", "shell"]);
    let refused = apply(&pool, beyond, true).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "tenants.acme: tag(s) shell are beyond what the owner allows this tenant (demo, files)"
    );
    let mut group = limited.clone();
    group["tenants"][0]["ceiling"]["groups"] = json!([]);
    let refused = apply(&pool, group, true).await.unwrap_err();
    assert_eq!(refused.to_string(), "tenants.acme: group `math` is beyond what the owner allows this tenant");
    // Left out, the built-in shell is allowed, as before the key existed.
    let mut open = limited.clone();
    open["tenants"][0]["ceiling"] = json!({"tags": ["demo", "files"]});
    apply(&pool, open, false).await.unwrap();
    let exported = serde_json::to_value(config::export(&pool).await.unwrap()).unwrap();
    assert_eq!(exported["tenants"][0]["ceiling"], json!({"tags": ["demo", "files"]}));
    let mut typo = limited;
    typo["tenants"][0]["ceiling"] = json!({"tag": ["demo"]});
    assert!(serde_json::from_value::<Document>(typo).is_err(), "an unknown ceiling key is refused");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn what_the_document_leaves_out_is_removed(pool: PgPool) {
    apply(&pool, example(), false).await.unwrap();
    let mut fewer = serde_json::to_value(config::export(&pool).await.unwrap()).unwrap();
    fewer["tenants"] = json!([]);
    fewer["groups"] = json!([]);
    let changes = apply(&pool, fewer, false).await.unwrap();
    let summary: Vec<(Action, &str)> = changes.iter().map(|c| (c.action, c.kind)).collect();
    assert_eq!(summary, [(Action::Delete, "group"), (Action::Delete, "tenant")]);
    let exported = config::export(&pool).await.unwrap();
    assert!(exported.tenants.is_empty() && exported.groups.is_empty());
    assert_eq!(exported.servers.len(), 1);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_bad_document_is_refused_with_its_place_and_nothing_is_applied(pool: PgPool) {
    let mut unknown_group = example();
    unknown_group["tenants"][0]["groups"] = json!({"nope": true});
    let err = apply(&pool, unknown_group, false).await.unwrap_err();
    assert_eq!(err.to_string(), "tenants.acme.groups: group `nope` is not among the document's groups");

    // This one fails late, at the last tenant's tool, after everything else was written in
    // the transaction: all of it is rolled back.
    let mut unknown_tool = example();
    unknown_tool["tenants"][0]["tools"]["nobody_tool"] = json!({"enabled": false});
    let err = apply(&pool, unknown_tool, false).await.unwrap_err();
    assert!(
        err.to_string().starts_with("tenants.acme.tools.nobody_tool: `nobody_tool` names no tool"),
        "{err}"
    );
    assert_eq!(audit_count(&pool).await, 0);
    let exported = config::export(&pool).await.unwrap();
    assert!(exported.servers.is_empty() && exported.tenants.is_empty() && exported.default_tags.is_empty());

    let mut duplicate = example();
    duplicate["groups"] = json!([{"name": "math"}, {"name": "math"}]);
    duplicate["tenants"][0]["groups"] = json!({});
    let err = apply(&pool, duplicate, false).await.unwrap_err();
    assert_eq!(err.to_string(), "groups: `math` appears more than once");

    let unknown_key = serde_json::from_value::<Document>(json!({"tenant": []})).unwrap_err();
    assert!(unknown_key.to_string().contains("unknown field `tenant`"), "{unknown_key}");
}

/// A dry run fails exactly when the apply would (the panel's Preview passed a document its
/// Apply then refused), and keeps nothing of what it tried.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_dry_run_fails_exactly_when_the_apply_would_and_keeps_nothing(pool: PgPool) {
    let mut shared_prefix = example();
    let mut mirror = shared_prefix["servers"][0].clone();
    mirror["name"] = json!("mirror");
    mirror["url"] = json!("http://127.0.0.1:3002/mcp");
    shared_prefix["servers"].as_array_mut().unwrap().push(mirror);
    let mut unknown_tool = example();
    unknown_tool["tenants"][0]["tools"]["nobody_tool"] = json!({"enabled": false});
    for (document, says) in [
        (shared_prefix, "servers.mirror: the server `everything` has the prefix `everything` already"),
        (unknown_tool, "tenants.acme.tools.nobody_tool: `nobody_tool` names no tool"),
    ] {
        for dry_run in [true, false] {
            let err = apply(&pool, document.clone(), dry_run).await.unwrap_err();
            assert!(err.to_string().starts_with(says), "dry run {dry_run}: {err}");
        }
    }
    let changes = apply(&pool, example(), true).await.unwrap();
    assert_eq!(changes.len(), 4, "{changes:?}");
    assert_eq!(audit_count(&pool).await, 0);
    let exported = config::export(&pool).await.unwrap();
    assert!(exported.servers.is_empty() && exported.tenants.is_empty() && exported.groups.is_empty());
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenants_limits_round_trip_and_a_wrong_limit_is_refused_with_its_place(pool: PgPool) {
    let mut limited = example();
    limited["tenants"][0]["limits"] = json!({"per_minute": 600, "per_day": 100000, "concurrent": 16});
    limited["tenants"][0]["tool_limits"] = json!({"everything_get-sum": {"per_minute": 10}});
    apply(&pool, limited.clone(), false).await.unwrap();
    let exported = serde_json::to_value(config::export(&pool).await.unwrap()).unwrap();
    assert_eq!(exported["tenants"][0]["limits"], limited["tenants"][0]["limits"]);
    assert_eq!(exported["tenants"][0]["tool_limits"], limited["tenants"][0]["tool_limits"]);
    assert!(
        apply(&pool, exported.clone(), true).await.unwrap().is_empty(),
        "the export applies as no change"
    );

    // Left out, they are removed like anything else the document leaves out.
    let mut unlimited = exported;
    unlimited["tenants"][0].as_object_mut().unwrap().retain(|k, _| k != "limits" && k != "tool_limits");
    let changes = apply(&pool, unlimited, false).await.unwrap();
    assert_eq!(changes[0].before.as_ref().unwrap()["limits"]["per_minute"], 600);
    assert_eq!(changes[0].after.as_ref().unwrap()["limits"], json!({}));
    let exported = serde_json::to_value(config::export(&pool).await.unwrap()).unwrap();
    assert!(exported["tenants"][0].get("limits").is_none(), "{exported}");

    let mut zero = example();
    zero["tenants"][0]["limits"] = json!({"per_minute": 0});
    let err = serde_json::from_value::<Document>(zero).unwrap_err();
    assert!(err.to_string().contains("nonzero"), "{err}");
    let mut typo = example();
    typo["tenants"][0]["limits"] = json!({"per_minut": 5});
    let err = serde_json::from_value::<Document>(typo).unwrap_err();
    assert!(err.to_string().contains("unknown field `per_minut`"), "{err}");
    let mut nobody = example();
    nobody["tenants"][0]["tool_limits"] = json!({"nobody_tool": {"per_day": 5}});
    let err = apply(&pool, nobody, false).await.unwrap_err();
    assert!(
        err.to_string().starts_with("tenants.acme.tool_limits.nobody_tool: `nobody_tool` names no tool"),
        "{err}"
    );
}
