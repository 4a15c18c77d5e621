//! Prompts, resources, resource templates and completions of upstream servers, served to a
//! tenant's MCP clients and REST callers under the servers' rules: two servers (the conformance
//! upstream, `tests/python/conformance_server.py`, twice, under the prefixes `a` and `b`) offer
//! the same resources and template, which is a conflict neither is served for (and shown with
//! the tenant), until the tenant's tag whitelist leaves one server out. Subscriptions to a
//! resource pass the server's updates on, in both eras, and end upstream with the last session
//! holding one.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{ListChangedCounter, TestApp, tenant_key, venv_program_of};
use engine::model::{Name, Tag, TenantSlug};
use engine::store::servers::ServerConfig;
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor};
use rmcp::ServiceExt;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ProtocolVersion, ReadResourceRequestParams,
    Reference, ServerNotification, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use sqlx::PgPool;

/// Registers the conformance upstream at `port` as `name` with `prefix` and `tags`.
async fn register(pool: &PgPool, name: &str, prefix: &str, tags: &[&str], port: u16) {
    let mut server = ServerConfig::http(Name::parse(name).unwrap(), format!("http://127.0.0.1:{port}/mcp"));
    server.prefix = Some(prefix.into());
    server.tags = tags.iter().map(|t| Tag::parse(t).unwrap()).collect();
    store::servers::create(pool, &common::secret_box(), &Actor::system(), &server).await.unwrap();
}

/// Waits until `ready` holds of the tenant's REST listing at `path`.
async fn until_rest(app: &TestApp, key: &str, path: &str, ready: impl Fn(&serde_json::Value) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let listed = common::json_of(reqwest::Client::new().get(app.url(path)).bearer_auth(key)).await;
        if ready(&listed) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never ready: {listed}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn names(listed: &serde_json::Value, list: &str, field: &str) -> Vec<String> {
    listed[list].as_array().unwrap().iter().map(|item| item[field].as_str().unwrap().to_string()).collect()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn prompts_and_resources_are_served_by_server_and_a_conflict_by_neither(pool: PgPool) {
    let python = || venv_program_of("mcp1", "python");
    let (_alpha, alpha_port) = common::python_server(python(), "conformance_server.py", &[]).await;
    let (_beta, beta_port) = common::python_server(python(), "conformance_server.py", &[]).await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    register(&pool, "alpha", "a", &["docs"], alpha_port).await;
    register(&pool, "beta", "b", &[], beta_port).await;
    until_rest(&app, &key, "/api/v1/prompts", |listed| names(listed, "prompts", "name").len() == 8).await;

    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.clone());
    let counter = ListChangedCounter::default();
    let client = counter.clone().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let info = client.peer_info().unwrap();
    let server = info.server_info.as_ref().expect("Toolgate names itself");
    let named = (server.name.as_str(), server.version.as_str());
    assert_eq!(named, ("toolgate", env!("CARGO_PKG_VERSION")), "Toolgate names itself, not its MCP library");
    let capabilities = info.capabilities.clone();
    assert!(
        capabilities.prompts.is_some()
            && capabilities.resources.is_some()
            && capabilities.completions.is_some()
    );

    // Prompts take their server's prefix, and reach it under their own name.
    let prompts: Vec<String> = client.list_all_prompts().await.unwrap().into_iter().map(|p| p.name).collect();
    assert!(
        prompts.contains(&"a_test_simple_prompt".into()) && prompts.contains(&"b_test_simple_prompt".into())
    );
    let mut params = GetPromptRequestParams::new("a_test_prompt_with_arguments");
    params.arguments = Some(json!({"arg1": "first", "arg2": "second"}).as_object().unwrap().clone());
    let got = client.get_prompt(params).await.unwrap();
    let text = serde_json::to_string(&got.messages).unwrap();
    assert!(text.contains("arg1='first'") && text.contains("arg2='second'"), "{text}");
    let unknown = client.get_prompt(GetPromptRequestParams::new("test_simple_prompt")).await.unwrap_err();
    assert!(unknown.to_string().contains("prompt `test_simple_prompt` not found"), "{unknown}");
    let completion = CompleteRequestParams::new(
        Reference::for_prompt("b_test_prompt_with_arguments"),
        ArgumentInfo::new("arg1", "test"),
    );
    let completed = client.complete(completion).await.unwrap();
    assert_eq!(completed.completion.values, ["testValue1", "testValue2"]);

    // Both servers list the same URIs and template: neither is served.
    assert!(client.list_all_resources().await.unwrap().is_empty());
    assert!(client.list_all_resource_templates().await.unwrap().is_empty());
    let refused =
        client.read_resource(ReadResourceRequestParams::new("test://static-text")).await.unwrap_err();
    assert!(refused.to_string().contains("resource `test://static-text` not found"), "{refused}");
    // The conflict is shown with the tenant: in the admin API and on its page in the panel.
    let token = common::admin_token(&pool, "items").await;
    let admin = reqwest::Client::new().get(app.url("/api/admin/v1/tenants/acme")).bearer_auth(&token);
    let detail = common::json_of(admin).await;
    let static_text = json!({
        "kind": "resource", "exposed": "test://static-text", "servers": ["alpha", "beta"],
        "keys": ["test://static-text", "test://static-text"]
    });
    assert!(detail["item_conflicts"].as_array().unwrap().contains(&static_text), "{detail}");
    assert!(
        detail["items"].as_array().unwrap().iter().any(|i| i["name"] == "a_test_simple_prompt"),
        "{detail}"
    );
    assert!(app.login(common::PASSWORD).await.status().is_success());
    let page = app.get("/tenants/acme").await.text().await.unwrap();
    let shown = "Conflict: the resource `test://static-text` is offered by alpha and beta.";
    assert!(page.contains(shown) && page.contains("a_test_simple_prompt"), "{page}");

    // The tenant leaves alpha's tag out: its prompts go, and beta's resources are served.
    let no_docs =
        TenantUpdate { enabled_tags: Some(Some(vec![Tag::parse("other").unwrap()])), ..Default::default() };
    store::tenants::update(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), no_docs)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while counter.prompts_changed.load(Ordering::SeqCst) == 0
        || counter.resources_changed.load(Ordering::SeqCst) == 0
    {
        assert!(std::time::Instant::now() < deadline, "no list_changed for prompts and resources");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let prompts: Vec<String> = client.list_all_prompts().await.unwrap().into_iter().map(|p| p.name).collect();
    assert!(prompts.iter().all(|name| name.starts_with("b_")), "{prompts:?}");
    let read = client.read_resource(ReadResourceRequestParams::new("test://static-text")).await.unwrap();
    assert!(serde_json::to_string(&read).unwrap().contains("static text resource"), "{read:?}");
    let templated =
        client.read_resource(ReadResourceRequestParams::new("test://template/42/data")).await.unwrap();
    assert!(serde_json::to_string(&templated).unwrap().contains("Data for ID: 42"), "{templated:?}");
    let binary = client.read_resource(ReadResourceRequestParams::new("test://static-binary")).await.unwrap();
    assert!(serde_json::to_value(&binary).unwrap()["contents"][0]["blob"].is_string(), "{binary:?}");
    client.cancel().await.unwrap();

    // The same over REST.
    let rest = reqwest::Client::new();
    let listed = common::json_of(rest.get(app.url("/api/v1/resources")).bearer_auth(&key)).await;
    assert!(names(&listed, "resources", "uri").contains(&"test://static-text".into()), "{listed}");
    assert_eq!(names(&listed, "resourceTemplates", "uriTemplate"), ["test://template/{id}/data"]);
    let got = common::json_of(
        rest.post(app.url("/api/v1/prompts/b_test_prompt_with_arguments/get"))
            .bearer_auth(&key)
            .json(&json!({"arguments": {"arg1": "x", "arg2": "y"}})),
    )
    .await;
    assert!(got["messages"].to_string().contains("arg1='x'"), "{got}");
    let read = rest
        .get(app.url("/api/v1/resources/read"))
        .query(&[("uri", "test://template/7/data")])
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    assert!(read.text().await.unwrap().contains("Data for ID: 7"));
    let missing = rest
        .get(app.url("/api/v1/resources/read"))
        .query(&[("uri", "test://nowhere")])
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let gone = rest
        .post(app.url("/api/v1/prompts/a_test_simple_prompt/get"))
        .bearer_auth(&key)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
}

/// Waits until `count` has moved past `before`.
async fn until_moved(count: &std::sync::atomic::AtomicUsize, before: usize, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while count.load(Ordering::SeqCst) == before {
        assert!(std::time::Instant::now() < deadline, "no list_changed for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_hides_renames_and_describes_single_prompts_and_resources(pool: PgPool) {
    let python = || venv_program_of("mcp1", "python");
    let (_alpha, alpha_port) = common::python_server(python(), "conformance_server.py", &[]).await;
    let (_beta, beta_port) = common::python_server(python(), "conformance_server.py", &[]).await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    register(&pool, "alpha", "a", &[], alpha_port).await;
    register(&pool, "beta", "b", &[], beta_port).await;
    until_rest(&app, &key, "/api/v1/prompts", |listed| names(listed, "prompts", "name").len() == 8).await;
    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.clone());
    let counter = ListChangedCounter::default();
    let client = counter.clone().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let token = common::admin_token(&pool, "items").await;
    let admin = reqwest::Client::new();
    let choose = |server: &str, kind: &str, key: &str| {
        admin
            .put(app.url("/api/admin/v1/tenants/acme/items"))
            .query(&[("server", server), ("kind", kind), ("key", key)])
            .bearer_auth(&token)
    };

    // Hiding beta's resource settles that conflict: alpha's is served, the others stay withheld.
    let before = counter.resources_changed.load(Ordering::SeqCst);
    let hidden = choose("beta", "resource", "test://static-text")
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(hidden.status(), 200);
    let hidden: serde_json::Value = hidden.json().await.unwrap();
    assert_eq!(
        (hidden["server"].as_str(), hidden["enabled"].as_bool()),
        (Some("beta"), Some(false)),
        "{hidden}"
    );
    until_moved(&counter.resources_changed, before, "resources").await;
    let uris: Vec<String> = client.list_all_resources().await.unwrap().into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["test://static-text"]);
    let read = client.read_resource(ReadResourceRequestParams::new("test://static-text")).await.unwrap();
    assert!(serde_json::to_string(&read).unwrap().contains("static text resource"), "{read:?}");

    // A prompt renamed and described for this tenant; its old name is no longer served.
    let before = counter.prompts_changed.load(Ordering::SeqCst);
    let renamed = choose("alpha", "prompt", "test_simple_prompt")
        .json(&json!({"name": "simple", "description": "Greets, simply."}))
        .send()
        .await
        .unwrap();
    assert_eq!(renamed.status(), 200);
    until_moved(&counter.prompts_changed, before, "prompts").await;
    let prompts = client.list_all_prompts().await.unwrap();
    let simple = prompts.iter().find(|p| p.name == "simple").expect("renamed");
    assert_eq!(simple.description.as_deref(), Some("Greets, simply."));
    assert!(!prompts.iter().any(|p| p.name == "a_test_simple_prompt"));
    client.get_prompt(GetPromptRequestParams::new("simple")).await.unwrap();
    let gone = client.get_prompt(GetPromptRequestParams::new("a_test_simple_prompt")).await.unwrap_err();
    assert!(gone.to_string().contains("not found"), "{gone}");

    // Refused, each saying why: a name another prompt has, a renamed resource, an unknown item,
    // a description over 8 KiB.
    let refusals = [
        (
            choose("beta", "prompt", "test_simple_prompt").json(&json!({"name": "simple"})),
            422,
            "prompt `test_simple_prompt` of server `alpha`",
        ),
        (
            choose("alpha", "resource", "test://static-text").json(&json!({"name": "x"})),
            422,
            "only a prompt takes another name",
        ),
        (
            choose("alpha", "prompt", "nothing").json(&json!({"enabled": false})),
            404,
            "prompt `nothing` of server `alpha`",
        ),
        (
            choose("alpha", "prompt", "test_simple_prompt").json(&json!({"description": "x".repeat(9000)})),
            422,
            "at most 8192 bytes",
        ),
    ];
    for (request, status, says) in refusals {
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), status);
        let text = answer.text().await.unwrap();
        assert!(text.contains(says), "{text}");
    }

    // The tenant's page and the admin API show the choices.
    let detail = common::json_of(admin.get(app.url("/api/admin/v1/tenants/acme")).bearer_auth(&token)).await;
    assert_eq!(detail["item_overrides"].as_array().unwrap().len(), 2, "{detail}");
    assert!(app.login(common::PASSWORD).await.status().is_success());
    let page = app.get("/tenants/acme").await.text().await.unwrap();
    assert!(page.contains("This tenant&#x27;s choices") || page.contains("This tenant's choices"), "{page}");
    assert!(page.contains("named simple"), "{page}");

    // The configuration document keeps them by server and key, and applies them back.
    let config = || admin.get(app.url("/api/admin/v1/config")).bearer_auth(&token);
    let mut document = common::json_of(config()).await;
    let acme = &document["tenants"][0];
    assert_eq!(
        acme["prompts"]["alpha"]["test_simple_prompt"],
        json!({"name": "simple", "description": "Greets, simply."})
    );
    assert_eq!(acme["resources"]["beta"]["test://static-text"], json!({"enabled": false}));
    let apply = |document: &serde_json::Value| {
        admin.put(app.url("/api/admin/v1/config")).bearer_auth(&token).json(document).send()
    };
    let same: serde_json::Value = apply(&document).await.unwrap().json().await.unwrap();
    assert_eq!(same["changes"], json!([]), "{same}");
    // Written out, a default (`enabled: true`, a server with no choice) changes nothing either.
    let mut spelled = document.clone();
    spelled["tenants"][0]["prompts"]["alpha"]["test_simple_prompt"]["enabled"] = json!(true);
    spelled["tenants"][0]["resource_templates"] = json!({"beta": {}});
    let same: serde_json::Value = apply(&spelled).await.unwrap().json().await.unwrap();
    assert_eq!(same["changes"], json!([]), "{same}");
    document["tenants"][0].as_object_mut().unwrap().remove("resources");
    document["tenants"][0]["resource_templates"] =
        json!({"alpha": {"test://template/{id}/data": {"enabled": false}}});
    let applied: serde_json::Value = apply(&document).await.unwrap().json().await.unwrap();
    assert_eq!(applied["applied"], true, "{applied}");
    let acme = common::json_of(config()).await["tenants"][0].clone();
    assert!(acme.get("resources").is_none(), "{acme}");
    document["tenants"][0]["prompts"] = json!({"nowhere": {"x": {"enabled": false}}});
    let refused = apply(&document).await.unwrap();
    assert_eq!(refused.status(), 422);
    let text = refused.text().await.unwrap();
    assert!(
        text.contains("tenants.acme.prompts.nowhere.x: server `nowhere` is not among the document's servers"),
        "{text}"
    );

    // Beta's template is the one served now; removing the prompt's choice brings its name back.
    until_rest(&app, &key, "/api/v1/resources", |listed| {
        names(listed, "resources", "uri").is_empty()
            && names(listed, "resourceTemplates", "uriTemplate").len() == 1
    })
    .await;
    let removed = admin
        .delete(app.url("/api/admin/v1/tenants/acme/items"))
        .query(&[("server", "alpha"), ("kind", "prompt"), ("key", "test_simple_prompt")])
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 204);
    until_rest(&app, &key, "/api/v1/prompts", |listed| {
        names(listed, "prompts", "name").contains(&"a_test_simple_prompt".to_string())
    })
    .await;
    client.cancel().await.unwrap();
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn prompts_and_resources_in_a_group_are_served_where_it_is_active(pool: PgPool) {
    let (_alpha, port) =
        common::python_server(venv_program_of("mcp1", "python"), "conformance_server.py", &[]).await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    register(&pool, "alpha", "a", &[], port).await;
    until_rest(&app, &key, "/api/v1/prompts", |listed| names(listed, "prompts", "name").len() == 4).await;
    let token = common::admin_token(&pool, "groups").await;
    let admin = reqwest::Client::new();
    let send = |request: reqwest::RequestBuilder| request.bearer_auth(&token).send();
    let created =
        send(admin.put(app.url("/api/admin/v1/groups/docs")).json(&json!({"active_by_default": false})));
    assert_eq!(created.await.unwrap().status(), 200);
    let members = json!([
        {"server": "alpha", "kind": "prompt", "key": "test_simple_prompt"},
        {"server": "alpha", "kind": "resource", "key": "test://static-text"},
    ]);
    let set = send(admin.put(app.url("/api/admin/v1/groups/docs/items")).json(&members)).await.unwrap();
    assert_eq!(set.status(), 204);
    let listed =
        common::json_of(admin.get(app.url("/api/admin/v1/groups/docs/items")).bearer_auth(&token)).await;
    assert_eq!(listed, members);
    let unknown = json!([{"server": "alpha", "kind": "prompt", "key": "nothing"}]);
    let refused = send(admin.put(app.url("/api/admin/v1/groups/docs/items")).json(&unknown)).await.unwrap();
    assert_eq!(refused.status(), 404);
    let nowhere = send(admin.get(app.url("/api/admin/v1/groups/nowhere/items"))).await.unwrap();
    assert_eq!(nowhere.status(), 404);

    // The group is inactive: its prompt and resource are not served; the rest are.
    let served = |listed: &serde_json::Value| {
        let prompts = names(listed, "prompts", "name");
        (prompts.len(), prompts.contains(&"a_test_simple_prompt".to_string()))
    };
    until_rest(&app, &key, "/api/v1/prompts", |listed| served(listed) == (3, false)).await;
    until_rest(&app, &key, "/api/v1/resources", |listed| {
        let uris = names(listed, "resources", "uri");
        !uris.is_empty() && !uris.contains(&"test://static-text".to_string())
    })
    .await;

    // The tenant turns the group on: both are served.
    let on =
        send(admin.put(app.url("/api/admin/v1/tenants/acme/groups/docs")).json(&json!({"active": true})));
    assert_eq!(on.await.unwrap().status(), 204);
    until_rest(&app, &key, "/api/v1/prompts", |listed| served(listed) == (4, true)).await;
    until_rest(&app, &key, "/api/v1/resources", |listed| {
        names(listed, "resources", "uri").contains(&"test://static-text".to_string())
    })
    .await;

    // The configuration document names them by server, kind and key, and applies them back.
    let document = common::json_of(admin.get(app.url("/api/admin/v1/config")).bearer_auth(&token)).await;
    assert_eq!(document["groups"][0]["items"], members, "{document}");
    let same = send(admin.put(app.url("/api/admin/v1/config")).json(&document)).await.unwrap();
    assert_eq!(same.json::<serde_json::Value>().await.unwrap()["changes"], json!([]));
}

const WATCHED: &str = "test://watched-resource";

/// What the upstream says it is subscribed to, asked through a call of its tool over REST.
async fn upstream_subscriptions(app: &TestApp, key: &str) -> String {
    let touch = reqwest::Client::new()
        .post(app.url("/api/v1/tools/w_test_touch_subscribed_resources/invoke"))
        .bearer_auth(key)
        .json(&json!({"arguments": {}}));
    let result = common::json_of(touch).await;
    result["output"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{result}")).to_string()
}

/// Waits until the upstream is subscribed to `expected`.
async fn until_upstream_subscribed(app: &TestApp, key: &str, expected: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let subscribed = upstream_subscriptions(app, key).await;
        if subscribed == format!("subscribed: {expected}") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream stayed at `{subscribed}`, not `{expected}`"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
#[allow(deprecated)] // `resources/subscribe` is of the handshake era, which this test speaks too.
async fn subscriptions_pass_updates_on_and_end_upstream_with_their_last_holder(pool: PgPool) {
    let (_upstream, port) =
        common::python_server(venv_program_of("mcp1", "python"), "conformance_server.py", &[]).await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    register(&pool, "watched", "w", &[], port).await;
    common::until_listed(&app.url(""), &key, "w_test_touch_subscribed_resources").await;
    let transport = || {
        let config =
            StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.clone());
        StreamableHttpClientTransport::from_config(config)
    };

    // A session subscribes and hears the update; a session that did not hears nothing.
    let counter = ListChangedCounter::default();
    let client = counter.clone().serve(transport()).await.unwrap();
    let bystander = ListChangedCounter::default();
    let other = bystander.clone().serve(transport()).await.unwrap();
    assert_eq!(client.peer_info().unwrap().capabilities.resources.as_ref().unwrap().subscribe, Some(true));
    client.subscribe(SubscribeRequestParams::new(WATCHED)).await.unwrap();
    let unknown = client.subscribe(SubscribeRequestParams::new("test://nowhere")).await.unwrap_err();
    assert!(unknown.to_string().contains("resource `test://nowhere` not found"), "{unknown}");
    assert_eq!(upstream_subscriptions(&app, &key).await, format!("subscribed: {WATCHED}"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !counter.resources_updated.lock().unwrap().contains(&WATCHED.to_string()) {
        assert!(std::time::Instant::now() < deadline, "the update never reached the session");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Every session's relay got the update at the same moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        bystander.resources_updated.lock().unwrap().is_empty(),
        "an update reached a session that did not subscribe"
    );

    // Two sessions hold a subscription: the upstream keeps it until the last one lets go, here
    // by ending its session without unsubscribing.
    other.subscribe(SubscribeRequestParams::new(WATCHED)).await.unwrap();
    client.unsubscribe(UnsubscribeRequestParams::new(WATCHED)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(upstream_subscriptions(&app, &key).await, format!("subscribed: {WATCHED}"));
    other.cancel().await.unwrap();
    until_upstream_subscribed(&app, &key, "").await;

    // One session, subscribing and unsubscribing.
    client.subscribe(SubscribeRequestParams::new(WATCHED)).await.unwrap();
    until_upstream_subscribed(&app, &key, WATCHED).await;
    client.unsubscribe(UnsubscribeRequestParams::new(WATCHED)).await.unwrap();
    until_upstream_subscribed(&app, &key, "").await;
    client.cancel().await.unwrap();

    // On 2026-07-28 a client subscribes through `subscriptions/listen`, for as long as it listens.
    let current = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = ListChangedCounter::default().serve_with_lifecycle(transport(), current).await.unwrap();
    let filter = SubscriptionFilter::builder().resource_subscriptions([WATCHED]).build();
    let mut subscription = client.peer().listen(filter).await.unwrap();
    assert_eq!(subscription.acknowledged().resource_subscriptions, Some(vec![WATCHED.to_string()]));
    until_upstream_subscribed(&app, &key, WATCHED).await;
    // The wait's own calls may have sent the update before Toolgate relayed: one more.
    upstream_subscriptions(&app, &key).await;
    let heard = tokio::time::timeout(Duration::from_secs(5), subscription.next()).await;
    match heard.expect("no update within 5 s").unwrap().expect("the stream is open") {
        ServerNotification::ResourceUpdatedNotification(update) => assert_eq!(update.params.uri, WATCHED),
        other => panic!("expected the resource's update, got {other:?}"),
    }
    drop(subscription);
    until_upstream_subscribed(&app, &key, "").await;
}

/// Has the listen server publish an update of `uri`, through a call of its tool over REST.
async fn touch(app: &TestApp, key: &str, uri: &str) {
    let request = reqwest::Client::new()
        .post(app.url("/api/v1/tools/f_touch/invoke"))
        .bearer_auth(key)
        .json(&json!({"arguments": {"uri": uri}}));
    assert_eq!(common::json_of(request).await["output"]["content"][0]["text"], format!("touched {uri}"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
#[allow(deprecated)] // The session is of the handshake era; the upstream speaks 2026-07-28.
async fn subscriptions_reach_a_server_on_2026_07_28_through_its_listen_stream(pool: PgPool) {
    let (_upstream, port) =
        common::python_server(venv_program_of("", "python"), "listen_server.py", &[]).await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    register(&pool, "fresh", "f", &[], port).await;
    common::until_listed(&app.url(""), &key, "f_touch").await;
    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.clone());
    let counter = ListChangedCounter::default();
    let client = counter.clone().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let updated = || counter.resources_updated.lock().unwrap().clone();

    // Subscribed: the server's update reaches the session, and only for that resource.
    client.subscribe(SubscribeRequestParams::new(WATCHED)).await.unwrap();
    touch(&app, &key, "test://other-resource").await;
    touch(&app, &key, WATCHED).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while updated().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the update never reached the session");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(updated(), [WATCHED]);

    // Unsubscribed: the stream opens again without it, and nothing more arrives.
    client.unsubscribe(UnsubscribeRequestParams::new(WATCHED)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    touch(&app, &key, WATCHED).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(updated(), [WATCHED], "an update arrived after the unsubscription");
    client.cancel().await.unwrap();
}
