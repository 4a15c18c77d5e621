//! The admin API essentials (a contract scripts rely on) and `toolgate admin token create`.

mod common;

use std::time::{Duration, Instant};

use common::{PASSWORD, TestApp, json_of};
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use toolgate_bench::upstream::Upstream;

async fn setup(pool: &PgPool) -> (TestApp, String) {
    let app = TestApp::spawn(pool.clone()).await;
    common::create_tenant(pool, &TenantSlug::parse("acme").unwrap(), "Acme").await;
    let token = common::admin_token(pool, "tests").await;
    // The gateway knows the tenant once its catalog has reloaded.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let invoke = client().post(app.url("/api/admin/v1/tenants/acme/invoke")).bearer_auth(&token);
        let probe = json_of(invoke.json(&json!({"tool": "no-such-tool"}))).await;
        if probe["detail"] == "unknown tool `no-such-tool`" {
            break;
        }
        assert!(Instant::now() < deadline, "tenant never appeared: {probe}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (app, token)
}

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// Read-your-writes: once the admin API has answered a write, this process serves it. Main
/// refused a key it had just created for its first milliseconds (401), and listed the tools of
/// the tags before a change.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_write_is_served_as_soon_as_it_is_answered(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    for round in 0..10 {
        let keys = client().post(app.url("/api/admin/v1/tenants/acme/keys")).bearer_auth(&token);
        let created = json_of(keys.json(&json!({"name": format!("k{round}")}))).await;
        let key = created["key"].as_str().unwrap();
        let tags = if round % 2 == 0 { json!(["files"]) } else { json!(["files", "shell"]) };
        let changed = client()
            .patch(app.url("/api/admin/v1/tenants/acme"))
            .bearer_auth(&token)
            .json(&json!({"enabled_tags": tags}))
            .send()
            .await
            .unwrap();
        assert_eq!(changed.status(), StatusCode::OK);
        assert!(changed.headers().get("toolgate-propagation").is_none(), "{:?}", changed.headers());
        let tools = client().get(app.url("/api/v1/tools?format=mcp")).bearer_auth(key).send().await.unwrap();
        assert_eq!(tools.status(), StatusCode::OK, "round {round}: a key just created was refused");
        let tools: Value = tools.json().await.unwrap();
        let shell = tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == "run_command");
        assert_eq!(shell, round % 2 == 1, "round {round}: the tools before the change were listed");
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn keys_are_created_once_and_revoked(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    let created = client()
        .post(app.url("/api/admin/v1/tenants/acme/keys"))
        .bearer_auth(&token)
        .json(&json!({"name": "ci"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let body: Value = created.json().await.unwrap();
    let (id, key) = (body["id"].as_str().unwrap().to_string(), body["key"].as_str().unwrap().to_string());
    assert!(key.starts_with("tg_"));

    let works = |expected: StatusCode| {
        let (url, key) = (app.url("/api/v1/tools"), key.clone());
        async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            while client().get(&url).bearer_auth(&key).send().await.unwrap().status() != expected {
                assert!(Instant::now() < deadline, "key never answered {expected}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    works(StatusCode::OK).await;
    let revoked = client()
        .delete(app.url(&format!("/api/admin/v1/tenants/acme/keys/{id}")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    works(StatusCode::UNAUTHORIZED).await;

    // Every time in an answer is RFC 3339, in listings and in the audit log's entries alike.
    let rfc3339 = |value: &Value| {
        let text = value.as_str().unwrap_or_else(|| panic!("{value} is not a string"));
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).unwrap()
    };
    let keys = json_of(client().get(app.url("/api/admin/v1/tenants/acme/keys")).bearer_auth(&token)).await;
    assert!(rfc3339(&keys[0]["revoked_at"]) >= rfc3339(&keys[0]["created_at"]), "{keys}");
    let audit = json_of(
        client().get(app.url("/api/admin/v1/audit?entity_kind=tenant&entity_id=acme")).bearer_auth(&token),
    )
    .await;
    let created = audit.as_array().unwrap().iter().find(|e| e["action"] == "create_key").expect("audited");
    rfc3339(&created["at"]);
    rfc3339(&created["after"]["created_at"]);

    // The log is filtered by part of the actor's name, in any case, and by time.
    let audit = |query: String| {
        let url = app.url(&format!("/api/admin/v1/audit?{query}"));
        let request = client().get(url).bearer_auth(&token);
        async move {
            json_of(request).await.as_array().unwrap().iter().map(|e| e["action"].clone()).collect::<Vec<_>>()
        }
    };
    let hour = |hours: i64| {
        let at = time::OffsetDateTime::now_utc() + time::Duration::hours(hours);
        at.format(&time::format_description::well_known::Rfc3339).unwrap().replace('+', "%2B")
    };
    // The test invocation above is in the log too.
    let actions = ["revoke_key", "create_key", "test_call"];
    assert_eq!(audit("actor_contains=TESTS&entity_kind=tenant".into()).await, actions);
    assert_eq!(audit("actor=TESTS".into()).await, Vec::<Value>::new(), "`actor` stays an exact match");
    assert_eq!(audit(format!("actor=token:tests&since={}", hour(-1))).await.len(), 3);
    assert!(audit(format!("actor=token:tests&until={}", hour(-1))).await.is_empty());
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn test_invocation_and_schema_inspection(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    let invoked = json_of(
        client()
            .post(app.url("/api/admin/v1/tenants/acme/invoke"))
            .bearer_auth(&token)
            .json(&json!({"tool": "write_text_file", "arguments": {"path": "t.txt", "content": "x"}})),
    )
    .await;
    assert_eq!(invoked["status"], "ok", "{invoked}");
    let unknown = client()
        .post(app.url("/api/admin/v1/tenants/acme/invoke"))
        .bearer_auth(&token)
        .json(&json!({"tool": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);

    let tool_id = common::tool_id(&pool, "view_text_file").await;
    let schema = json_of(
        client()
            .get(app.url(&format!("/api/admin/v1/tools/{tool_id}/schema?tenant=acme&provider=gemini")))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(schema["rendering"]["name"], "view_text_file");
    assert!(schema["rendering"]["parameters"]["properties"]["path"].is_object());
    // schemars emits `$schema`, which Gemini rejects: reported, and normalised away.
    let findings = schema["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["keyword"] == "$schema"), "{findings:?}");
    assert!(schema["normalised"].get("$schema").is_none());
    assert!(schema["normalised"].get("title").is_none());
}

/// Tool search: the tenant's tools that match a request best, first; what a preset hides is
/// neither in an answer nor found by; a tool the tenant does not see is never found.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn tool_search_finds_the_tenants_tools_and_nothing_it_hides(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    let search = async |query: &str, count: usize| -> Vec<Value> {
        let url = app.url("/api/admin/v1/tenants/acme/search");
        let count = count.to_string();
        let found = client().get(url).bearer_auth(&token).query(&[("query", query), ("count", &count)]);
        let found = json_of(found).await;
        found.as_array().unwrap_or_else(|| panic!("{found}")).clone()
    };
    let names =
        |found: &[Value]| found.iter().map(|f| f["name"].as_str().unwrap().to_string()).collect::<Vec<_>>();

    let found = search("show me the folders inside a directory", 3).await;
    assert_eq!(found[0]["name"], "list_directory", "{found:?}");
    assert_eq!(found[0]["server"], "files");
    assert!(found.len() <= 3 && found.windows(2).all(|w| w[0]["score"].as_f64() >= w[1]["score"].as_f64()));
    assert_eq!(names(&search("overwrite a text file", 1).await), ["write_text_file"]);
    assert!(search("zebra", 5).await.is_empty());

    // `path` of write_text_file ("created (with its folders) if missing") preset: the schema
    // answered leaves it out, and its words no longer find the tool.
    assert_eq!(names(&search("missing", 50).await), ["write_text_file"]);
    let write = common::tool_id(&pool, "write_text_file").await;
    let preset = client()
        .put(app.url(&format!("/api/admin/v1/tenants/acme/tools/{write}")))
        .bearer_auth(&token)
        .json(&json!({"presets": {"path": "notes.txt"}}));
    assert_eq!(preset.send().await.unwrap().status(), StatusCode::OK);
    assert!(search("missing", 50).await.is_empty());
    let found = search("overwrite a text file", 1).await;
    assert_eq!(found[0]["name"], "write_text_file");
    assert!(found[0]["input_schema"]["properties"].get("path").is_none(), "{found:?}");
    assert!(found[0]["input_schema"]["properties"].get("content").is_some(), "{found:?}");

    // A tool the tenant turned off is not found.
    let list = common::tool_id(&pool, "list_directory").await;
    let off = client()
        .put(app.url(&format!("/api/admin/v1/tenants/acme/tools/{list}")))
        .bearer_auth(&token)
        .json(&json!({"enabled": false}));
    assert_eq!(off.send().await.unwrap().status(), StatusCode::OK);
    assert!(
        !names(&search("show me the folders inside a directory", 50).await)
            .contains(&"list_directory".into())
    );
    let long = "file ".repeat(103);
    let refused = client().get(app.url("/api/admin/v1/tenants/acme/search")).bearer_auth(&token);
    let refused = refused.query(&[("query", long.as_str())]).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["detail"], "a search query is at most 512 bytes; this one is 515", "{refused}");
    let unknown = client()
        .get(app.url("/api/admin/v1/tenants/nobody/search?query=file"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_admin_api_needs_an_owner_session_or_a_token(pool: PgPool) {
    let (app, _) = setup(&pool).await;
    let url = app.url("/api/admin/v1/tenants/acme/keys");
    let anonymous = client().post(&url).json(&json!({"name": "x"})).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::FORBIDDEN, "no Origin, no token: refused as cross-site");
    let bad = client().post(&url).bearer_auth("tga_nope").json(&json!({"name": "x"})).send().await.unwrap();
    assert_eq!(bad.status(), StatusCode::UNAUTHORIZED);
    // The owner's panel session works, from the panel's own origin.
    app.login(PASSWORD).await;
    let with_session = app.client.post(&url).json(&json!({"name": "from-panel"})).send().await.unwrap();
    assert_eq!(with_session.status(), StatusCode::CREATED);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn admin_tokens_are_listed_limited_and_revoked(pool: PgPool) {
    let (app, owner) = setup(&pool).await;
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("globex").unwrap(), "Globex")
        .await
        .unwrap();
    let tokens = app.url("/api/admin/v1/admin_tokens");
    let create = |body: Value| client().post(&tokens).bearer_auth(&owner).json(&body).send();
    let made = |response: reqwest::Response| async move {
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        (body["id"].as_str().unwrap().to_string(), body["token"].as_str().unwrap().to_string())
    };
    let (_, reader) = made(create(json!({"name": "dashboards", "read_only": true})).await.unwrap()).await;
    let (_, acme) = made(create(json!({"name": "acme-ci", "tenant": "acme"})).await.unwrap()).await;
    let (short_id, short) =
        made(create(json!({"name": "short", "expires_at": "2099-01-01T00:00:00Z"})).await.unwrap()).await;

    let status = |token: &str, method: reqwest::Method, path: &str| {
        let request = client().request(method, app.url(path)).bearer_auth(token);
        async move { request.json(&json!({"name": "k"})).send().await.unwrap().status() }
    };
    use reqwest::Method;
    // Read-only: reads, never writes.
    assert_eq!(status(&reader, Method::GET, "/api/admin/v1/tenants").await, StatusCode::OK);
    assert_eq!(status(&reader, Method::POST, "/api/admin/v1/tenants/acme/keys").await, StatusCode::FORBIDDEN);
    assert_eq!(status(&reader, Method::POST, "/api/admin/v1/admin_tokens").await, StatusCode::FORBIDDEN);
    // One tenant: its own path only; it cannot mint a broader token.
    assert_eq!(status(&acme, Method::POST, "/api/admin/v1/tenants/acme/keys").await, StatusCode::CREATED);
    assert_eq!(status(&acme, Method::GET, "/api/admin/v1/tenants/acme").await, StatusCode::OK);
    assert_eq!(status(&acme, Method::POST, "/api/admin/v1/tenants/globex/keys").await, StatusCode::FORBIDDEN);
    assert_eq!(status(&acme, Method::GET, "/api/admin/v1/tenants/acme-other").await, StatusCode::FORBIDDEN);
    assert_eq!(status(&acme, Method::GET, "/api/admin/v1/tenants").await, StatusCode::FORBIDDEN);
    assert_eq!(status(&acme, Method::POST, "/api/admin/v1/admin_tokens").await, StatusCode::FORBIDDEN);
    let search = "/api/admin/v1/tenants/acme/search?query=file";
    assert_eq!(status(&acme, Method::GET, search).await, StatusCode::OK);
    let search = "/api/admin/v1/tenants/globex/search?query=file";
    assert_eq!(status(&acme, Method::GET, search).await, StatusCode::FORBIDDEN);
    let refusal = json_of(client().get(app.url("/api/admin/v1/config")).bearer_auth(&acme)).await;
    assert_eq!(refusal["code"], "tenant_token", "{refusal}");
    // It chooses within the owner's ceiling, like a tenant administrator, and cannot change it.
    let patch = |token: &str, body: Value| {
        client().patch(app.url("/api/admin/v1/tenants/acme")).bearer_auth(token).json(&body).send()
    };
    let ceiling = json!({"ceiling": {"tags": ["demo"]}});
    assert_eq!(patch(&acme, ceiling.clone()).await.unwrap().status(), StatusCode::FORBIDDEN);
    // It lets its tools be found by search, with pinned tools named as tools are.
    let searching = json!({"tool_discovery": "search", "pinned_tools": ["list_directory", "no such name!"]});
    let refused = patch(&acme, searching).await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["detail"], "`no such name!` is not a tool name", "{refused}");
    let searching = json!({"tool_discovery": "search", "pinned_tools": ["list_directory"]});
    let set: Value = patch(&acme, searching).await.unwrap().json().await.unwrap();
    assert_eq!(
        (&set["tool_discovery"], &set["pinned_tools"]),
        (&json!("search"), &json!(["list_directory"])),
        "{set}"
    );
    let unknown = patch(&acme, json!({"tool_discovery": "sideways"})).await.unwrap();
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST, "an unknown mode is refused");
    assert_eq!(patch(&owner, ceiling).await.unwrap().status(), StatusCode::OK);
    let beyond = json_of(
        client()
            .patch(app.url("/api/admin/v1/tenants/acme"))
            .bearer_auth(&acme)
            .json(&json!({"enabled_tags": ["shell"]})),
    )
    .await;
    assert_eq!(
        beyond["detail"], "tag(s) shell are beyond what the owner allows this tenant (demo)",
        "{beyond}"
    );
    let delete =
        client().delete(app.url("/api/admin/v1/tenants/acme")).bearer_auth(&acme).send().await.unwrap();
    assert_eq!(delete.status(), StatusCode::FORBIDDEN, "only owners delete a tenant");

    // The list shows limits and last use, in RFC 3339, and never a token: only its first
    // characters, to tell it apart.
    let listed = json_of(client().get(&tokens).bearer_auth(&owner)).await;
    let text = listed.to_string();
    assert!(!text.contains(&reader) && !text.contains(&acme), "{listed}");
    let row = |name: &str| {
        listed["admin_tokens"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone()
    };
    assert_eq!(row("dashboards")["prefix"], reader[..10]);
    assert_eq!(
        (row("dashboards")["read_only"].clone(), row("acme-ci")["tenant"].clone()),
        (json!(true), json!("acme"))
    );
    assert!(row("acme-ci")["last_used_at"].as_str().unwrap().ends_with('Z'), "{listed}");
    assert_eq!(row("short")["expires_at"], "2099-01-01T00:00:00Z");
    assert_eq!(row("short")["last_used_at"], Value::Null);

    // Revoked: refused at once; an expired token likewise.
    assert_eq!(status(&short, Method::GET, "/api/admin/v1/tenants").await, StatusCode::OK);
    let revoke = client().delete(format!("{tokens}/{short_id}")).bearer_auth(&owner).send().await.unwrap();
    assert_eq!(revoke.status(), StatusCode::NO_CONTENT);
    assert_eq!(status(&short, Method::GET, "/api/admin/v1/tenants").await, StatusCode::UNAUTHORIZED);
    let again = client().delete(format!("{tokens}/{short_id}")).bearer_auth(&owner).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    sqlx::query("update admin_token set expires_at = now() - interval '1 second' where name = 'dashboards'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(status(&reader, Method::GET, "/api/admin/v1/tenants").await, StatusCode::UNAUTHORIZED);
    let past = create(json!({"name": "past", "expires_at": "2001-01-01T00:00:00Z"})).await.unwrap();
    assert_eq!(past.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

/// A database of its own for `toolgate admin` commands, which migrate it like any Toolgate
/// database; dropped by [`CliDatabase::drop`].
struct CliDatabase {
    master: PgPool,
    name: String,
    url: String,
    pool: PgPool,
}

impl CliDatabase {
    async fn new() -> Self {
        let master_url = std::env::var("DATABASE_URL").expect("make test sets DATABASE_URL");
        let master = PgPool::connect(&master_url).await.unwrap();
        let name = format!("toolgate_cli_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("create database {name}")).execute(&master).await.unwrap();
        let options: sqlx::postgres::PgConnectOptions = master_url.parse().unwrap();
        let url = match master_url.split_once('?') {
            Some((base, query)) => format!("{}/{name}?{query}", base.rsplit_once('/').unwrap().0),
            None => format!("{}/{name}", master_url.rsplit_once('/').unwrap().0),
        };
        let pool = PgPool::connect_lazy_with(options.database(&name));
        CliDatabase { master, name, url, pool }
    }

    /// Runs `toolgate admin <args>` with `input` on its standard input.
    fn admin(&self, args: &[&str], input: &str) -> std::process::Output {
        use std::io::Write;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .arg("admin")
            .args(args)
            .env("DATABASE_URL", &self.url)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Like [`Self::admin`], and it must succeed: its standard output.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.admin(args, "");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    }

    async fn drop(self) {
        self.pool.close().await;
        sqlx::query(&format!("drop database {}", self.name)).execute(&self.master).await.unwrap();
    }
}

#[tokio::test]
async fn token_create_prints_the_token_as_the_last_line() {
    let cli = CliDatabase::new().await;
    let toolgate = |args: &[&str]| cli.ok(&[&["token"], args].concat());
    let stdout = toolgate(&["create", "--name", "script"]);
    let token = stdout.lines().last().unwrap();
    assert!(token.starts_with("tga_"), "{stdout}");
    let grant = engine::store::tokens::authenticate(&cli.pool, token).await.unwrap().unwrap();
    assert_eq!((grant.name.as_str(), grant.read_only, grant.tenant), ("script", false, None));

    toolgate(&["create", "--name", "reader", "--read-only", "--expires-in-days", "5"]);
    let listed = toolgate(&["list"]);
    let reader =
        listed.lines().find(|line| line.contains("\treader\t")).unwrap_or_else(|| panic!("{listed}"));
    assert!(reader.contains("\tread-only\t"), "{reader}");
    toolgate(&["revoke", reader.split('\t').next().unwrap()]);
    let listed = toolgate(&["list"]);
    let reader = listed.lines().find(|line| line.contains("\treader\t")).unwrap();
    assert!(!reader.ends_with("\t-"), "the list shows when it was revoked: {reader}");
    cli.drop().await;
}

/// `toolgate admin create` makes the whole account or none (an unknown tenant left an account
/// without its tenant behind); a password it generates is for one sign-in, one read from
/// standard input is the account's own; `list` shows them, `delete` deletes one.
#[tokio::test]
async fn admin_create_makes_the_whole_account_or_none() {
    let cli = CliDatabase::new().await;
    cli.ok(&["token", "list"]); // migrates the database
    let failed = cli.admin(&["create", "jane", "--role", "tenant-admin", "--tenant", "nope"], "");
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("tenant `nope`"), "{failed:?}");
    let accounts: i64 =
        sqlx::query_scalar("select count(*) from admin_user").fetch_one(&cli.pool).await.unwrap();
    assert_eq!(accounts, 0, "the failed command left an account");

    let printed = cli.ok(&["create", "jane"]);
    let chosen = cli.admin(&["create", "joe", "--password-stdin"], "joe-s-own-password\n");
    assert!(chosen.status.success(), "{chosen:?}");
    assert!(chosen.stdout.is_empty(), "a password read from standard input is not printed back");
    let temporary: Vec<(String, bool)> =
        sqlx::query_as("select username, password_temporary from admin_user order by username")
            .fetch_all(&cli.pool)
            .await
            .unwrap();
    assert_eq!(temporary, [("jane".to_string(), true), ("joe".to_string(), false)], "{printed}");

    // Listed, tab-separated; deleted, never the last enabled owner.
    let listed = cli.ok(&["list"]);
    assert_eq!(
        listed.lines().map(|line| line.split('\t').take(5).collect::<Vec<_>>().join(" ")).collect::<Vec<_>>(),
        ["jane owner - one-time password enabled", "joe owner - password enabled"],
        "{listed}"
    );
    cli.ok(&["delete", "joe"]);
    let last = cli.admin(&["delete", "jane"], "");
    assert!(!last.status.success());
    assert!(String::from_utf8_lossy(&last.stderr).contains("the last enabled owner"), "{last:?}");
    assert_eq!(cli.ok(&["list"]).lines().count(), 1);
    cli.drop().await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn config_as_code_in_yaml_dry_run_apply_and_export(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    let put = |query: &'static str, body: &'static str| {
        client()
            .put(app.url(&format!("/api/admin/v1/config{query}")))
            .bearer_auth(&token)
            .header("content-type", "application/yaml")
            .body(body)
            .send()
    };
    let document = "
tenants:
  - slug: acme
    name: Acme Corp
    enabled_tags: []
    tools:
      write_text_file: {enabled: false}
      view_text_file: {name: read_file, description: Read a text file}
";
    let dry: Value = put("?dry_run=true", document).await.unwrap().json().await.unwrap();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["applied"], false);
    assert_eq!(dry["changes"][0]["action"], "update");
    assert_eq!(dry["changes"][0]["kind"], "tenant");
    assert_eq!(dry["changes"][0]["after"]["tools"]["view_text_file"]["name"], "read_file");

    let applied: Value = put("", document).await.unwrap().json().await.unwrap();
    assert_eq!(
        (applied["applied"].clone(), applied["changes"].as_array().map(Vec::len)),
        (json!(true), Some(1)),
        "{applied}"
    );

    // The gateway serves the new configuration.
    let key = store::keys::create(
        &pool,
        &Actor::system(),
        &TenantSlug::parse("acme").unwrap(),
        "k",
        None,
        Default::default(),
    )
    .await
    .unwrap()
    .1;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let tools = json_of(client().get(app.url("/api/v1/tools?format=mcp")).bearer_auth(&key)).await;
        let names: Vec<&str> =
            tools["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
        if names.contains(&"read_file") && !names.contains(&"write_text_file") {
            break;
        }
        assert!(Instant::now() < deadline, "the gateway never served the applied document: {names:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let exported = client()
        .get(app.url("/api/admin/v1/config"))
        .bearer_auth(&token)
        .header("accept", "application/yaml")
        .send()
        .await
        .unwrap();
    assert_eq!(exported.headers()["content-type"], "application/yaml");
    let yaml = exported.text().await.unwrap();
    assert!(yaml.contains("name: read_file"), "{yaml}");
    // The export applies as it is, changing nothing.
    let again = json_of(
        client()
            .put(app.url("/api/admin/v1/config"))
            .bearer_auth(&token)
            .header("content-type", "application/yaml")
            .body(yaml),
    )
    .await;
    assert_eq!(again["changes"], json!([]), "{again}");

    let malformed = put("", "tenants: [slug: {").await.unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    let invalid = put("", "tenants: [{slug: acme, groups: {nope: true}}]").await.unwrap();
    assert_eq!(invalid.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let invalid: Value = invalid.json().await.unwrap();
    assert_eq!(invalid["detail"], "tenants.acme.groups: group `nope` is not among the document's groups");
    let anonymous = client().get(app.url("/api/admin/v1/config")).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_documented_example_applies(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    let docs = include_str!("../docs/config.md");
    let example = docs.rsplit("```yaml").next().unwrap().split("```").next().unwrap();
    let response = client()
        .put(app.url("/api/admin/v1/config"))
        .bearer_auth(&token)
        .header("content-type", "application/yaml")
        .body(example.to_string())
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["applied"], true, "{body}");
    let exported = json_of(client().get(app.url("/api/admin/v1/config")).bearer_auth(&token)).await;
    assert_eq!(exported["servers"][1]["env"], json!({"API_TOKEN": {"set": true}, "LOG_LEVEL": "info"}));
    assert_eq!(
        exported["tenants"][1],
        json!({"slug": "globex", "name": "globex", "groups": {}, "meta_tool": false, "tools": {}})
    );
}

/// One admin API call with the token: (status, JSON body or null).
async fn call(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let request = client().request(method.parse().unwrap(), app.url(path)).bearer_auth(token);
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_resources_the_panel_manages(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    let call = |method: &'static str, path: &'static str, body: Option<Value>| {
        call(&app, &token, method, path, body)
    };

    let (status, created) =
        call("POST", "/api/admin/v1/tenants", Some(json!({"slug": "globex", "name": "Globex"}))).await;
    assert_eq!((status, created["slug"].as_str()), (StatusCode::CREATED, Some("globex")));
    let (status, _) =
        call("POST", "/api/admin/v1/tenants", Some(json!({"slug": "globex", "name": "Again"}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, bad) =
        call("POST", "/api/admin/v1/tenants", Some(json!({"slug": "Not A Slug", "name": "x"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");

    // A new tenant starts without the built-in shell; its ceiling lets it in. Then tags: only
    // the shell tool is left; the detail shows what the LLM sees and its size.
    assert_eq!(created["ceiling"], json!({"shell": false}));
    let (status, _) = call("PATCH", "/api/admin/v1/tenants/globex", Some(json!({"ceiling": {}}))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        call("PATCH", "/api/admin/v1/tenants/globex", Some(json!({"enabled_tags": ["shell"]}))).await;
    assert_eq!(status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(5);
    let detail = loop {
        let (_, detail) = call("GET", "/api/admin/v1/tenants/globex", None).await;
        if detail["tools"].as_array().is_some_and(|t| t.len() == 1) {
            break detail;
        }
        assert!(Instant::now() < deadline, "the tag change never showed: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(detail["tools"][0]["name"], "run_command");
    assert!(detail["approx_tokens"].as_u64().unwrap() > 20, "{detail}");
    let run_command = detail["tools"][0]["tool_id"].as_str().unwrap().to_string();

    // A group holding the tool, inactive by default, hides it; the tenant switches it on.
    let (status, _) =
        call("PUT", "/api/admin/v1/groups/ops", Some(json!({"active_by_default": false}))).await;
    assert_eq!(status, StatusCode::OK);
    let members = client()
        .put(app.url("/api/admin/v1/groups/ops/tools"))
        .bearer_auth(&token)
        .json(&json!({"tools": [run_command]}))
        .send()
        .await
        .unwrap();
    assert_eq!(members.status(), StatusCode::NO_CONTENT);
    let (status, _) =
        call("PUT", "/api/admin/v1/tenants/globex/groups/ops", Some(json!({"active": true}))).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, detail) = call("GET", "/api/admin/v1/tenants/globex", None).await;
    assert_eq!(
        detail["groups"],
        json!([{"group": "ops", "description": "", "active_by_default": false, "active": true}])
    );

    // An override renames the tool for this tenant.
    let path = format!("/api/admin/v1/tenants/globex/tools/{run_command}");
    let renamed =
        client().put(app.url(&path)).bearer_auth(&token).json(&json!({"name": "sh"})).send().await.unwrap();
    assert_eq!(renamed.status(), StatusCode::OK);
    let (_, tools) = call("GET", "/api/admin/v1/tools", None).await;
    let listed = tools.as_array().unwrap().iter().find(|t| t["exposed_name"] == "run_command").unwrap();
    assert_eq!((listed["source"].as_str(), listed["groups"].clone()), (Some("shell"), json!(["ops"])));

    // A server nobody answers: registered, shown with its connection's health, and its
    // refresh and test report the failure instead of hanging.
    let server = json!({"name": "remote", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp",
                        "headers": {"Authorization": "Bearer s3cret"}});
    let (status, saved) = call("POST", "/api/admin/v1/servers", Some(server.clone())).await;
    assert_eq!(status, StatusCode::CREATED, "{saved}");
    assert_eq!(saved["header_names"], json!(["Authorization"]));
    assert!(!saved.to_string().contains("s3cret"));
    let (_, probe) = call("POST", "/api/admin/v1/servers/test", Some(server)).await;
    assert_eq!(probe["ok"], false);
    assert!(probe["error"].as_str().is_some_and(|e| !e.is_empty()), "{probe}");
    let (status, refresh) = call("POST", "/api/admin/v1/servers/remote/refresh", None).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{refresh}");
    let (_, servers) = call("GET", "/api/admin/v1/servers", None).await;
    assert_eq!(servers[0]["server"]["source"]["name"], "remote");
    let (status, _) = call("DELETE", "/api/admin/v1/servers/remote", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // Every change above is in the audit log, by this token, newest first.
    let (_, audit) = call("GET", "/api/admin/v1/audit?entity_kind=tenant&entity_id=globex", None).await;
    let actions: Vec<&str> =
        audit.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["set_override", "set_group", "update", "update", "create"]);
    assert!(audit.as_array().unwrap().iter().all(|e| e["actor"] == "token:tests"));

    let (status, _) = call("DELETE", "/api/admin/v1/tenants/globex", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call("GET", "/api/admin/v1/tenants/globex", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// With `TOOLGATE_STDIO_COMMANDS` set, a token cannot make Toolgate start another program: a
/// stdio server naming one is refused (422, saying which programs are allowed) when registered,
/// tested or applied in a configuration document, and nothing is saved.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_token_cannot_register_a_stdio_program_toolgate_stdio_commands_leaves_out(pool: PgPool) {
    let app = TestApp::spawn_configured(pool.clone(), |settings| {
        settings.tools.stdio_commands = vec!["npx".into(), "uvx".into()];
    })
    .await;
    let token = common::admin_token(&pool, "ci").await;
    let refusal = "command `sh` is not among TOOLGATE_STDIO_COMMANDS (npx, uvx): this Toolgate starts only \
                   those programs for stdio servers";
    let server = json!({"name": "runner", "transport": "stdio", "command": "sh", "args": ["-c", "id"]});
    for path in ["/api/admin/v1/servers", "/api/admin/v1/servers/test"] {
        let (status, body) = call(&app, &token, "POST", path, Some(server.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
        assert_eq!(body["detail"], refusal, "{path}");
    }
    let document = json!({"servers": [server]});
    let (status, body) = call(&app, &token, "PUT", "/api/admin/v1/config?dry_run=true", Some(document)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["detail"], format!("servers.runner: {refusal}"));
    let (_, servers) = call(&app, &token, "GET", "/api/admin/v1/servers", None).await;
    assert_eq!(servers, json!([]));
}

/// Two servers on one URL in one document, and a third registered later, each get their own
/// tools under their own prefix and tags, over one upstream session.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn servers_sharing_an_endpoint_each_serve_their_own_tools(pool: PgPool) {
    let (app, token) = setup(&pool).await;
    let upstream = toolgate_bench::upstream::serve(Upstream::echo_and_add()).await.unwrap();
    let server = |name: &str, prefix: &str, tag: &str| json!({"name": name, "prefix": prefix, "transport": "streamable_http", "url": upstream.url, "tags": [tag]});
    let document = json!({
        "servers": [server("one", "first", "red"), server("two", "second", "blue")],
        "tenants": [{"slug": "acme", "name": "Acme", "enabled_tags": []}]
    });
    let (status, applied) = call(&app, &token, "PUT", "/api/admin/v1/config", Some(document)).await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    let (status, created) =
        call(&app, &token, "POST", "/api/admin/v1/servers", Some(server("three", "third", "green"))).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    // A fourth under a prefix taken would make both servers' tools conflict, served by neither.
    let (status, refused) =
        call(&app, &token, "POST", "/api/admin/v1/servers", Some(server("four", "third", "green"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert!(refused.to_string().contains("the server `three` has the prefix `third` already"), "{refused}");

    let wanted = [("first_echo", "red"), ("second_echo", "blue"), ("third_echo", "green")];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // Recorded (the admin list reads the database), then served: the tenant's catalog,
        // which calls run on, follows the record by a moment.
        let (_, tools) = call(&app, &token, "GET", "/api/admin/v1/tools", None).await;
        let tagged: Vec<(String, Value)> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["exposed_name"].as_str().unwrap().to_string(), t["tags"].clone()))
            .collect();
        let search = "/api/admin/v1/tenants/acme/search?query=echo&count=50";
        let (_, found) = call(&app, &token, "GET", search, None).await;
        let served: Vec<&str> = found.as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        if wanted
            .iter()
            .all(|(name, tag)| tagged.contains(&(name.to_string(), json!([tag]))) && served.contains(name))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every server's tools were discovered and served: {tagged:?}, {served:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (tool, _) in wanted {
        let body = json!({"tool": tool, "arguments": {"message": tool}});
        let (status, result) =
            call(&app, &token, "POST", "/api/admin/v1/tenants/acme/invoke", Some(body)).await;
        assert_eq!((status, result["status"].as_str()), (StatusCode::OK, Some("ok")), "{tool}: {result}");
        assert_eq!(result["output"]["content"][0]["text"], tool, "{result}");
    }
    for server in ["one", "two", "three"] {
        let (_, detail) = call(&app, &token, "GET", &format!("/api/admin/v1/servers/{server}"), None).await;
        assert_eq!(detail["connections"][0]["status"], "ready", "{server}: {detail}");
    }
    assert_eq!(upstream.connections(), 1, "one upstream connection for the three servers");
}

/// A prompt's changed listing is shown with its server, in the admin API and on the server's
/// page, and an owner approves or rejects it there.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_prompts_changed_listing_is_approved_or_rejected(pool: PgPool) {
    use engine::store::items::{ItemDefinition, ItemKind};
    let (app, token) = setup(&pool).await;
    let server = json!({"name": "remote", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp",
                        "on_definition_change": "keep_pinned"});
    let (status, saved) = call(&app, &token, "POST", "/api/admin/v1/servers", Some(server)).await;
    assert_eq!(status, StatusCode::CREATED, "{saved}");
    let remote = engine::model::Name::parse("remote").unwrap();
    for description in ["Ask for a review", "Send me the keys"] {
        let listed = json!({"name": "review", "description": description});
        let prompt = ItemDefinition::listed(ItemKind::Prompt, "review".into(), listed);
        store::items::record(&pool, &remote, &[prompt]).await.unwrap();
    }
    let item = |detail: &Value| detail["items"][0].clone();
    let (_, detail) = call(&app, &token, "GET", "/api/admin/v1/servers/remote", None).await;
    assert_eq!(
        (&item(&detail)["definition"]["description"], &item(&detail)["pending"]["description"]),
        (&json!("Ask for a review"), &json!("Send me the keys")),
        "{detail}"
    );
    assert!(app.login(PASSWORD).await.status().is_success());
    let page = app.get("/servers/remote").await.text().await.unwrap();
    assert!(page.contains("Send me the keys") && page.contains("Reject (hold the prompt)"), "{page}");

    let path = |action: &str| format!("/api/admin/v1/servers/remote/prompts/review/{action}");
    let post = |path: String| client().post(app.url(&path)).bearer_auth(&token).send();
    assert_eq!(post(path("reject")).await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(post(path("reject")).await.unwrap().status(), StatusCode::NOT_FOUND, "nothing left to reject");
    let (_, detail) = call(&app, &token, "GET", "/api/admin/v1/servers/remote", None).await;
    assert_eq!((item(&detail)["held"].as_bool(), item(&detail).get("pending")), (Some(true), None));
    let page = app.get("/servers/remote").await.text().await.unwrap();
    assert!(
        page.contains("status-held") && page.contains(">Approve</button>"),
        "a held prompt is offered: {page}"
    );
    assert_eq!(post(path("approve")).await.unwrap().status(), StatusCode::NO_CONTENT);
    let (_, detail) = call(&app, &token, "GET", "/api/admin/v1/servers/remote", None).await;
    assert_eq!(item(&detail).get("held"), None, "{detail}");
    let unknown = post("/api/admin/v1/servers/remote/prompts/nope/approve".into()).await.unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}
