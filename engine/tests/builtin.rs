//! The built-in `files` and `shell` tools on a real file system and real processes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::builtin::{BuiltinConfig, providers};
use engine::tool::{Caller, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

/// Each tenant's folder may hold this many bytes.
const QUOTA: u64 = 1000;

struct Sandbox {
    root: PathBuf,
    tools: Vec<Arc<dyn Tool>>,
}

impl Sandbox {
    fn new() -> Self {
        let root = std::env::temp_dir().join(format!("toolgate-builtin-{}", uuid::Uuid::new_v4()));
        let config = BuiltinConfig {
            files_root: root.clone(),
            shell_allow: ["echo", "sleep", "seq", "cat", "ls:-a:--color"]
                .map(|rule| rule.parse().unwrap())
                .to_vec(),
            shell_timeout: Duration::from_secs(1),
            shell_output_cap: 1000,
            files_quota: QUOTA,
        };
        let tools = providers(&config).iter().flat_map(|p| p.tools()).collect();
        Sandbox { root, tools }
    }

    async fn call(&self, tenant: &str, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let tool = self.tools.iter().find(|t| t.spec().name == name).expect("tool exists");
        let ctx = ToolContext::new(uuid::Uuid::new_v4(), tenant, Caller::Admin("tester".into()), "req-1");
        tool.call(args, &ctx).await
    }

    async fn ok(&self, tenant: &str, name: &str, args: Value) -> ToolOutput {
        self.call(tenant, name, args).await.unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    async fn refused(&self, tenant: &str, name: &str, args: Value) -> String {
        match self.call(tenant, name, args).await {
            Err(ToolError::Tool(message)) => message,
            other => panic!("{name}: expected a tool error, got {other:?}"),
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn text(output: &ToolOutput) -> &str {
    output.texts().next().unwrap_or_else(|| panic!("expected text, got {output:?}"))
}

/// What an LLM reads of a built-in's arguments is written for it: no Rust type's name as the
/// schema's title ("WriteArgs"), and every parameter described.
#[test]
fn every_built_in_parameter_is_described_and_no_type_name_shows() {
    let sandbox = Sandbox::new();
    for tool in &sandbox.tools {
        let spec = tool.spec();
        assert_eq!(spec.input_schema.get("title"), None, "{}: {}", spec.name, spec.input_schema);
        let properties = spec.input_schema["properties"].as_object().expect("an object's properties");
        for (name, property) in properties {
            let described = property["description"].as_str().is_some_and(|d| !d.trim().is_empty());
            assert!(described, "{}: `{name}` has no description", spec.name);
        }
    }
}

#[tokio::test]
async fn write_view_insert_and_list_within_the_tenant_folder() {
    let sandbox = Sandbox::new();
    sandbox
        .ok("acme", "write_text_file", json!({"path": "notes/todo.txt", "content": "one\ntwo\nthree\n"}))
        .await;
    let all = sandbox.ok("acme", "view_text_file", json!({"path": "notes/todo.txt"})).await;
    assert_eq!(text(&all), "1: one\n2: two\n3: three");
    let range = sandbox
        .ok("acme", "view_text_file", json!({"path": "notes/todo.txt", "start_line": 2, "end_line": 3}))
        .await;
    assert_eq!(text(&range), "2: two\n3: three");

    sandbox
        .ok(
            "acme",
            "insert_text_file",
            json!({"path": "notes/todo.txt", "content": "one and a half", "line": 2}),
        )
        .await;
    sandbox
        .ok(
            "acme",
            "write_text_file",
            json!({"path": "notes/todo.txt", "content": "THREE", "start_line": 4, "end_line": 4}),
        )
        .await;
    let edited = sandbox.ok("acme", "view_text_file", json!({"path": "notes/todo.txt"})).await;
    assert_eq!(text(&edited), "1: one\n2: one and a half\n3: two\n4: THREE");

    let listing = sandbox.ok("acme", "list_directory", json!({})).await;
    let empty_path = sandbox.ok("acme", "list_directory", json!({"path": ""})).await;
    assert_eq!(
        empty_path.0.structured_content.unwrap()["entries"],
        listing.0.structured_content.as_ref().unwrap()["entries"]
    );
    let entries = listing.0.structured_content.unwrap()["entries"].clone();
    assert_eq!(
        (entries[0]["name"].as_str(), entries[0]["type"].as_str()),
        (Some("notes"), Some("directory"))
    );
    assert_eq!(entries.as_array().unwrap().len(), 1);
    assert!(sandbox.root.join("acme/notes/todo.txt").is_file());
}

#[tokio::test]
async fn tenants_do_not_see_each_others_files() {
    let sandbox = Sandbox::new();
    sandbox.ok("acme", "write_text_file", json!({"path": "secret.txt", "content": "acme only"})).await;
    let message = sandbox.refused("globex", "view_text_file", json!({"path": "secret.txt"})).await;
    assert_eq!(message, "`secret.txt` does not exist");
}

#[tokio::test]
async fn escapes_are_refused_with_a_clear_error() {
    let sandbox = Sandbox::new();
    let dotdot = sandbox.refused("acme", "view_text_file", json!({"path": "../globex/secret.txt"})).await;
    assert!(dotdot.contains("`..` is not allowed"), "{dotdot}");
    let absolute = sandbox.refused("acme", "view_text_file", json!({"path": "/etc/passwd"})).await;
    assert!(absolute.contains("absolute paths are not allowed"), "{absolute}");
    let sneaky =
        sandbox.refused("acme", "write_text_file", json!({"path": "a/../../x", "content": ""})).await;
    assert!(sneaky.contains("`..` is not allowed"));

    // A symlink planted inside the folder that points outside is not followed.
    sandbox.ok("acme", "list_directory", json!({})).await;
    std::os::unix::fs::symlink("/etc", sandbox.root.join("acme/etc-link")).unwrap();
    let through_link = sandbox.refused("acme", "view_text_file", json!({"path": "etc-link/hostname"})).await;
    assert!(through_link.contains("leads outside your folder"), "{through_link}");
    let write_through =
        sandbox.refused("acme", "write_text_file", json!({"path": "etc-link/new", "content": "x"})).await;
    assert!(write_through.contains("leads outside your folder"));
}

#[tokio::test]
async fn a_dangling_symlink_does_not_lead_a_write_outside() {
    let sandbox = Sandbox::new();
    sandbox.ok("acme", "list_directory", json!({})).await;
    let outside = sandbox.root.join("outside.txt");
    std::os::unix::fs::symlink(&outside, sandbox.root.join("acme/dangling")).unwrap();
    let refused =
        sandbox.refused("acme", "write_text_file", json!({"path": "dangling", "content": "x"})).await;
    assert!(refused.contains("leads outside your folder"), "{refused}");
    assert!(!outside.exists(), "the write followed the symlink out of the folder");
    std::os::unix::fs::symlink("../../outside-dir/f", sandbox.root.join("acme/up")).unwrap();
    let up = sandbox.refused("acme", "write_text_file", json!({"path": "up", "content": "x"})).await;
    assert!(up.contains("leads outside your folder"), "{up}");
}

#[tokio::test]
async fn a_tenant_folder_holds_at_most_its_quota() {
    let sandbox = Sandbox::new();
    let big = "x".repeat(600);
    sandbox.ok("acme", "write_text_file", json!({"path": "a.txt", "content": big})).await;
    let over = sandbox.refused("acme", "write_text_file", json!({"path": "b/b.txt", "content": big})).await;
    assert!(over.contains("over the folder's quota of 1000 bytes"), "{over}");
    assert!(!sandbox.root.join("acme/b/b.txt").exists());
    // Rewriting a file counts its new size, not both.
    sandbox.ok("acme", "write_text_file", json!({"path": "a.txt", "content": "x".repeat(900)})).await;
    let insert = sandbox
        .refused("acme", "insert_text_file", json!({"path": "a.txt", "content": big, "line": 1}))
        .await;
    assert!(insert.contains("quota"), "{insert}");
    // Another tenant has its own quota.
    sandbox.ok("globex", "write_text_file", json!({"path": "a.txt", "content": big})).await;
}

#[tokio::test]
async fn line_ranges_outside_the_file_are_explained() {
    let sandbox = Sandbox::new();
    sandbox.ok("acme", "write_text_file", json!({"path": "f.txt", "content": "a\nb\n"})).await;
    let past = sandbox.refused("acme", "view_text_file", json!({"path": "f.txt", "start_line": 5})).await;
    assert!(past.contains("outside `f.txt`, which has 2 lines"), "{past}");
    let insert = sandbox
        .refused("acme", "insert_text_file", json!({"path": "f.txt", "content": "x", "line": 9}))
        .await;
    assert!(insert.contains("line 9 is outside `f.txt` (1 to 3)"), "{insert}");
}

#[tokio::test]
async fn allowed_programs_run_without_a_shell() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .ok("acme", "run_command", json!({"program": "echo", "args": ["$(whoami)", "; rm -rf /"]}))
        .await;
    let result = output.0.structured_content.unwrap();
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["stdout"], "$(whoami) ; rm -rf /\n", "arguments are passed literally");
}

#[tokio::test]
async fn programs_off_the_allow_list_are_refused() {
    let sandbox = Sandbox::new();
    let message =
        sandbox.refused("acme", "run_command", json!({"program": "sh", "args": ["-c", "id"]})).await;
    assert_eq!(message, "program `sh` is not allowed (allowed: echo, sleep, seq, cat, ls)");
}

#[tokio::test]
async fn program_arguments_stay_in_the_tenant_folder_and_flags_on_the_list() {
    let sandbox = Sandbox::new();
    sandbox.ok("acme", "write_text_file", json!({"path": "notes.txt", "content": "acme's notes"})).await;
    let run = |program: &str, args: &[&str]| json!({"program": program, "args": args});
    let cat =
        sandbox.ok("acme", "run_command", run("cat", &["notes.txt"])).await.0.structured_content.unwrap();
    assert_eq!(cat["stdout"], "acme's notes", "programs run in the tenant's folder");
    let listed = sandbox.ok("acme", "run_command", run("ls", &["-a", "--color=never", "."])).await;
    assert!(listed.0.structured_content.unwrap()["stdout"].as_str().unwrap().contains("notes.txt"));

    std::fs::write(sandbox.root.join("secret.key"), "not for tenants").unwrap();
    let up = sandbox.refused("acme", "run_command", run("cat", &["../secret.key"])).await;
    assert!(up.contains("absolute paths and `..` are not allowed"), "{up}");
    let absolute = sandbox.refused("acme", "run_command", run("cat", &["/etc/hostname"])).await;
    assert!(absolute.contains("absolute paths and `..` are not allowed"), "{absolute}");
    let in_value = sandbox.refused("acme", "run_command", run("ls", &["--color=/etc"])).await;
    assert!(in_value.contains("absolute paths"), "a flag's value is checked as a path: {in_value}");
    std::os::unix::fs::symlink(sandbox.root.join("secret.key"), sandbox.root.join("acme/key")).unwrap();
    let linked = sandbox.refused("acme", "run_command", run("cat", &["key"])).await;
    assert!(linked.contains("leads outside your folder"), "{linked}");
    let after_dashes = sandbox.refused("acme", "run_command", run("cat", &["--", "/etc/hostname"])).await;
    assert!(after_dashes.contains("absolute paths"), "{after_dashes}");

    let flag = sandbox.refused("acme", "run_command", run("ls", &["-l"])).await;
    assert_eq!(flag, "`ls` may not take the flag `-l` (allowed: -a, --color)");
    let none = sandbox.refused("acme", "run_command", run("cat", &["-v", "notes.txt"])).await;
    assert_eq!(none, "`cat` may not take the flag `-v` (allowed: none)");
}

#[test]
fn program_rules_are_parsed_with_clear_errors() {
    use engine::builtin::shell::ProgramRule;
    let rule: ProgramRule = "grep:-n:--ignore-case".parse().unwrap();
    assert_eq!(
        (rule.program.as_str(), rule.flags),
        ("grep", vec!["-n".to_string(), "--ignore-case".to_string()])
    );
    assert!("".parse::<ProgramRule>().unwrap_err().contains("name a program"));
    assert!("find:-name:exec".parse::<ProgramRule>().unwrap_err().contains("`exec` is not a flag"));
    assert!("git:-c=x".parse::<ProgramRule>().unwrap_err().contains("no `=value`"));
}

#[tokio::test]
async fn a_command_over_its_time_is_killed() {
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let message = sandbox
        .refused("acme", "run_command", json!({"program": "sleep", "args": ["30"], "timeout_seconds": 60}))
        .await;
    assert!(message.contains("did not finish within 1s and was killed"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn command_output_is_capped() {
    let sandbox = Sandbox::new();
    let output = sandbox.ok("acme", "run_command", json!({"program": "seq", "args": ["100000"]})).await;
    let result = output.0.structured_content.unwrap();
    assert_eq!(result["stdout"].as_str().unwrap().len(), 1000);
    assert_eq!(result["truncated"], true);
}
