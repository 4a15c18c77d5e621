//! Toolgate against schemathesis, installed by `make test` into a virtualenv
//! (`TOOLGATE_VENV`), fuzzing the REST API from its own OpenAPI document (no answer may be a
//! 5xx).

mod common;

use std::process::Command;

use common::{TestApp, tenant_key, venv_program};
use serde_json::Value;
use sqlx::PgPool;

/// Runs a program to its end off the async threads (the server under test runs on them).
async fn run(mut command: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_openapi_document_holds_and_fuzzing_finds_no_server_error(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let document: Value = reqwest::get(app.url("/api/v1/openapi.json")).await.unwrap().json().await.unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let paths: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        [
            "/api/v1/calls/{id}/resume",
            "/api/v1/prompts",
            "/api/v1/prompts/{name}/get",
            "/api/v1/resources",
            "/api/v1/resources/read",
            "/api/v1/tool_calls",
            "/api/v1/tools",
            "/api/v1/tools/{name}/invoke"
        ]
    );

    let mut command = Command::new(venv_program("schemathesis"));
    command
        .args(["run", &app.url("/api/v1/openapi.json"), "--url", &app.url("")])
        .args(["--header", &format!("Authorization: Bearer {key}")])
        .args(["--checks", "not_a_server_error", "--max-examples", "40", "--workers", "1"])
        .env("SCHEMATHESIS_HOOKS", "")
        .env("NO_COLOR", "1")
        // It keeps a cache of what it found in its working directory: not in the clone.
        .current_dir(std::env::temp_dir());
    let output = run(command).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
