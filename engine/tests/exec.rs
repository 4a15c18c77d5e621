//! Tool execution end to end: tools registered in a real database, resolved through the live
//! catalog, run by the executor.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use engine::Missing;
use engine::builtin;
use engine::catalog::{Catalog, CatalogOptions, CatalogTool};
use engine::exec::{CallRequest, ExecConfig, Executor, Status};
use engine::model::limits::Limits;
use engine::model::limits::{Kind, Scope};
use engine::model::{CallLimits, Limited};
use engine::model::{Name, SourceKind, TenantSlug};
use engine::secret::SecretBox;
use engine::store::SecretInput;
use engine::store::overrides::OverrideInput;
use engine::store::sources::{NewSource, ToolDefinition};
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor};
use engine::tool::{Caller, Tool, ToolContext, ToolError, ToolOutput, ToolProvider, ToolResult, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

struct Add;
impl TypedTool for Add {
    type Args = AddArgs;
    const NAME: &'static str = "add";
    const DESCRIPTION: &'static str = "Add two integers.";
    async fn run(&self, args: AddArgs, _: &ToolContext) -> ToolResult {
        Ok(ToolOutput::text((args.a + args.b).to_string()))
    }
}

/// Returns its arguments and context, to see what reached the tool.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    to: String,
    #[serde(default)]
    account: Option<i64>,
    #[serde(default, rename = "apiKey")]
    api_key: Option<String>,
}

struct Echo;
impl TypedTool for Echo {
    type Args = EchoArgs;
    const NAME: &'static str = "echo";
    const DESCRIPTION: &'static str = "Echo arguments and context.";
    async fn run(&self, args: EchoArgs, ctx: &ToolContext) -> ToolResult {
        ctx.progress(1.0, Some(2.0), "halfway");
        Ok(ToolOutput::json(json!({
            "to": args.to, "account": args.account, "apiKey": args.api_key,
            "tenant": ctx.tenant, "caller": ctx.caller.to_string(), "request_id": ctx.request_id,
        })))
    }
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

struct Sleep(Arc<AtomicBool>);
impl TypedTool for Sleep {
    type Args = SleepArgs;
    const NAME: &'static str = "sleep";
    const DESCRIPTION: &'static str = "Sleep, then note that it finished.";
    async fn run(&self, args: SleepArgs, _: &ToolContext) -> ToolResult {
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        self.0.store(true, Ordering::SeqCst);
        Ok(ToolOutput::text("slept"))
    }
}

/// Misbehaves on request: a tool error, an internal error, a panic, or a huge output.
#[derive(Deserialize, JsonSchema)]
struct MisbehaveArgs {
    how: String,
}

struct Misbehave;
impl TypedTool for Misbehave {
    type Args = MisbehaveArgs;
    const NAME: &'static str = "misbehave";
    const DESCRIPTION: &'static str = "Fail in the way asked.";
    async fn run(&self, args: MisbehaveArgs, _: &ToolContext) -> ToolResult {
        match args.how.as_str() {
            "refuse" => Err(ToolError::tool("the date must be in the future")),
            "internal" => Err(ToolError::internal("db password=hunter2 rejected at 10.0.0.7")),
            "panic" => panic!("secret internal state"),
            "huge" => Ok(ToolOutput::text("x".repeat(5000))),
            _ => Ok(ToolOutput::text("fine")),
        }
    }
}

struct NoParams;
impl TypedTool for NoParams {
    type Args = Nothing;
    const NAME: &'static str = "now";
    const DESCRIPTION: &'static str = "A tool without parameters.";
    async fn run(&self, _: Nothing, _: &ToolContext) -> ToolResult {
        Ok(ToolOutput::text("now"))
    }
}

struct TestTools(Arc<AtomicBool>);
impl ToolProvider for TestTools {
    fn name(&self) -> &str {
        "testing"
    }
    fn tags(&self) -> Vec<String> {
        vec!["testing".into()]
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(Add),
            Arc::new(Echo),
            Arc::new(Sleep(self.0.clone())),
            Arc::new(Misbehave),
            Arc::new(NoParams),
        ]
    }
}

struct Setup {
    executor: Executor,
    pool: PgPool,
    catalog: Catalog,
    secrets: SecretBox,
    slept: Arc<AtomicBool>,
}

async fn setup(pool: PgPool, config: ExecConfig) -> Setup {
    let slept = Arc::new(AtomicBool::new(false));
    let providers: Vec<Arc<dyn ToolProvider>> = vec![Arc::new(TestTools(slept.clone()))];
    builtin::register(&pool, &providers).await.unwrap();
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), "Acme")
        .await
        .unwrap();
    let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    let secrets = SecretBox::from_key(&[9; 32]).unwrap();
    let executor = Executor::new(catalog.clone(), pool.clone(), secrets.clone(), &providers, None, config);
    Setup { executor, pool, catalog, secrets, slept }
}

fn call(name: &str, arguments: Value) -> CallRequest {
    CallRequest { name: name.into(), arguments }
}

fn admin() -> Caller {
    Caller::Admin("tester".into())
}

fn text(output: &ToolOutput) -> String {
    output.texts().collect()
}

/// Sets an override for tool `name` and waits until the catalog's tool satisfies `applied`.
async fn override_tool(s: &Setup, name: &str, input: OverrideInput, applied: impl Fn(&CatalogTool) -> bool) {
    let tool_id = s.catalog.snapshot().tenant("acme").unwrap().resolve(name).unwrap().tool_id;
    store::overrides::set(
        &s.pool,
        &s.secrets,
        &Actor::system(),
        &TenantSlug::parse("acme").unwrap(),
        tool_id,
        &input,
        engine::catalog::check_presets,
    )
    .await
    .unwrap();
    let mut versions = s.catalog.versions();
    let target = input.name.clone().unwrap_or(name.to_string());
    while !s.catalog.snapshot().tenant("acme").unwrap().resolve(&target).is_some_and(|t| applied(t)) {
        tokio::time::timeout(Duration::from_secs(5), versions.changed()).await.unwrap().unwrap();
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_typed_tool_runs_with_validated_arguments(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let result =
        s.executor.call("acme", &admin(), call("add", json!({"a": 2, "b": 40})), None).await.unwrap();
    assert_eq!(result.status, Status::Ok);
    assert_eq!(text(&result.output), "42");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn invalid_arguments_are_a_tool_error_the_llm_can_act_on(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let result =
        s.executor.call("acme", &admin(), call("add", json!({"a": "two", "b": 1})), None).await.unwrap();
    assert_eq!(result.status, Status::ToolError);
    assert!(result.output.is_error());
    assert_eq!(text(&result.output), "invalid arguments: /a: expected integer, got string");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn unknown_tools_and_tenants_are_named(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let err = s.executor.call("acme", &admin(), call("nope", json!({})), None).await.unwrap_err();
    assert_eq!(err.to_string(), "unknown tool `nope`");
    let err = s.executor.call("globex", &admin(), call("add", json!({})), None).await.unwrap_err();
    assert!(matches!(err, engine::Error::NotFound(Missing::Tenant(t)) if t == "globex"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn presets_are_injected_and_context_is_not_an_argument(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let input = OverrideInput {
        presets: json!({"account": 7}).as_object().cloned().unwrap(),
        secret_presets: [("apiKey".to_string(), SecretInput::Value("sk-secret".into()))].into(),
        ..Default::default()
    };
    override_tool(&s, "echo", input, |t| t.presets.len() == 1).await;
    let seen = s.catalog.snapshot().tenant("acme").unwrap().resolve("echo").unwrap().input_schema.value();
    assert!(seen.pointer("/properties/account").is_none() && seen.pointer("/properties/apiKey").is_none());

    let (sink, mut progress) = engine::tool::progress_channel();
    let result =
        s.executor.call("acme", &admin(), call("echo", json!({"to": "bob"})), Some(sink)).await.unwrap();
    assert_eq!(result.status, Status::Ok, "{:?}", result.output);
    let echoed = result.output.0.structured_content.unwrap();
    assert_eq!(echoed["account"], 7);
    assert_eq!(echoed["apiKey"], "sk-secret");
    assert_eq!(echoed["tenant"], "acme");
    assert_eq!(echoed["caller"], "admin:tester");
    assert_eq!(echoed["request_id"].as_str().unwrap().len(), 16);
    assert_eq!(progress.recv().await.unwrap().message.as_deref(), Some("halfway"));

    // The LLM cannot override a preset: the schema it was given has no such field.
    let sneaky = s
        .executor
        .call("acme", &admin(), call("echo", json!({"to": "bob", "account": 1})), None)
        .await
        .unwrap();
    assert_eq!(sneaky.output.0.structured_content.unwrap()["account"], 7);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn tool_errors_pass_verbatim_and_other_failures_only_show_a_correlation_id(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let refused =
        s.executor.call("acme", &admin(), call("misbehave", json!({"how": "refuse"})), None).await.unwrap();
    assert_eq!(
        (refused.status, text(&refused.output).as_str()),
        (Status::ToolError, "the date must be in the future")
    );

    for how in ["internal", "panic"] {
        let failed =
            s.executor.call("acme", &admin(), call("misbehave", json!({"how": how})), None).await.unwrap();
        assert_eq!(failed.status, Status::Failed, "{how}");
        let shown = text(&failed.output);
        let id = failed.correlation_id.unwrap();
        assert!(shown.contains(&id), "{shown}");
        assert!(!shown.contains("hunter2") && !shown.contains("secret internal state"), "{shown}");
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_timed_out_call_is_cancelled(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let input = OverrideInput { timeout_ms: Some(100), ..Default::default() };
    override_tool(&s, "sleep", input, |t| t.timeout == Duration::from_millis(100)).await;
    let started = Instant::now();
    let result = s.executor.call("acme", &admin(), call("sleep", json!({"ms": 1000})), None).await.unwrap();
    assert_eq!(result.status, Status::Timeout);
    assert!(started.elapsed() < Duration::from_millis(900));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(!s.slept.load(Ordering::SeqCst), "the cancelled tool never finished its work");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_batch_runs_concurrently_and_answers_in_call_order(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let batch = vec![
        call("sleep", json!({"ms": 200})),
        call("add", json!({"a": 1, "b": 1})),
        call("sleep", json!({"ms": 200})),
        call("sleep", json!({"ms": 200})),
    ];
    let started = Instant::now();
    let results = s.executor.call_batch("acme", &admin(), batch, None).await;
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(500), "three 200 ms calls took {elapsed:?}");
    let texts: Vec<String> = results.iter().map(|r| text(&r.as_ref().unwrap().output)).collect();
    assert_eq!(texts, ["slept", "2", "slept", "slept"]);

    let sequential = setup_sequential(&s).await;
    let started = Instant::now();
    sequential
        .call_batch(
            "acme",
            &admin(),
            vec![call("sleep", json!({"ms": 150})), call("sleep", json!({"ms": 150}))],
            None,
        )
        .await;
    assert!(started.elapsed() >= Duration::from_millis(300), "sequential when configured");
}

async fn setup_sequential(s: &Setup) -> Executor {
    let providers: Vec<Arc<dyn ToolProvider>> = vec![Arc::new(TestTools(s.slept.clone()))];
    let config = ExecConfig { parallel: false, ..ExecConfig::default() };
    Executor::new(s.catalog.clone(), s.pool.clone(), s.secrets.clone(), &providers, None, config)
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn output_over_the_cap_is_truncated_with_a_notice(pool: PgPool) {
    let s = setup(pool, ExecConfig { output_cap_bytes: 100, ..ExecConfig::default() }).await;
    let result =
        s.executor.call("acme", &admin(), call("misbehave", json!({"how": "huge"})), None).await.unwrap();
    let shown = text(&result.output);
    assert!(shown.starts_with(&"x".repeat(100)) && !shown.starts_with(&"x".repeat(101)));
    assert!(shown.contains("output truncated: 5000 bytes exceed the 100-byte limit"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn no_parameter_tools_take_the_reason_and_ignore_it(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let seen = s.catalog.snapshot().tenant("acme").unwrap().resolve("now").unwrap().input_schema.value();
    assert_eq!(seen, engine::schema::no_parameters());
    let result = s
        .executor
        .call("acme", &admin(), call("now", json!({"reason": "checking the time"})), None)
        .await
        .unwrap();
    assert_eq!((result.status, text(&result.output).as_str()), (Status::Ok, "now"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn every_call_leaves_an_invocation_record(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    s.executor.call("acme", &admin(), call("add", json!({"a": 1, "b": 2})), None).await.unwrap();
    s.executor.call("acme", &admin(), call("misbehave", json!({"how": "panic"})), None).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let rows: Vec<(String, String, String)> = loop {
        let rows = sqlx::query_as("select tool_name, status, caller from invocation order by id")
            .fetch_all(&s.pool)
            .await
            .unwrap();
        if rows.len() == 2 || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        rows,
        [
            ("add".into(), "ok".into(), "admin:tester".into()),
            ("misbehave".into(), "failed".into(), "admin:tester".into()),
        ]
    );
}

/// Registers the external (schema-only) tool `ui_query_database` and waits until `acme` sees it.
async fn add_external_tool(s: &Setup) {
    let new = NewSource {
        kind: SourceKind::External,
        name: Name::parse("frontend").unwrap(),
        prefix: "ui".into(),
        tags: vec![],
        tenant: None,
    };
    store::sources::create(&s.pool, &Actor::system(), &new).await.unwrap();
    let definition = ToolDefinition {
        upstream_name: "query_database".into(),
        description: "Query the browser's database".into(),
        input_schema: json!({"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}),
        output_schema: None,
        annotations: json!({}),
        tags: vec![],
        strict: true,
        timeout_ms: None,
        meta: None,
    };
    store::sources::sync_tools(&s.pool, &Actor::system(), &Name::parse("frontend").unwrap(), &[definition])
        .await
        .unwrap();
    let mut versions = s.catalog.versions();
    while s.catalog.snapshot().tenant("acme").unwrap().resolve("ui_query_database").is_none() {
        tokio::time::timeout(Duration::from_secs(5), versions.changed()).await.unwrap().unwrap();
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn external_tools_suspend_and_resume_with_the_callers_result(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    add_external_tool(&s).await;
    let suspended = s
        .executor
        .call("acme", &admin(), call("ui_query_database", json!({"sql": "select 1"})), None)
        .await
        .unwrap();
    assert_eq!(suspended.status, Status::Suspended);
    let pending = suspended.pending.unwrap();
    assert_eq!(
        (pending.tool.as_str(), &pending.arguments),
        ("ui_query_database", &json!({"sql": "select 1"}))
    );

    let resumed = s.executor.resume("acme", pending.id, ToolOutput::text("1 row")).await.unwrap();
    assert_eq!((resumed.status, text(&resumed.output).as_str()), (Status::Ok, "1 row"));
    let again = s.executor.resume("acme", pending.id, ToolOutput::text("twice")).await.unwrap_err();
    assert!(matches!(again, engine::Error::NotFound(Missing::PendingCall(id)) if id == pending.id));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_has_at_most_its_cap_of_calls_waiting_for_results(pool: PgPool) {
    let s = setup(pool, ExecConfig { max_pending_per_tenant: 2, ..ExecConfig::default() }).await;
    add_external_tool(&s).await;
    let query = || call("ui_query_database", json!({"sql": "select 1"}));
    let caller = admin();
    let results =
        futures::future::join_all((0..5).map(|_| s.executor.call("acme", &caller, query(), None))).await;
    let statuses: Vec<Status> = results.into_iter().map(|r| r.unwrap().status).collect();
    assert_eq!(statuses.iter().filter(|status| **status == Status::Suspended).count(), 2, "{statuses:?}");
    let refused = s.executor.call("acme", &admin(), query(), None).await.unwrap();
    assert_eq!(refused.status, Status::ToolError);
    assert!(text(&refused.output).contains("2 calls of this tenant are already waiting for their results"));

    let waiting: uuid::Uuid =
        sqlx::query_scalar("select id from pending_call limit 1").fetch_one(&s.pool).await.unwrap();
    s.executor.resume("acme", waiting, ToolOutput::text("done")).await.unwrap();
    let after = s.executor.call("acme", &admin(), query(), None).await.unwrap();
    assert_eq!(after.status, Status::Suspended, "a resumed call frees its place");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn registering_unchanged_providers_again_writes_nothing(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let count = || async {
        sqlx::query_scalar::<_, i64>("select count(*) from audit_event").fetch_one(&s.pool).await.unwrap()
    };
    let before = count().await;
    let providers: Vec<Arc<dyn ToolProvider>> = vec![Arc::new(TestTools(s.slept.clone()))];
    builtin::register(&s.pool, &providers).await.unwrap();
    assert_eq!(count().await, before);
}

/// Sets the tenant's limits and waits until the catalog carries them.
async fn limit_tenant(s: &Setup, update: TenantUpdate, applied: impl Fn(&Limits) -> bool) {
    store::tenants::update(&s.pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), update)
        .await
        .unwrap();
    let mut versions = s.catalog.versions();
    while !applied(&s.catalog.snapshot().tenant("acme").unwrap().limits) {
        tokio::time::timeout(Duration::from_secs(5), versions.changed()).await.unwrap().unwrap();
    }
}

fn per(minute: Option<u32>, day: Option<u32>, concurrent: Option<u32>) -> CallLimits {
    let n = |n: Option<u32>| n.and_then(NonZeroU32::new);
    CallLimits { per_minute: n(minute), per_day: n(day), concurrent: n(concurrent) }
}

fn refusal(outcome: Result<engine::exec::CallResult, engine::Error>) -> Limited {
    match outcome {
        Err(engine::Error::Limited(limited)) => limited,
        other => panic!("not refused by a limit: {other:?}"),
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_limits_of_a_tenant_a_tool_and_a_key_refuse_calls_naming_themselves(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let acme = TenantSlug::parse("acme").unwrap();
    let (key, _) =
        store::keys::create(&s.pool, &Actor::system(), &acme, "ci", None, per(None, Some(1), None))
            .await
            .unwrap();
    let update = TenantUpdate {
        limits: Some(per(None, Some(4), None)),
        tool_limits: Some([("echo".to_string(), per(None, Some(2), None))].into()),
        ..Default::default()
    };
    limit_tenant(&s, update, |l| l.tools.len() == 1 && l.keys.len() == 1).await;
    let run = |name: &'static str, caller: Caller| {
        let executor = s.executor.clone();
        let arguments = if name == "echo" { json!({"to": "x"}) } else { json!({"a": 1, "b": 2}) };
        async move { executor.call("acme", &caller, call(name, arguments), None).await }
    };

    run("echo", admin()).await.unwrap();
    run("echo", admin()).await.unwrap();
    let limited = refusal(run("echo", admin()).await);
    assert_eq!((limited.scope, limited.limit, limited.max), (Scope::Tool("echo".into()), Kind::PerDay, 2));
    assert!((1..=86_400).contains(&limited.retry_after.as_secs()), "{:?}", limited.retry_after);

    run("add", Caller::ApiKey(key.id)).await.unwrap();
    let limited = refusal(run("add", Caller::ApiKey(key.id)).await);
    assert_eq!((&limited.scope, limited.limit), (&Scope::Key, Kind::PerDay));
    assert_eq!(
        limited.to_string(),
        format!(
            "the limit of 1 calls per day for this API key is reached; try again in {} s",
            limited.retry_after.as_secs()
        )
    );

    // Refused calls used nothing: the tenant's day has one call left.
    run("add", admin()).await.unwrap();
    let limited = refusal(run("add", admin()).await);
    assert_eq!((limited.scope, limited.limit, limited.max), (Scope::Tenant, Kind::PerDay, 4));
    let records: i64 =
        sqlx::query_scalar("select count(*) from invocation").fetch_one(&s.pool).await.unwrap();
    assert!(records <= 4, "refusals are not calls: {records} records");
}

/// Calls their arguments refuse are calls: they count against the key's limit, and once it
/// is spent are refused before anything is stored; what is stored of large arguments is their
/// size and hash. Main checked the arguments first, never met the limit, and recorded every
/// refused call's arguments in full (4 MiB each, kept 30 days).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn calls_with_bad_arguments_count_against_the_limits_and_are_recorded_small(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let acme = TenantSlug::parse("acme").unwrap();
    let (key, _) =
        store::keys::create(&s.pool, &Actor::system(), &acme, "ci", None, per(None, Some(2), None))
            .await
            .unwrap();
    limit_tenant(&s, TenantUpdate::default(), |l| l.keys.len() == 1).await;
    let bad = json!({"a": "x".repeat(1 << 20), "b": 2});
    for _ in 0..2 {
        let result = s.executor.call("acme", &Caller::ApiKey(key.id), call("add", bad.clone()), None).await;
        assert_eq!(result.unwrap().status, Status::ToolError, "refused by its arguments");
    }
    let limited = refusal(s.executor.call("acme", &Caller::ApiKey(key.id), call("add", bad), None).await);
    assert_eq!((&limited.scope, limited.limit), (&Scope::Key, Kind::PerDay));

    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let recorded = loop {
        let recorded: Vec<Value> =
            sqlx::query_scalar("select arguments from invocation").fetch_all(&s.pool).await.unwrap();
        if recorded.len() == 2 || std::time::Instant::now() > deadline {
            break recorded;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(recorded.len(), 2, "the refused call is not recorded");
    for arguments in recorded {
        assert_eq!(arguments["bytes"], (1 << 20) + 14, "{arguments:.200}");
        assert_eq!(arguments["sha256"].as_str().map(str::len), Some(64));
        assert!(arguments["beginning"].as_str().unwrap().starts_with(r#"{"a":"xxx"#));
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_concurrent_limit_refuses_a_call_that_waited_too_long_for_a_place(pool: PgPool) {
    let s = setup(pool, ExecConfig::default()).await;
    let update = TenantUpdate {
        tool_limits: Some([("sleep".to_string(), per(None, None, Some(1)))].into()),
        ..Default::default()
    };
    limit_tenant(&s, update, |l| !l.tools.is_empty()).await;
    let executor = s.executor.clone();
    let long = tokio::spawn(async move {
        executor.call("acme", &admin(), call("sleep", json!({"ms": 3000})), None).await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let limited = refusal(s.executor.call("acme", &admin(), call("sleep", json!({"ms": 1})), None).await);
    assert_eq!(
        (limited.scope, limited.limit, limited.max),
        (Scope::Tool("sleep".into()), Kind::Concurrent, 1)
    );
    // Other tools are not held back by one tool's limit.
    s.executor.call("acme", &admin(), call("add", json!({"a": 1, "b": 2})), None).await.unwrap();
    assert_eq!(long.await.unwrap().unwrap().status, Status::Ok);
}

/// Two executors on one database stand for two replicas: each learns the other's calls at its
/// next sync, so together they admit the day's limit.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn replicas_share_their_counts_through_the_database(pool: PgPool) {
    let sync = Duration::from_millis(50);
    let config = ExecConfig { limit_sync: sync, ..ExecConfig::default() };
    let s = setup(pool, config.clone()).await;
    let providers: Vec<Arc<dyn ToolProvider>> = vec![Arc::new(TestTools(s.slept.clone()))];
    let other = Executor::new(s.catalog.clone(), s.pool.clone(), s.secrets.clone(), &providers, None, config);
    limit_tenant(&s, TenantUpdate { limits: Some(per(None, Some(5), None)), ..Default::default() }, |l| {
        l.tenant.per_day.is_some()
    })
    .await;
    let add = || call("add", json!({"a": 1, "b": 2}));
    for _ in 0..3 {
        s.executor.call("acme", &admin(), add(), None).await.unwrap();
    }
    let shared = || async {
        sqlx::query_scalar::<_, i64>(
            "select coalesce(sum(calls), 0)::bigint from call_usage where span = 'day'",
        )
        .fetch_one(&s.pool)
        .await
        .unwrap()
    };
    let shared_reaches = |calls| async move {
        tokio::time::timeout(Duration::from_secs(5), async {
            while shared().await < calls {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the replicas share their calls within five seconds")
    };
    shared_reaches(3).await;
    other.call("acme", &admin(), add(), None).await.unwrap();
    other.call("acme", &admin(), add(), None).await.unwrap();
    let limited = refusal(other.call("acme", &admin(), add(), None).await);
    assert_eq!((limited.scope, limited.limit, limited.max), (Scope::Tenant, Kind::PerDay, 5));
    // And the first learns the second's two at its next sync after the second shared them.
    shared_reaches(5).await;
    tokio::time::sleep(6 * sync).await;
    refusal(s.executor.call("acme", &admin(), add(), None).await);
    assert_eq!(shared().await, 5);
}
