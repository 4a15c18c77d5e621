//! Process settings, read from the environment (and flags of the same names).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use engine::builtin::BuiltinConfig;
use engine::builtin::shell::ProgramRule;
use engine::oauth::OAuthConfig;
use engine::service::calls::{ExecConfig, RecordBuffer};
use engine::service::global::Retention;
use engine::service::upstreams::UpstreamConfig;

#[derive(Debug, Clone, Args)]
pub struct DatabaseSettings {
    /// PostgreSQL server to use; without it Toolgate runs a private cluster in the data folder.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Folder for Toolgate's own files (the private cluster among them).
    #[arg(long, env = "TOOLGATE_DATA_DIR", default_value = ".toolgate")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ServeSettings {
    /// Address to listen on.
    #[arg(long, env = "TOOLGATE_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    /// Folder with the built client (`pkg/`) and static assets; defaults to `site/` next to
    /// the binary's target folder, where the build puts it.
    #[arg(long, env = "TOOLGATE_SITE_ROOT")]
    pub site_root: Option<PathBuf>,

    /// The URL users reach Toolgate at. Browser writes must come from this origin (or the
    /// request's own host); an `https` URL also marks the session cookie `Secure`.
    #[arg(long, env = "TOOLGATE_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Origins (`scheme://host:port`, comma-separated) of browser pages allowed to call the MCP
    /// endpoint besides the public URL's, such as a browser-based MCP client's.
    #[arg(long, env = "TOOLGATE_MCP_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub mcp_allowed_origins: Vec<String>,

    /// Reverse proxies in front of Toolgate, comma-separated IP addresses or networks
    /// (`10.0.0.0/8,127.0.0.1`). A request from one of them is taken to come from the address
    /// its `X-Forwarded-For` names (the rightmost one that is not itself a trusted proxy);
    /// from any other peer the header is ignored. Default: none, the peer's address counts.
    #[arg(long, env = "TOOLGATE_TRUSTED_PROXIES", default_value = "", hide_default_value = true)]
    pub trusted_proxies: TrustedProxies,

    /// Key for secrets at rest: 32 bytes, base64. Without it a key is generated into the data
    /// folder on first start; replicas sharing a database must share the key.
    #[arg(long, env = "TOOLGATE_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,

    /// When set, `/metrics` answers only requests with `Authorization: Bearer <token>`.
    #[arg(long, env = "TOOLGATE_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,

    /// `false` turns every tool off in this process, whatever the configuration says.
    #[arg(long, env = "TOOLGATE_TOOLS_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub tools_enabled: bool,

    #[command(flatten)]
    pub tools: ToolSettings,

    #[command(flatten)]
    pub limits: LimitSettings,

    #[command(flatten)]
    pub retention: RetentionSettings,

    #[command(flatten)]
    pub oauth: OAuthSettings,

    /// Seconds of inactivity after which an admin session ends (default 12 hours).
    #[arg(long, env = "TOOLGATE_SESSION_IDLE_SECONDS", default_value_t = 12 * 60 * 60)]
    pub session_idle_seconds: u64,

    #[command(flatten)]
    pub database: DatabaseSettings,
}

/// The reverse proxies whose `X-Forwarded-For` is believed (`TOOLGATE_TRUSTED_PROXIES`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<ipnet::IpNet>);

impl TrustedProxies {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of the proxies (an IPv4-mapped IPv6 address counts as its IPv4 one).
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let canonical = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip) || net.contains(&canonical))
    }
}

/// A comma-separated list of addresses (`127.0.0.1`, `::1`) and networks (`10.0.0.0/8`,
/// `fd00::/8`); blanks are ignored, so an empty list trusts no proxy.
impl FromStr for TrustedProxies {
    type Err = String;

    fn from_str(list: &str) -> Result<Self, String> {
        list.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let net = if entry.contains('/') {
                    entry.parse::<ipnet::IpNet>().ok().map(|net| net.trunc())
                } else {
                    entry.parse::<IpAddr>().ok().map(ipnet::IpNet::from)
                };
                net.ok_or_else(|| {
                    format!("`{entry}` is neither an IP address nor a network such as `10.0.0.0/8`")
                })
            })
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }
}

/// Bounds on what one key may hold or start.
#[derive(Debug, Clone, Args)]
pub struct LimitSettings {
    /// The most MCP sessions one API key may have open; a further `initialize` gets 429.
    #[arg(long, env = "TOOLGATE_MCP_SESSIONS_PER_KEY", default_value_t = 64)]
    pub mcp_sessions_per_key: usize,

    /// The most tool calls one `POST /api/v1/tool_calls` may hold; a larger batch gets 413.
    #[arg(long, env = "TOOLGATE_BATCH_CALLS", default_value_t = 128)]
    pub batch_calls: usize,

    /// The most calls of one tenant running at once; more wait up to 2 s, then get 429.
    #[arg(long, env = "TOOLGATE_CONCURRENT_CALLS_PER_TENANT", default_value_t = 128)]
    pub concurrent_calls_per_tenant: usize,

    /// The most calls of one API key running at once; more wait up to 2 s, then get 429.
    #[arg(long, env = "TOOLGATE_CONCURRENT_CALLS_PER_KEY", default_value_t = 32)]
    pub concurrent_calls_per_key: usize,

    /// The most calls of one API key waiting for its MCP client's input at once (revision
    /// 2026-07-28, multi-round-trip); beyond that, an upstream's question is refused.
    #[arg(long, env = "TOOLGATE_INPUT_WAITS_PER_KEY", default_value_t = 16)]
    pub input_waits_per_key: usize,

    /// The most calls of one tenant waiting for their results (external tools) at once;
    /// beyond that, calling such a tool is a tool error saying so.
    #[arg(long, env = "TOOLGATE_PENDING_CALLS_PER_TENANT", default_value_t = 1000)]
    pub pending_calls_per_tenant: i64,

    /// The most upstream connections private to a tenant or a person (their own credentials or
    /// OAuth token) open at once in this process; past it, the one unused longest is closed.
    #[arg(long, env = "TOOLGATE_PRIVATE_CONNECTIONS", default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub private_connections: usize,

    /// A private upstream connection unused this many seconds is closed.
    #[arg(long, env = "TOOLGATE_PRIVATE_CONNECTION_IDLE_SECONDS", default_value_t = 600)]
    pub private_idle_seconds: u64,

    /// How often, in milliseconds, this replica adds the calls it counted against the
    /// administrators' rate limits to PostgreSQL and reads the other replicas'.
    #[arg(long, env = "TOOLGATE_LIMIT_SYNC_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub limit_sync_ms: u64,

    /// The most invocation records waiting to be written while PostgreSQL is away; past it
    /// (or `TOOLGATE_RECORD_BUFFER_MB`), the oldest are dropped, counted and shown on the
    /// dashboard.
    #[arg(long, env = "TOOLGATE_RECORD_BUFFER_RECORDS", default_value_t = 100_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub record_buffer_records: usize,

    /// The most megabytes (MiB) those records may take.
    #[arg(long, env = "TOOLGATE_RECORD_BUFFER_MB", default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_536))]
    pub record_buffer_mb: usize,
}

/// Toolgate as the OAuth authorization server of its endpoints.
#[derive(Debug, Clone, Args)]
pub struct OAuthSettings {
    /// How long an access token works, in seconds.
    #[arg(long, env = "TOOLGATE_OAUTH_ACCESS_TOKEN_SECONDS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub access_token_seconds: u64,

    /// A refresh token unused this many days expires (each refresh makes a new one).
    #[arg(long, env = "TOOLGATE_OAUTH_REFRESH_TOKEN_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=365))]
    pub refresh_token_days: u64,

    /// Fetch clients' metadata documents from private and loopback addresses, and over plain
    /// HTTP on loopback: for development and tests only.
    #[arg(long, env = "TOOLGATE_OAUTH_ALLOW_PRIVATE_CLIENT_METADATA", default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_private_client_metadata: bool,

    /// Dynamic client registrations one address may make per hour.
    #[arg(long, env = "TOOLGATE_OAUTH_REGISTRATIONS_PER_HOUR", default_value_t = 20)]
    pub registrations_per_hour: u32,
}

impl OAuthSettings {
    pub fn config(&self) -> OAuthConfig {
        OAuthConfig {
            access_token_ttl: Duration::from_secs(self.access_token_seconds),
            refresh_token_ttl: Duration::from_secs(self.refresh_token_days * 24 * 3600),
            allow_private_metadata: self.allow_private_client_metadata,
            registrations_per_hour: self.registrations_per_hour,
            ..OAuthConfig::default()
        }
    }
}

/// How long records are kept, in days; 0 keeps them for ever.
#[derive(Debug, Clone, Args)]
pub struct RetentionSettings {
    /// Invocation records (the dashboard and `/api/v1` history).
    #[arg(long, env = "TOOLGATE_KEEP_INVOCATIONS_DAYS", default_value_t = 30)]
    pub keep_invocations_days: u64,

    /// Calls waiting for their results; an older one can no longer be resumed.
    #[arg(long, env = "TOOLGATE_KEEP_PENDING_CALLS_DAYS", default_value_t = 7)]
    pub keep_pending_calls_days: u64,

    /// The audit log.
    #[arg(long, env = "TOOLGATE_KEEP_AUDIT_DAYS", default_value_t = 365)]
    pub keep_audit_days: u64,
}

impl RetentionSettings {
    pub fn retention(&self) -> Retention {
        let days = |days: u64| (days > 0).then(|| Duration::from_secs(days * 24 * 3600));
        Retention {
            invocations: days(self.keep_invocations_days),
            pending_calls: days(self.keep_pending_calls_days),
            audit_events: days(self.keep_audit_days),
        }
    }
}

/// How tools run.
#[derive(Debug, Clone, Args)]
pub struct ToolSettings {
    /// Folder of the built-in `files` tools (and `run_command`'s working folders); each tenant
    /// gets `<root>/<tenant>`. Default: `<data dir>-files`, beside the data folder.
    #[arg(long, env = "TOOLGATE_FILES_ROOT")]
    pub files_root: Option<PathBuf>,

    /// The most bytes one tenant's `files` folder may hold (default 100 MiB).
    #[arg(long, env = "TOOLGATE_FILES_QUOTA_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub files_quota_bytes: u64,

    /// Programs the built-in `run_command` may start, comma-separated, each with the flags it
    /// may take: `cat,ls:-l:-a,grep:-n:-i` (default: none). Other arguments must be paths
    /// inside the tenant's folder.
    #[arg(long, env = "TOOLGATE_SHELL_ALLOW", value_delimiter = ',')]
    pub shell_allow: Vec<ProgramRule>,

    /// Programs a stdio MCP server may start, comma-separated, each exactly as a server's
    /// `command` names it: `npx,uvx,/opt/mcp/bin/files-server` (default: any). A bare name
    /// allows only that bare name (looked up on `PATH`), an absolute path only that path. A
    /// launcher such as `npx` or `uvx` runs whatever its arguments name: for a real boundary,
    /// list the servers' own programs.
    #[arg(long, env = "TOOLGATE_STDIO_COMMANDS", value_delimiter = ',')]
    pub stdio_commands: Vec<String>,

    /// The longest a `run_command` program may run, in seconds.
    #[arg(long, env = "TOOLGATE_SHELL_TIMEOUT_SECONDS", default_value_t = 30)]
    pub shell_timeout_seconds: u64,

    /// Tool results over this many bytes are truncated, with a notice.
    #[arg(long, env = "TOOLGATE_OUTPUT_CAP_BYTES", default_value_t = 1024 * 1024)]
    pub output_cap_bytes: usize,

    /// Upstream tool descriptions longer than this many bytes are cut (they are untrusted).
    #[arg(long, env = "TOOLGATE_DESCRIPTION_CAP_BYTES", default_value_t = 8 * 1024)]
    pub description_cap_bytes: usize,

    /// Run the tool calls of one LLM turn concurrently.
    #[arg(long, env = "TOOLGATE_PARALLEL_CALLS", default_value_t = true, action = clap::ArgAction::Set)]
    pub parallel_calls: bool,
}

impl ServeSettings {
    pub fn builtin_config(&self) -> BuiltinConfig {
        let tools = &self.tools;
        BuiltinConfig {
            files_root: tools.files_root.clone().unwrap_or_else(|| self.default_files_root()),
            files_quota: tools.files_quota_bytes,
            shell_allow: tools.shell_allow.clone(),
            shell_timeout: Duration::from_secs(tools.shell_timeout_seconds),
            shell_output_cap: tools.output_cap_bytes,
        }
    }

    /// The upstream connections' settings; `listening` is Toolgate's URL when no public URL is set.
    pub fn upstream_config(&self, listening: &str) -> UpstreamConfig {
        UpstreamConfig {
            description_cap: self.tools.description_cap_bytes,
            max_private_connections: self.limits.private_connections,
            private_idle: Duration::from_secs(self.limits.private_idle_seconds),
            public_url: Some(self.public_url.clone().unwrap_or_else(|| listening.to_string())),
            stdio_commands: self.stdio_commands(),
            ..UpstreamConfig::default()
        }
    }

    /// `TOOLGATE_STDIO_COMMANDS`, blanks dropped (an empty list allows any program).
    fn stdio_commands(&self) -> Vec<String> {
        let listed = self.tools.stdio_commands.iter().map(|command| command.trim());
        listed.filter(|command| !command.is_empty()).map(str::to_owned).collect()
    }

    pub fn exec_config(&self) -> ExecConfig {
        ExecConfig {
            output_cap_bytes: self.tools.output_cap_bytes,
            parallel: self.tools.parallel_calls,
            max_concurrent_per_tenant: self.limits.concurrent_calls_per_tenant,
            max_concurrent_per_key: self.limits.concurrent_calls_per_key,
            max_pending_per_tenant: self.limits.pending_calls_per_tenant,
            limit_sync: Duration::from_millis(self.limits.limit_sync_ms),
            record_buffer: RecordBuffer {
                records: self.limits.record_buffer_records,
                bytes: self.limits.record_buffer_mb * 1024 * 1024,
            },
        }
    }

    pub fn site_root(&self) -> PathBuf {
        self.site_root.clone().unwrap_or_else(|| {
            let exe = std::env::current_exe().unwrap_or_default();
            // <target>/<profile>/toolgate -> <target>/site
            exe.parent()
                .and_then(|profile| profile.parent())
                .map(|target| target.join("site"))
                .unwrap_or_else(|| PathBuf::from("site"))
        })
    }

    pub fn session_ttl(&self) -> Duration {
        Duration::from_secs(self.session_idle_seconds)
    }

    /// `<data dir>-files`: beside the data folder, not in it, so nothing in a tenant's folder is
    /// a `..` away from the secret key or the database.
    fn default_files_root(&self) -> PathBuf {
        let mut name = self.database.data_dir.clone().into_os_string();
        name.push("-files");
        PathBuf::from(name)
    }

    /// Moves tenants' files from `<data dir>/files`, the default before 2026-12, to the
    /// default root, when the root is the default and has not been made yet.
    pub fn move_files_from_the_old_default(&self) -> std::io::Result<()> {
        let (old, new) = (self.database.data_dir.join("files"), self.default_files_root());
        if self.tools.files_root.is_some() || !old.is_dir() || new.exists() {
            return Ok(());
        }
        std::fs::rename(&old, &new)?;
        tracing::info!(from = %old.display(), to = %new.display(), "moved the tenants' files out of the data folder");
        Ok(())
    }

    /// Whether `TOOLGATE_PUBLIC_URL` is https: cookies are `Secure` and answers carry HSTS.
    pub fn served_over_https(&self) -> bool {
        self.public_url.as_deref().is_some_and(|url| url.starts_with("https://"))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        serve: ServeSettings,
    }

    fn settings(args: &[&str]) -> ServeSettings {
        Command::try_parse_from(std::iter::once("toolgate").chain(args.iter().copied())).unwrap().serve
    }

    #[test]
    fn tenants_files_live_beside_the_data_folder_and_move_there_once() {
        let data = std::env::temp_dir().join(format!("toolgate-settings-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(data.join("files/acme")).unwrap();
        std::fs::write(data.join("files/acme/notes.txt"), "kept").unwrap();
        let settings = settings(&["--data-dir", data.to_str().unwrap()]);
        let root = settings.builtin_config().files_root;
        assert_eq!(root, PathBuf::from(format!("{}-files", data.display())));

        settings.move_files_from_the_old_default().unwrap();
        assert_eq!(std::fs::read_to_string(root.join("acme/notes.txt")).unwrap(), "kept");
        assert!(!data.join("files").exists());
        settings.move_files_from_the_old_default().unwrap();
        std::fs::remove_dir_all(&data).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn allowed_programs_name_their_flags() {
        let rules = settings(&["--shell-allow", "cat,ls:-l:-a"]).builtin_config().shell_allow;
        let named: Vec<_> = rules.iter().map(|rule| (rule.program.as_str(), rule.flags.len())).collect();
        assert_eq!(named, [("cat", 0), ("ls", 2)]);
        let bad = Command::try_parse_from(["toolgate", "--shell-allow", "ls:l"]).err().unwrap().to_string();
        assert!(bad.contains("`l` is not a flag"), "{bad}");
    }

    #[test]
    fn stdio_commands_are_listed_exactly_and_any_by_default() {
        let listed = settings(&["--stdio-commands", "npx, uvx,,/opt/mcp/bin/files-server"]);
        assert_eq!(
            listed.upstream_config("http://127.0.0.1:3000").stdio_commands,
            ["npx", "uvx", "/opt/mcp/bin/files-server"]
        );
        for blank in ["", " , "] {
            let config = settings(&["--stdio-commands", blank]).upstream_config("http://127.0.0.1:3000");
            assert!(config.stdio_commands.is_empty(), "{blank:?}");
        }
    }

    #[test]
    fn trusted_proxies_are_addresses_and_networks() {
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        let proxies =
            settings(&["--trusted-proxies", "10.0.0.0/8, 127.0.0.1,,2001:db8::/32,::1"]).trusted_proxies;
        for trusted in ["10.0.0.1", "10.255.255.255", "127.0.0.1", "2001:db8::1", "2001:db8:ffff::9", "::1"] {
            assert!(proxies.trusts(ip(trusted)), "{trusted}");
        }
        for untrusted in ["11.0.0.1", "127.0.0.2", "203.0.113.7", "2001:db9::1", "::2", "fe80::1"] {
            assert!(!proxies.trusts(ip(untrusted)), "{untrusted}");
        }
        // A dual-stack listener sees IPv4 peers as IPv4-mapped IPv6 addresses.
        assert!(proxies.trusts(ip("::ffff:10.1.2.3")));
        assert!(!proxies.trusts(ip("::ffff:203.0.113.7")));
        // Host bits in a network are dropped: 192.168.1.77/24 is 192.168.1.0/24.
        let lax: TrustedProxies = "192.168.1.77/24".parse().unwrap();
        assert!(lax.trusts(ip("192.168.1.1")) && !lax.trusts(ip("192.168.2.1")));
    }

    #[test]
    fn a_blank_list_trusts_no_proxy() {
        for blank in ["", " , "] {
            assert!(settings(&["--trusted-proxies", blank]).trusted_proxies.is_empty(), "{blank:?}");
        }
        if std::env::var_os("TOOLGATE_TRUSTED_PROXIES").is_none() {
            let default = settings(&[]).trusted_proxies;
            assert!(default.is_empty() && !default.trusts("127.0.0.1".parse().unwrap()));
        }
    }

    #[test]
    fn a_bad_trusted_proxy_is_refused_at_start() {
        for bad in ["proxy.example", "10.0.0.0/33", "::1/129", "10.0.0.1:80", "10.0.0.0/8/8"] {
            let refused =
                Command::try_parse_from(["toolgate", "--trusted-proxies", bad]).err().unwrap().to_string();
            assert!(refused.contains("is neither an IP address nor a network"), "{bad}: {refused}");
        }
    }
}
