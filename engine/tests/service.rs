//! The application layer against a real PostgreSQL database and a live catalog.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use engine::admin::Scope;
use engine::exec::{CallHooks, CallRequest};
use engine::model::CallLimits;
use engine::model::Ceiling;
use engine::model::{Name, SourceKind, TenantSlug};
use engine::secret::SecretBox;
use engine::service::{Admin, Options, Owner, Services, global, servers, tenants};
use engine::store::audit::AuditFilter;
use engine::store::overrides::OverrideInput;
use engine::store::servers::ServerConfig;
use engine::store::sources::{NewSource, ToolDefinition};
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor, SecretInput};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

async fn services(pool: &PgPool) -> Services {
    let secrets = SecretBox::from_key(&[0; 32]).unwrap();
    Services::start(pool.clone(), secrets, &[], Options::default()).await.unwrap()
}

fn owner() -> Owner {
    Admin::signed_in("root", Scope::Everything).owner().unwrap()
}

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
        meta: None,
    }
}

/// A tenant's detail joins what is stored about it (keys, overrides, groups) with what its
/// LLM applications see now: the catalog's tools under their exposed names, with their size.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenants_detail_is_its_configuration_and_exactly_what_its_llm_sees(pool: PgPool) {
    let (actor, acme) = (Actor::system(), TenantSlug::parse("acme").unwrap());
    store::tenants::create(&pool, &actor, &acme, "Acme").await.unwrap();
    store::keys::create(&pool, &actor, &acme, "ci", None, Default::default()).await.unwrap();
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
    let services = services(&pool).await;
    store::overrides::set(
        &pool,
        &services.secrets,
        &actor,
        &acme,
        ids[1],
        &renamed,
        engine::catalog::check_presets,
    )
    .await
    .unwrap();

    let owner = Admin::signed_in("root", Scope::Everything);
    let managed = owner.tenant("acme").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let detail = loop {
        let detail = tenants::detail(&services, &managed).await.unwrap();
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
    assert!(detail.snapshot_version <= services.catalog.snapshot().version);

    let missing = tenants::detail(&services, &owner.tenant("nobody").unwrap()).await.unwrap_err();
    assert!(matches!(missing, store::Error::NotFound(_)), "{missing:?}");
}

/// A tenant administrator reaches only their tenants — another is answered as unknown, as if
/// it did not exist — and within theirs cannot do what only owners may: set the ceiling or
/// delete it. An owner can.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_administrator_manages_only_their_tenants_and_not_their_ceiling(pool: PgPool) {
    let services = services(&pool).await;
    for slug in ["acme", "globex"] {
        store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse(slug).unwrap(), slug)
            .await
            .unwrap();
    }
    let jane = Admin::signed_in("jane", Scope::Tenants(vec!["acme".into()]));
    let listed = tenants::list(&services, &jane).await.unwrap();
    assert_eq!(listed.iter().map(|t| t.slug.as_str()).collect::<Vec<_>>(), ["acme"]);
    for hidden in ["globex", "nobody", "Not A Slug"] {
        let err = jane.tenant(hidden).unwrap_err();
        assert_eq!(err.to_string(), format!("no tenant `{hidden}`"));
    }
    assert!(matches!(jane.owner(), Err(engine::Error::Forbidden(_))));

    let acme = jane.tenant("acme").unwrap();
    let meta = TenantUpdate { meta_tool: Some(true), ..Default::default() };
    assert!(tenants::update(&services, &acme, meta).await.unwrap().meta_tool);
    let ceiling = TenantUpdate { ceiling: Some(Ceiling::default()), ..Default::default() };
    let refused = tenants::update(&services, &acme, ceiling.clone()).await.unwrap_err();
    assert!(matches!(refused, engine::Error::Forbidden(_)), "{refused:?}");
    assert!(matches!(tenants::delete(&services, &acme).await, Err(engine::Error::Forbidden(_))));

    let owner = Admin::signed_in("root", Scope::Everything);
    let acme = owner.tenant("acme").unwrap();
    tenants::update(&services, &acme, ceiling).await.unwrap();
    tenants::delete(&services, &acme).await.unwrap();
    assert!(tenants::list(&services, &owner).await.unwrap().iter().all(|t| t.slug != "acme"));
}

fn limits(minute: Option<u32>, day: Option<u32>, concurrent: Option<u32>) -> CallLimits {
    let n = |value: Option<u32>| value.and_then(NonZeroU32::new);
    CallLimits { per_minute: n(minute), per_day: n(day), concurrent: n(concurrent) }
}

/// The tenants `slugs`, with no ceiling.
async fn create_tenants(pool: &PgPool, slugs: &[&str]) {
    for slug in slugs {
        store::tenants::create(pool, &Actor::system(), &TenantSlug::parse(slug).unwrap(), slug)
            .await
            .unwrap();
    }
}

/// A source `name` (the tenant `owner`'s, or shared) with the one tool `tool_name`; its id.
async fn source(pool: &PgPool, name: &str, owner: Option<&str>, tool_name: &str) -> Uuid {
    let new = NewSource {
        kind: SourceKind::Mcp,
        name: Name::parse(name).unwrap(),
        prefix: name.into(),
        tags: Vec::new(),
        tenant: owner.map(|slug| TenantSlug::parse(slug).unwrap()),
    };
    store::sources::create(pool, &Actor::system(), &new).await.unwrap();
    store::sources::sync_tools(pool, &Actor::system(), &new.name, &[tool(tool_name)]).await.unwrap()[0]
}

/// Sets the owner's ceiling of `slug`.
async fn set_ceiling(pool: &PgPool, slug: &str, ceiling: Ceiling) {
    let update = TenantUpdate { ceiling: Some(ceiling), ..Default::default() };
    store::tenants::update(pool, &Actor::system(), &TenantSlug::parse(slug).unwrap(), update).await.unwrap();
}

/// An owner sets a key's limits as they like; a tenant administrator or a tenant's token only
/// tightens them (each limit the key has stays, no higher), so neither can undo an owner's
/// limit, and a refusal names what must be kept. A key a tenant administrator creates is under
/// the limits they choose (the tenant's own limits, an owner's, bound it).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn only_an_owner_may_remove_or_raise_a_keys_limits(pool: PgPool) {
    let services = services(&pool).await;
    create_tenants(&pool, &["acme"]).await;
    let root = Admin::signed_in("root", Scope::Everything);
    let jane = Admin::signed_in("jane", Scope::Tenants(vec!["acme".into()]));
    let token = Admin::token("ci", Scope::Tenants(vec!["acme".into()]));
    let set_by_owner = limits(Some(100), None, Some(5));
    let (key, _) = tenants::create_key(&services, &root.tenant("acme").unwrap(), "ci", None, set_by_owner)
        .await
        .unwrap();

    let tighter = limits(Some(50), Some(1000), Some(5));
    let set =
        tenants::set_key_limits(&services, &jane.tenant("acme").unwrap(), key.id, tighter).await.unwrap();
    assert_eq!(set.limits.0, tighter);
    for (admin, looser, kept) in [
        (&jane, limits(Some(60), Some(1000), Some(5)), "per_minute at most 50"),
        (&token, limits(Some(50), None, Some(5)), "per_day at most 1000"),
        (&jane, set_by_owner, "per_minute at most 50, per_day at most 1000"),
        (&token, CallLimits::default(), "per_minute at most 50, per_day at most 1000, concurrent at most 5"),
    ] {
        let refused = tenants::set_key_limits(&services, &admin.tenant("acme").unwrap(), key.id, looser)
            .await
            .unwrap_err();
        assert!(matches!(refused, engine::Error::Forbidden(_)), "{refused:?}");
        assert_eq!(
            refused.to_string(),
            format!("only an owner may remove or raise a key's limits: keep {kept}")
        );
    }
    let keys = tenants::keys(&services, &jane.tenant("acme").unwrap()).await.unwrap();
    assert_eq!(keys[0].limits.0, tighter, "a refused change changes nothing");

    let acme = root.tenant("acme").unwrap();
    let set = tenants::set_key_limits(&services, &acme, key.id, CallLimits::default()).await.unwrap();
    assert!(set.limits.0.is_none());
    let own = limits(Some(1000), None, None);
    let (key, _) =
        tenants::create_key(&services, &jane.tenant("acme").unwrap(), "own", None, own).await.unwrap();
    assert_eq!(key.limits.0, own);
}

/// A tenant overrides only the tools it may use: another tenant's, or a shared one beyond its
/// ceiling, is answered exactly as an unknown tool is, to an owner too, and a bad preset for it
/// does not list the tool's parameters.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_cannot_override_a_tool_it_may_not_use_nor_learn_that_it_exists(pool: PgPool) {
    let services = services(&pool).await;
    create_tenants(&pool, &["acme", "globex"]).await;
    let allowed = source(&pool, "up", None, "echo").await;
    let beyond = source(&pool, "hidden", None, "peek").await;
    let theirs = source(&pool, "theirs", Some("globex"), "mine").await;
    set_ceiling(&pool, "acme", Ceiling { sources: Some(vec!["up".into()]), ..Default::default() }).await;

    let bad =
        OverrideInput { presets: json!({"nope": 1}).as_object().unwrap().clone(), ..Default::default() };
    let jane = Admin::signed_in("jane", Scope::Tenants(vec!["acme".into()]));
    let root = Admin::signed_in("root", Scope::Everything);
    for admin in [&jane, &root] {
        let acme = admin.tenant("acme").unwrap();
        let refused = tenants::set_override(&services, &acme, allowed, &bad).await.unwrap_err();
        assert!(refused.to_string().contains("(its parameters: text)"), "{refused}");
        for tool_id in [beyond, theirs, Uuid::new_v4()] {
            let refused = tenants::set_override(&services, &acme, tool_id, &bad).await.unwrap_err();
            assert!(matches!(refused, engine::Error::NotFound(_)), "{refused:?}");
            assert_eq!(refused.to_string(), format!("tool {tool_id} not found"));
        }
    }
    let hide = OverrideInput { enabled: Some(false), ..Default::default() };
    tenants::set_override(&services, &jane.tenant("acme").unwrap(), allowed, &hide).await.unwrap();
    let overrides = store::overrides::list(&pool, &TenantSlug::parse("acme").unwrap()).await.unwrap();
    assert_eq!(overrides.iter().map(|o| o.tool_id).collect::<Vec<_>>(), [allowed]);
}

/// Presets must be parameters of the tool, and plain ones must fit its schema; a required
/// parameter fixed in advance is the point of a preset (the rest come per call).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn presets_must_be_parameters_of_the_tool_and_fit_their_schema(pool: PgPool) {
    let services = services(&pool).await;
    create_tenants(&pool, &["acme"]).await;
    let echo = source(&pool, "up", None, "echo").await;
    let root = Admin::signed_in("root", Scope::Everything);
    let acme = root.tenant("acme").unwrap();
    let presets = |value: serde_json::Value| OverrideInput {
        presets: value.as_object().cloned().unwrap(),
        ..Default::default()
    };
    let refusal = |input: OverrideInput| {
        let (services, acme) = (&services, &acme);
        async move {
            match tenants::set_override(services, acme, echo, &input).await {
                Err(engine::Error::Invalid(message)) => message,
                other => panic!("accepted or failed otherwise: {other:?}"),
            }
        }
    };
    let unknown = refusal(presets(json!({"nope": 1, "text": "x"}))).await;
    assert_eq!(unknown, "preset `nope`: the tool has no parameter of that name (its parameters: text)");
    let wrong_type = refusal(presets(json!({"text": 42}))).await;
    assert_eq!(wrong_type, "presets do not fit the tool's schema: /text: expected string, got integer");
    let secret = OverrideInput {
        secret_presets: [("token".to_string(), SecretInput::Value("v".into()))].into(),
        ..Default::default()
    };
    assert!(refusal(secret).await.starts_with("preset `token`: the tool has no parameter"));
    tenants::set_override(&services, &acme, echo, &presets(json!({"text": "fixed"}))).await.unwrap();
}

/// An override's description is capped as an upstream's is (an LLM reads it with every tool
/// list): one over the cap is refused, saying the cap and its size; one at the cap is kept.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_override_description_longer_than_the_cap_is_refused(pool: PgPool) {
    let services = services(&pool).await;
    create_tenants(&pool, &["acme"]).await;
    let echo = source(&pool, "up", None, "echo").await;
    let root = Admin::signed_in("root", Scope::Everything);
    let acme = root.tenant("acme").unwrap();
    let cap = store::overrides::MAX_DESCRIPTION_BYTES;
    let described =
        |bytes: usize| OverrideInput { description: Some("é".repeat(bytes / 2)), ..Default::default() };

    let refused = tenants::set_override(&services, &acme, echo, &described(cap + 2)).await.unwrap_err();
    assert!(matches!(refused, engine::Error::Invalid(_)), "{refused:?}");
    let said = refused.to_string();
    assert!(
        said.contains(&format!("at most {cap} bytes")) && said.contains(&format!("{} bytes", cap + 2)),
        "{said}"
    );
    assert!(store::overrides::list(&pool, &TenantSlug::parse("acme").unwrap()).await.unwrap().is_empty());

    tenants::set_override(&services, &acme, echo, &described(cap)).await.unwrap();
}

/// A rename to a name another of the tenant's tools goes by would take both out of its list:
/// refused, naming the tool that has it; a tool keeps its own name.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_override_may_not_rename_a_tool_to_a_name_another_tool_has(pool: PgPool) {
    let services = services(&pool).await;
    create_tenants(&pool, &["acme"]).await;
    source(&pool, "up", None, "echo").await;
    let shout = source(&pool, "other", None, "shout").await;
    let root = Admin::signed_in("root", Scope::Everything);
    let acme = root.tenant("acme").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while tenants::detail(&services, &acme).await.unwrap().tools.len() < 2 {
        assert!(Instant::now() < deadline, "the tools never reached the catalog");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let clash = OverrideInput { name: Some("up_echo".into()), ..Default::default() };
    let refused = tenants::set_override(&services, &acme, shout, &clash).await.unwrap_err();
    assert!(matches!(refused, engine::Error::Invalid(_)), "{refused:?}");
    assert!(refused.to_string().contains("`up_echo` is the name of `echo` of server `up`"), "{refused}");
    assert!(store::overrides::list(&pool, &TenantSlug::parse("acme").unwrap()).await.unwrap().is_empty());

    let own = OverrideInput { name: Some("other_shout".into()), ..Default::default() };
    tenants::set_override(&services, &acme, shout, &own).await.unwrap();
}

/// A tenant administrator's view of their tenant names only what its ceiling admits: the
/// groups within it, the shared sources and tools the tenant may use (not another tenant's).
/// An owner's names every group, shared source and tool, to choose a ceiling from.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_administrator_sees_only_the_groups_and_sources_within_the_ceiling(pool: PgPool) {
    let services = services(&pool).await;
    create_tenants(&pool, &["acme", "globex"]).await;
    let echo = source(&pool, "up", None, "echo").await;
    let peek = source(&pool, "hidden", None, "peek").await;
    source(&pool, "theirs", Some("globex"), "mine").await;
    // Overridden while the tenant could still use it.
    let acme = TenantSlug::parse("acme").unwrap();
    let renamed = OverrideInput { name: Some("peek_renamed".into()), ..Default::default() };
    store::overrides::set(
        &pool,
        &services.secrets,
        &Actor::system(),
        &acme,
        peek,
        &renamed,
        engine::catalog::check_presets,
    )
    .await
    .unwrap();
    for group in ["math", "ops"] {
        store::groups::write(&pool, &Actor::system(), &Name::parse(group).unwrap(), group, false, true)
            .await
            .unwrap();
    }
    let ceiling =
        Ceiling { sources: Some(vec!["up".into()]), groups: Some(vec!["math".into()]), ..Default::default() };
    set_ceiling(&pool, "acme", ceiling).await;
    let jane = Admin::signed_in("jane", Scope::Tenants(vec!["acme".into()]));
    let root = Admin::signed_in("root", Scope::Everything);
    let groups =
        |detail: tenants::TenantDetail| detail.groups.into_iter().map(|g| g.group).collect::<Vec<_>>();

    let hers = tenants::detail(&services, &jane.tenant("acme").unwrap()).await.unwrap();
    assert!(hers.overrides.is_empty(), "{:?}", hers.overrides);
    assert_eq!(groups(hers), ["math"]);
    let hers = tenants::choices(&services, &jane.tenant("acme").unwrap()).await.unwrap();
    assert_eq!(hers.shared_sources, ["up"]);
    assert_eq!(hers.usable.iter().map(|t| t.id).collect::<Vec<_>>(), [echo]);
    assert_eq!(hers.names.into_keys().collect::<Vec<_>>(), [echo]);

    let all = tenants::detail(&services, &root.tenant("acme").unwrap()).await.unwrap();
    assert_eq!(all.overrides.len(), 1);
    assert_eq!(groups(all), ["math", "ops"]);
    let all = tenants::choices(&services, &root.tenant("acme").unwrap()).await.unwrap();
    assert_eq!(all.shared_sources, ["hidden", "up"]);
    assert_eq!(all.usable.iter().map(|t| t.id).collect::<Vec<_>>(), [echo]);
    assert_eq!(all.names.len(), 3);
}

/// A server's detail: what is stored, the health of its connection (an unreachable server is
/// reported, not hidden), its tools, and nothing awaiting approval yet.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_servers_detail_has_its_configuration_and_its_connections_health(pool: PgPool) {
    let services = services(&pool).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let down = ServerConfig::http(Name::parse("down").unwrap(), format!("http://{closed}/mcp"));
    store::servers::create(&pool, &services.secrets, &Actor::system(), &down).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    let detail = loop {
        let detail = servers::detail(&services, &owner(), &down.name).await.unwrap();
        if detail.entry.connections.iter().any(|c| c.last_error.is_some()) {
            break detail;
        }
        assert!(Instant::now() < deadline, "the failed connection was never reported: {detail:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(detail.entry.server.url.as_deref(), down.url.as_deref());
    assert!(detail.tools.is_empty() && detail.pending.is_empty());
    let listed = servers::list(&services, &owner()).await.unwrap();
    assert_eq!(listed.iter().map(|e| e.server.source.name.as_str()).collect::<Vec<_>>(), ["down"]);

    let nothing = servers::detail(&services, &owner(), &Name::parse("nothing").unwrap()).await.unwrap_err();
    assert!(matches!(nothing, store::Error::NotFound(_)), "{nothing:?}");
}

/// With `TOOLGATE_STDIO_COMMANDS` set (here to `npx`), a stdio server with another program is
/// refused wherever servers are written or tested, and one stored before the list was set is
/// never started: its connection is down, and its health says why.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn stdio_servers_start_only_the_programs_toolgate_stdio_commands_lists(pool: PgPool) {
    use std::collections::BTreeMap;

    use engine::service::global;
    use engine::store::servers::EnvValue;
    use engine::upstream::{ConnectionStatus, UpstreamConfig};

    let marker = std::env::temp_dir().join(format!("toolgate-stdio-{}", Uuid::new_v4()));
    let runner = ServerConfig::stdio(
        Name::parse("runner").unwrap(),
        "sh",
        vec!["-c".into(), format!("touch '{}'; exec cat", marker.display())],
    );
    // Stored as before the list was set: the store itself does not know it.
    let secrets = SecretBox::from_key(&[0; 32]).unwrap();
    store::servers::create(&pool, &secrets, &Actor::system(), &runner).await.unwrap();
    let upstream = UpstreamConfig { stdio_commands: vec!["npx".into()], ..Default::default() };
    let options = Options { upstream, ..Default::default() };
    let services = Services::start(pool.clone(), secrets, &[], options).await.unwrap();
    let refusal = "command `sh` is not among TOOLGATE_STDIO_COMMANDS (npx): this Toolgate starts only those \
                   programs for stdio servers";
    let refused = |result: Result<(), store::Error>, expected: &str| match result {
        Err(store::Error::Invalid(message)) => assert_eq!(message, expected),
        other => panic!("not refused as `{expected}`: {other:?}"),
    };

    let other = ServerConfig { name: Name::parse("other").unwrap(), ..runner.clone() };
    refused(servers::create(&services, &owner(), &other).await.map(drop), refusal);
    refused(servers::update(&services, &owner(), &runner).await.map(drop), refusal);
    refused(servers::probe(&services, &owner(), &other).await.map(drop), refusal);
    let document = global::export_config(&services, &owner()).await.unwrap();
    let applied = global::apply_config(&services, &owner(), &document, true).await.map(drop);
    refused(applied, &format!("servers.runner: {refusal}"));
    // An allowed bare name may not be pointed at another program through its `PATH`.
    let npx = ServerConfig {
        enabled: false,
        ..ServerConfig::stdio(Name::parse("tools").unwrap(), "npx", vec!["-y".into(), "@acme/tools".into()])
    };
    let elsewhere = ServerConfig {
        env: BTreeMap::from([("PATH".to_string(), EnvValue::Plain("/tmp".into()))]),
        ..npx.clone()
    };
    refused(
        servers::create(&services, &owner(), &elsewhere).await.map(drop),
        "a stdio server may not set `PATH` while TOOLGATE_STDIO_COMMANDS is set: it would start other code \
         than the program `npx`",
    );
    servers::create(&services, &owner(), &npx).await.unwrap();
    assert_eq!(servers::stdio_commands(&services, &owner()), ["npx"]);

    let deadline = Instant::now() + Duration::from_secs(10);
    let health = loop {
        let detail = servers::detail(&services, &owner(), &runner.name).await.unwrap();
        if let Some(failed) = detail.entry.connections.iter().find(|c| c.last_error.is_some()) {
            break failed.clone();
        }
        assert!(Instant::now() < deadline, "the refused server's health never said why: {detail:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(health.status, ConnectionStatus::Down);
    assert_eq!(health.last_error.as_deref(), Some(format!("not started: {refusal}").as_str()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!marker.exists(), "the refused program ran");
}

/// A value a newer Toolgate stored (here a transport this version does not know, written past
/// the check a newer migration replaced) fails the read, rather than being taken for another
/// transport and connected as one.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_transport_this_version_does_not_know_is_an_error_not_another_transport(pool: PgPool) {
    let services = services(&pool).await;
    let server = ServerConfig::http(Name::parse("future").unwrap(), "http://127.0.0.1:9/mcp");
    store::servers::create(&pool, &services.secrets, &Actor::system(), &server).await.unwrap();
    assert!(servers::list(&services, &owner()).await.is_ok());
    sqlx::query("alter table mcp_server drop constraint mcp_server_transport_check")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("update mcp_server set transport = 'websocket'").execute(&pool).await.unwrap();
    let read = servers::list(&services, &owner()).await;
    assert!(matches!(read, Err(store::Error::Internal(_))), "{read:?}");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn activity_is_counted_per_bar_tenant_source_and_tool_within_the_callers_scope(pool: PgPool) {
    use engine::service::global;
    use engine::store::invocations::{self, Window};
    let services = services(&pool).await;
    for slug in ["acme", "globex"] {
        store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse(slug).unwrap(), slug)
            .await
            .unwrap();
    }
    // Three calls to `s_x` five minutes ago (one failed, one its client gave up on after 13 s),
    // one to `s_y` cancelled, one built-in call two hours ago.
    sqlx::query(
        "insert into invocation (at, tenant_id, tool_name, source, caller, status, latency_us, result_bytes, correlation_id)
         select now() - c.ago, t.id, c.tool, c.source, 'admin:root', c.status, c.us, 0, c.correlation
         from (values ('acme', '5 minutes'::interval, 's_x', 's', 'ok', 10000, null),
                      ('acme', '5 minutes', 's_x', 's', 'failed', 30000, 'c-1'),
                      ('acme', '5 minutes', 's_x', 's', 'cancelled', 13000000, null),
                      ('acme', '5 minutes', 's_y', 's', 'cancelled', 13000000, null),
                      ('globex', '2 hours', 'read_file', 'files', 'ok', 5000, null))
              as c(tenant, ago, tool, source, status, us, correlation)
         join tenant t on t.slug = c.tenant",
    )
    .execute(&pool)
    .await
    .unwrap();
    let everyone = Admin::signed_in("root", Scope::Everything);

    let hour = global::activity(&services, &everyone, Window::Hour, None).await.unwrap();
    assert_eq!(hour.buckets.len(), 60, "a bar a minute, empty ones too");
    let counted =
        hour.buckets.iter().fold((0, 0, 0), |(c, e, x), b| (c + b.calls, e + b.errors, x + b.cancelled));
    assert_eq!(counted, (4, 1, 2));
    let acme = &hour.tenants[0];
    assert_eq!((acme.name.as_str(), acme.calls, acme.errors, acme.cancelled), ("acme", 4, 1, 2));
    assert_eq!(hour.sources.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["s"]);
    // Latency is of the calls that finished: a cancelled call's is its client's patience.
    let latency = |tool: &engine::store::invocations::Latency| (tool.name.clone(), tool.p50_ms, tool.p95_ms);
    assert_eq!(
        hour.tools.iter().map(latency).collect::<Vec<_>>(),
        [("s_x".into(), Some(20.0), Some(29.0)), ("s_y".into(), None, None)]
    );

    let day = global::activity(&services, &everyone, Window::Day, None).await.unwrap();
    assert_eq!(day.buckets.len(), 48);
    assert_eq!(day.buckets.iter().map(|b| b.calls).sum::<i64>(), 5);

    // A tenant administrator sees her tenants' calls, and no other tenant even when asked.
    let jane = Admin::signed_in("jane", Scope::Tenants(vec!["globex".into()]));
    let hers = global::activity(&services, &jane, Window::Week, None).await.unwrap();
    assert_eq!(hers.tenants.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["globex"]);
    assert!(matches!(
        global::activity(&services, &jane, Window::Week, Some("acme")).await,
        Err(engine::Error::NotFound(_))
    ));
    let one = global::activity(&services, &everyone, Window::Day, Some("globex")).await.unwrap();
    assert_eq!(one.buckets.iter().map(|b| b.calls).sum::<i64>(), 1);

    let (server, failures) = servers::calls(&services, &owner(), &Name::parse("s").unwrap()).await.unwrap();
    assert_eq!(server.buckets.iter().map(|b| b.calls).sum::<i64>(), 4);
    assert_eq!(failures.len(), 1);
    assert_eq!((failures[0].status.as_str(), failures[0].correlation_id.as_deref()), ("failed", Some("c-1")));
    assert!(invocations::failures(&pool, "files", 5).await.unwrap().is_empty());
}

/// A tenant made by an administrator starts without the built-in shell tools (programs on
/// Toolgate's host); an owner's ceiling lets them in, and takes them out again.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_new_tenant_gets_the_built_in_shell_only_once_an_owner_allows_it(pool: PgPool) {
    let builtins = engine::builtin::BuiltinConfig {
        files_root: std::env::temp_dir().join(format!("toolgate-shell-default-{}", Uuid::new_v4())),
        files_quota: 1 << 20,
        shell_allow: vec!["echo".parse().unwrap()],
        shell_timeout: Duration::from_secs(1),
        shell_output_cap: 1000,
    };
    let secrets = SecretBox::from_key(&[0; 32]).unwrap();
    let providers = engine::builtin::providers(&builtins);
    engine::builtin::register(&pool, &providers).await.unwrap();
    let services = Services::start(pool.clone(), secrets, &providers, Options::default()).await.unwrap();
    tenants::create(&services, &owner(), &TenantSlug::parse("acme").unwrap(), "Acme").await.unwrap();
    let admin = Admin::signed_in("root", Scope::Everything);
    let acme = admin.tenant("acme").unwrap();
    let offered = |shell: bool| {
        let (services, acme) = (&services, &acme);
        async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let detail = tenants::detail(services, acme).await.unwrap();
                let names: Vec<&str> = detail.tools.iter().map(|t| t.name.as_str()).collect();
                if names.contains(&"write_text_file") && names.contains(&"run_command") == shell {
                    assert!(!detail.tenant.ceiling.shell || shell);
                    return;
                }
                assert!(Instant::now() < deadline, "shell {shell}: the tenant sees {names:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    offered(false).await;
    let allow =
        |shell| TenantUpdate { ceiling: Some(Ceiling { shell, ..Ceiling::default() }), ..Default::default() };
    tenants::update(&services, &acme, allow(true)).await.unwrap();
    offered(true).await;
    tenants::update(&services, &acme, allow(false)).await.unwrap();
    offered(false).await;
}

/// A tenant administrator reads the audit log of their tenants and nothing else (not another
/// tenant's, not the shared configuration's); an owner reads all of it. A test run is audited
/// when it is asked for, with what it was asked with, even one that fails.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_administrator_reads_the_audit_of_their_tenants_only(pool: PgPool) {
    create_tenants(&pool, &["acme", "globex"]).await;
    source(&pool, "up", None, "echo").await;
    let services = services(&pool).await;
    let root = Admin::signed_in("root", Scope::Everything);
    let jane = Admin::signed_in("jane", Scope::Tenants(vec!["acme".into()]));
    for slug in ["acme", "globex"] {
        let tenant = root.tenant(slug).unwrap();
        tenants::create_key(&services, &tenant, "ci", None, CallLimits::default()).await.unwrap();
    }
    let asked = CallRequest { name: "nope".into(), arguments: json!({"text": "hi"}) };
    tenants::invoke(&services, &jane.tenant("acme").unwrap(), asked, CallHooks::default()).await.unwrap_err();

    let seen = |admin| {
        let services = &services;
        async move {
            let events = global::audit(services, admin, &AuditFilter::default()).await.unwrap();
            events
                .into_iter()
                .map(|e| format!("{} {} {}", e.action, e.entity_kind, e.entity_id))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(seen(&jane).await, ["test_call tenant acme", "create_key tenant acme", "create tenant acme"]);
    let everything = seen(&root).await;
    for event in ["create source up", "create_key tenant globex", "test_call tenant acme"] {
        assert!(everything.iter().any(|e| e == event), "{event} in {everything:?}");
    }
    let filter = AuditFilter { entity_id: Some("acme".into()), limit: Some(1), ..Default::default() };
    let run = &global::audit(&services, &jane, &filter).await.unwrap()[0];
    assert_eq!(run.actor, "admin:jane");
    assert_eq!(run.after, Some(json!({"tool": "nope", "arguments": {"text": "hi"}})));
}
