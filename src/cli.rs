//! The `toolgate` command line.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use engine::admin::{self, Password, Role, Username};
use engine::model::Actor;
use engine::model::TenantSlug;
use engine::service::Database;
use engine::service::global::NewToken;
use engine::service::operator;

use crate::settings::{DatabaseSettings, ServeSettings};
use crate::startup::{self, Surfaces};

#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about = "A tool gateway for LLM applications, with an admin panel")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the admin panel and the gateway.
    Serve(ServeSettings),
    /// Run only the gateway (MCP endpoint, REST API, health, metrics): a replica reading the
    /// configuration from a shared database.
    Gateway(ServeSettings),
    /// Manage administrator accounts.
    Admin {
        #[command(subcommand)]
        action: AdminCommand,
        #[command(flatten)]
        database: DatabaseSettings,
    },
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Create an administrator with a generated one-time password, printed (its first sign-in
    /// asks for a new one), unless --password-stdin.
    Create {
        username: String,
        #[arg(long, value_enum, default_value_t = RoleArg::Owner)]
        role: RoleArg,
        /// Read the password from standard input instead of generating one.
        #[arg(long)]
        password_stdin: bool,
        /// A tenant a tenant administrator manages (repeatable).
        #[arg(long = "tenant")]
        tenants: Vec<String>,
    },
    /// Give an administrator a new password: a generated one-time password, printed (the next
    /// sign-in asks for a new one), unless --password-stdin.
    ResetPassword {
        username: String,
        #[arg(long)]
        password_stdin: bool,
    },
    /// List every account: name, role, tenants, how it signs in, enabled or disabled, last
    /// sign-in (tab-separated).
    List,
    /// Delete an account with the apps it authorized (never the last enabled owner).
    Delete { username: String },
    /// Admin API tokens for scripts.
    Token {
        #[command(subcommand)]
        action: TokenCommand,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Create a token (owner rights unless limited); prints it as the last line of standard
    /// output. An owner token can register stdio MCP servers, which start programs on this
    /// machine: only those `TOOLGATE_STDIO_COMMANDS` lists, when it is set.
    Create {
        #[arg(long, default_value = "cli")]
        name: String,
        /// Days until the token expires (default: never).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=3650))]
        expires_in_days: Option<u16>,
        /// The token may only read.
        #[arg(long)]
        read_only: bool,
        /// The token may manage only this tenant.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// List tokens: id, name, limits, created, last used, expiry, revocation.
    List,
    /// Revoke a token by its id (from `list`).
    Revoke { id: uuid::Uuid },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoleArg {
    Owner,
    TenantAdmin,
    /// Authorizes MCP clients for its tenants (`--tenant`); sees only its connected apps.
    Member,
}

pub fn main() -> ExitCode {
    let traces = init_tracing();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new().expect("cannot start the tokio runtime");
    let outcome = runtime.block_on(run(cli.command));
    if let Some(traces) = traces
        && let Err(err) = traces.shutdown()
    {
        eprintln!("warning: the last traces were not exported: {err}");
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr, and exports traces over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; the returned provider flushes them at exit.
fn init_tracing() -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
    use tracing::Level;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_sessions=warn,rmcp=warn"));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let provider = crate::telemetry::provider();
    // Toolgate's own spans, whatever RUST_LOG lets through to the log.
    let traces = provider.as_ref().map(|provider| {
        use opentelemetry::trace::TracerProvider;
        let own = Targets::new().with_target("toolgate", Level::INFO).with_target("engine", Level::INFO);
        tracing_opentelemetry::layer().with_tracer(provider.tracer("toolgate")).with_filter(own)
    });
    tracing_subscriber::registry().with(log).with(traces).init();
    provider
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(settings) => startup::serve(settings, Surfaces::All).await,
        Command::Gateway(settings) => startup::serve(settings, Surfaces::Gateway).await,
        Command::Admin { action, database } => {
            let db = Database::open(database.database_url.as_deref(), &database.data_dir).await?;
            let result = run_admin(action, &db).await;
            db.close().await?;
            result
        }
    }
}

async fn run_admin(action: AdminCommand, db: &Database) -> anyhow::Result<()> {
    match action {
        AdminCommand::Create { username, role, password_stdin, tenants } => {
            let username = Username::parse(&username)?;
            let password = password(password_stdin)?;
            let role = match role {
                RoleArg::Owner => Role::Owner,
                RoleArg::TenantAdmin => Role::TenantAdmin,
                RoleArg::Member => Role::Member,
            };
            admin::create_account(db.pool(), &Actor::cli(), &username, role, &tenants, &password).await?;
            eprintln!("created {role} `{}`", username.as_str());
            print_one_time(&password);
        }
        AdminCommand::List => {
            for account in admin::accounts(db.pool()).await? {
                let tenants = if account.tenants.is_empty() { "-".into() } else { account.tenants.join(",") };
                println!(
                    "{}\t{}\t{tenants}\t{}\t{}\t{}",
                    account.username,
                    account.role,
                    account.signs_in(),
                    if account.disabled_at.is_some() { "disabled" } else { "enabled" },
                    account.signed_in_at.map(rfc3339).unwrap_or_else(|| "never".into()),
                );
            }
        }
        AdminCommand::Delete { username } => {
            let username = Username::parse(&username)?;
            admin::delete(db.pool(), &Actor::cli(), &username).await?;
            eprintln!("deleted `{}`", username.as_str());
        }
        AdminCommand::ResetPassword { username, password_stdin } => {
            let username = Username::parse(&username)?;
            let password = password(password_stdin)?;
            admin::set_password(db.pool(), &username, &password).await?;
            eprintln!("new password set for `{}`", username.as_str());
            print_one_time(&password);
        }
        AdminCommand::Token { action: TokenCommand::Create { name, expires_in_days, read_only, tenant } } => {
            let new = NewToken {
                name: name.clone(),
                expires_at: expires_in_days
                    .map(|days| time::OffsetDateTime::now_utc() + time::Duration::days(days.into())),
                read_only,
                tenant: tenant.as_deref().map(TenantSlug::parse).transpose()?,
            };
            let owner_rights = !new.read_only && new.tenant.is_none();
            let (_, token) = operator::create_token(db.pool(), &new).await?;
            eprintln!("created admin token `{name}`");
            if owner_rights {
                eprintln!(
                    "it has owner rights: it can register stdio servers, which start programs on this machine \
                     (restricted only by TOOLGATE_STDIO_COMMANDS); --read-only or --tenant limit it"
                );
            }
            println!("{token}");
        }
        AdminCommand::Token { action: TokenCommand::List } => {
            let when = |at: Option<time::OffsetDateTime>| at.map_or_else(|| "-".to_string(), rfc3339);
            println!("id\tname\tlimits\tcreated\tlast used\texpires\trevoked\tprefix");
            for token in operator::tokens(db.pool()).await? {
                let limits = token.limits();
                let fields = [
                    token.id.to_string(),
                    token.name,
                    limits,
                    rfc3339(token.created_at),
                    when(token.last_used_at),
                    when(token.expires_at),
                    when(token.revoked_at),
                    token.prefix.unwrap_or_else(|| "-".into()),
                ];
                println!("{}", fields.join("\t"));
            }
        }
        AdminCommand::Token { action: TokenCommand::Revoke { id } } => {
            let revoked = operator::revoke_token(db.pool(), id).await?;
            eprintln!("revoked admin token `{}`", revoked.name);
        }
    }
    Ok(())
}

fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// A generated password goes to standard output (only there, once): signing in with it leads
/// straight to choosing a new one.
fn print_one_time(password: &Password) {
    if password.one_time() {
        eprintln!("the password below is for one sign-in, which asks for a new password at once");
        println!("{}", password.expose());
    }
}

fn password(from_stdin: bool) -> anyhow::Result<Password> {
    if !from_stdin {
        return Ok(Password::generate());
    }
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).context("reading the password from standard input")?;
    Ok(Password::parse(input.trim_end_matches(['\r', '\n']).to_string())?)
}
