//! Which programs Toolgate starts for stdio servers (`TOOLGATE_STDIO_COMMANDS`), and what
//! their environment may not set.

use crate::store::servers::{ServerConfig, Transport};

/// Refuses a stdio server this Toolgate does not start: one whose `command` is not among
/// `allowed` (`TOOLGATE_STDIO_COMMANDS`; empty allows any). The match is exact, on the text
/// of the command: `npx` allows the command `npx` (looked up on `PATH`), not `/usr/bin/npx`,
/// and `/usr/bin/npx` allows only that path; a relative path is never allowed. While the list
/// is set, a server's `env` may not set what would start other code than the program named:
/// `PATH` for a bare name, the dynamic loader's and package managers' variables, interpreters'
/// options and module paths, `HOME`.
///
/// Checked when a server is registered, changed, tested or applied in a configuration
/// document, and again before a stdio server's program is started (one stored before the
/// list was set is not started).
pub fn check_stdio_command<'a>(
    allowed: &[String],
    command: &str,
    env: impl IntoIterator<Item = &'a str>,
) -> Result<(), crate::Error> {
    match stdio_refusal(allowed, command, env) {
        Some(refusal) => Err(crate::Error::Invalid(refusal)),
        None => Ok(()),
    }
}

/// [`check_stdio_command`] for a server's settings; a server that is not stdio passes.
pub fn check_server_command(allowed: &[String], config: &ServerConfig) -> Result<(), crate::Error> {
    match (config.transport, &config.command) {
        (Transport::Stdio, Some(command)) => {
            check_stdio_command(allowed, command, config.env.keys().map(String::as_str))
        }
        _ => Ok(()),
    }
}

/// Variables that make a program load or run other code than its own (an interpreter's
/// options and module paths, a shell's start-up file, a home with its configuration files).
const CODE_ENV: [&str; 15] = [
    "HOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "BASH_ENV",
    "ENV",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
];

/// Families of such variables: the dynamic loader's, and the package managers' (their
/// registry or index is where the code comes from).
const CODE_ENV_PREFIXES: [&str; 5] = ["LD_", "DYLD_", "NPM_CONFIG_", "UV_", "PIP_"];

/// Why [`check_stdio_command`] refuses, if it does.
pub(super) fn stdio_refusal<'a>(
    allowed: &[String],
    command: &str,
    env: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    if allowed.is_empty() {
        return None;
    }
    if !allowed.iter().any(|program| program == command) {
        return Some(format!(
            "command `{command}` is not among TOOLGATE_STDIO_COMMANDS ({}): this Toolgate starts only those \
             programs for stdio servers",
            allowed.join(", ")
        ));
    }
    if command.contains('/') && !command.starts_with('/') {
        return Some(format!(
            "command `{command}` is a relative path, a program of the server's working directory: \
             TOOLGATE_STDIO_COMMANDS names programs by bare name or absolute path"
        ));
    }
    let bare = !command.starts_with('/');
    env.into_iter()
        .find(|name| {
            let name = name.to_ascii_uppercase();
            (bare && name == "PATH")
                || CODE_ENV.contains(&name.as_str())
                || CODE_ENV_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        })
        .map(|name| {
            format!(
                "a stdio server may not set `{name}` while TOOLGATE_STDIO_COMMANDS is set: it would start other \
                 code than the program `{command}`"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_programs_are_allowed_by_their_exact_text_and_any_without_a_list() {
        let allowed = ["npx".to_string(), "/opt/mcp/bin/files".to_string()];
        let refused = |command: &str, env: &[&str]| stdio_refusal(&allowed, command, env.iter().copied());
        assert_eq!(stdio_refusal(&[], "bash", ["PATH", "LD_PRELOAD"]), None);
        assert_eq!(refused("npx", &["API_TOKEN"]), None);
        assert_eq!(refused("/opt/mcp/bin/files", &["PATH"]), None);
        assert_eq!(
            refused("bash", &[]).as_deref(),
            Some(
                "command `bash` is not among TOOLGATE_STDIO_COMMANDS (npx, /opt/mcp/bin/files): this Toolgate \
                 starts only those programs for stdio servers"
            )
        );
        // No path resolution, no globbing, no case folding.
        for other in ["/usr/bin/npx", "./npx", "NPX", "npx ", "files", "/opt/mcp/bin/*", ""] {
            assert!(refused(other, &[]).is_some(), "{other:?}");
        }
        // What would run other code than the program named.
        assert!(refused("npx", &["PATH"]).is_some_and(|why| why.contains("may not set `PATH`")));
        for name in ["NODE_OPTIONS", "PythonPath", "npm_config_registry", "UV_INDEX_URL", "HOME"] {
            assert!(refused("npx", &[name]).is_some(), "{name}");
        }
        let relative = ["bin/server".to_string()];
        assert!(stdio_refusal(&relative, "bin/server", []).is_some_and(|why| why.contains("relative path")));
        assert!(refused("/opt/mcp/bin/files", &["LD_PRELOAD"]).is_some());
        assert!(refused("npx", &["DYLD_INSERT_LIBRARIES"]).is_some());
        let refusal = check_stdio_command(&allowed, "sh", ["API_TOKEN"]).unwrap_err();
        assert!(matches!(refusal, crate::Error::Invalid(_)), "{refusal:?}");
    }
}
