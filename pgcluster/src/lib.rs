//! A private PostgreSQL cluster: Toolgate's embedded default, and the test suite's server.
//!
//! The cluster comes from the system's `initdb` and `pg_ctl` and listens only on a Unix socket
//! inside its own folder (no TCP port). It is created on first use and reused afterwards;
//! whoever started it stops it. PostgreSQL refuses to run as root, so when the caller is root
//! the cluster runs as the unprivileged `postgres` system user, which owns its folder.
//!
//! Deliberately free of sqlx and tokio: the scripts use its binary to get a server before
//! anything that needs one (the query macros) is compiled. Calls block; async callers wrap
//! them in `spawn_blocking`.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nix::unistd::{Uid, User, chown};

/// Superuser of the private cluster (created by `initdb`).
pub const SUPERUSER: &str = "toolgate";
/// The system user that runs the cluster when Toolgate itself runs as root.
const SERVICE_USER: &str = "postgres";
/// A Unix socket path must fit in `sun_path` (108 bytes with the terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `initdb`/`pg_ctl` are not installed: the message names the package to install.
    #[error(
        "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under \
         /usr/lib/postgresql; install the `postgresql` package or set DATABASE_URL"
    )]
    BinariesNotFound,
    /// Running as root, but there is no `postgres` user to hand the cluster to.
    #[error(
        "running as root needs the `postgres` system user to own the private cluster; \
         install the `postgresql` package or set DATABASE_URL"
    )]
    NoServiceUser,
    /// The data folder's socket path is too long for a Unix socket.
    #[error(
        "the data folder {0} is too deep for a PostgreSQL Unix socket; set TOOLGATE_DATA_DIR to a shorter path"
    )]
    PathTooLong(PathBuf),
    /// A PostgreSQL tool failed; its own output is included.
    #[error("`{command}` failed: {output}")]
    Command { command: String, output: String },
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("{0}")]
    Nix(#[from] nix::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// A running private cluster.
#[derive(Debug)]
pub struct Cluster {
    /// `PGDATA`; also the directory holding the Unix socket.
    pgdata: PathBuf,
    bin_dir: PathBuf,
    /// Set when Toolgate runs as root: the cluster runs as this user.
    run_as: Option<User>,
    /// Whether this process started the server (and so stops it).
    started_here: bool,
}

impl Cluster {
    /// Creates the cluster under `data_dir/postgres` if it does not exist yet, and starts it
    /// unless it is already running (another process on the same folder).
    #[tracing::instrument(skip_all, err, fields(data_dir = %data_dir.display()))]
    pub fn start(data_dir: &Path) -> Result<Self> {
        let mut cluster = Self::open(data_dir)?;
        if !cluster.pgdata.join("PG_VERSION").exists() {
            cluster.init()?;
        }
        if !cluster.is_running() {
            cluster.pg_ctl_start()?;
            cluster.started_here = true;
        }
        Ok(cluster)
    }

    /// Stops the cluster in `data_dir` if it is running, whoever started it.
    pub fn stop_at(data_dir: &Path) -> Result<()> {
        let cluster = Self::open(data_dir)?;
        if cluster.is_running() { cluster.pg_ctl_stop() } else { Ok(()) }
    }

    fn open(data_dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(data_dir)
            .map_err(io(format!("creating data folder {}", data_dir.display())))?;
        let data_dir = data_dir.canonicalize().map_err(io(format!("resolving {}", data_dir.display())))?;
        let pgdata = data_dir.join("postgres");
        if pgdata.join(".s.PGSQL.5432").as_os_str().len() > MAX_SOCKET_PATH {
            return Err(Error::PathTooLong(data_dir));
        }
        let run_as = if Uid::effective().is_root() {
            let user = User::from_name(SERVICE_USER)?.ok_or(Error::NoServiceUser)?;
            // The service user must be able to pass through our folder to reach its own.
            let mode = std::fs::metadata(&data_dir)
                .map_err(io(format!("reading {}", data_dir.display())))?
                .permissions()
                .mode();
            if mode & 0o001 == 0 {
                std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(mode | 0o711))
                    .map_err(io(format!("opening {} to {SERVICE_USER}", data_dir.display())))?;
            }
            Some(user)
        } else {
            None
        };
        Ok(Cluster { bin_dir: find_bin_dir()?, pgdata, run_as, started_here: false })
    }

    fn init(&self) -> Result<()> {
        std::fs::create_dir_all(&self.pgdata).map_err(io(format!("creating {}", self.pgdata.display())))?;
        std::fs::set_permissions(&self.pgdata, std::fs::Permissions::from_mode(0o700))
            .map_err(io(format!("securing {}", self.pgdata.display())))?;
        if let Some(user) = &self.run_as {
            chown(&self.pgdata, Some(user.uid), Some(user.gid))?;
        }
        tracing::info!(pgdata = %self.pgdata.display(), "creating the private PostgreSQL cluster");
        // Trust on the socket is safe: the socket lives in PGDATA, which only the cluster's
        // owner (and root) can enter.
        self.run(
            "initdb",
            [
                OsStr::new("--pgdata"),
                self.pgdata.as_os_str(),
                OsStr::new("--username"),
                OsStr::new(SUPERUSER),
                OsStr::new("--auth"),
                OsStr::new("trust"),
                OsStr::new("--encoding"),
                OsStr::new("UTF8"),
                OsStr::new("--no-locale"),
                OsStr::new("--no-sync"),
            ],
        )?;
        Ok(())
    }

    fn pg_ctl_start(&self) -> Result<()> {
        let socket_dir = self.pgdata.to_string_lossy().replace('\'', "''");
        let options = format!(
            "-c listen_addresses='' -c unix_socket_directories='{socket_dir}' -c max_connections=200"
        );
        let log = self.pgdata.join("server.log");
        self.run(
            "pg_ctl",
            [
                OsStr::new("start"),
                OsStr::new("--wait"),
                OsStr::new("--pgdata"),
                self.pgdata.as_os_str(),
                OsStr::new("--log"),
                log.as_os_str(),
                OsStr::new("-o"),
                OsStr::new(&options),
            ],
        )?;
        tracing::info!(pgdata = %self.pgdata.display(), "private PostgreSQL cluster started");
        Ok(())
    }

    fn is_running(&self) -> bool {
        self.command("pg_ctl", [OsStr::new("status"), OsStr::new("--pgdata"), self.pgdata.as_os_str()])
            .output()
            .is_ok_and(|out| out.status.success())
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.pgdata
    }

    /// A `DATABASE_URL` for the given database, for tools that take a URL.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}@localhost/{database}?host={}", self.pgdata.display())
    }

    /// Stops the server if this process started it; a cluster found running is left running.
    pub fn stop(self) -> Result<()> {
        if self.started_here { self.pg_ctl_stop() } else { Ok(()) }
    }

    fn pg_ctl_stop(&self) -> Result<()> {
        self.run(
            "pg_ctl",
            [
                OsStr::new("stop"),
                OsStr::new("--wait"),
                OsStr::new("--mode"),
                OsStr::new("fast"),
                OsStr::new("--pgdata"),
                self.pgdata.as_os_str(),
            ],
        )?;
        tracing::info!(pgdata = %self.pgdata.display(), "private PostgreSQL cluster stopped");
        Ok(())
    }

    fn command<'a>(&self, program: &str, args: impl IntoIterator<Item = &'a OsStr>) -> Command {
        let mut command = Command::new(self.bin_dir.join(program));
        command.args(args).current_dir(&self.pgdata).env("LC_ALL", "C");
        if let Some(user) = &self.run_as {
            command
                .uid(user.uid.as_raw())
                .gid(user.gid.as_raw())
                .env("HOME", &user.dir)
                .env("USER", &user.name);
        }
        command
    }

    fn run<'a>(&self, program: &str, args: impl IntoIterator<Item = &'a OsStr>) -> Result<Output> {
        let mut command = self.command(program, args);
        let output =
            command.output().map_err(io(format!("running {}", self.bin_dir.join(program).display())))?;
        if output.status.success() {
            Ok(output)
        } else {
            Err(Error::Command {
                command: program.to_string(),
                output: String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).trim().to_string(),
            })
        }
    }
}

/// Where `initdb` and `pg_ctl` live: on PATH, else the newest `/usr/lib/postgresql/*/bin`
/// (Debian keeps them off PATH).
fn find_bin_dir() -> Result<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>());
    let debian = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major: u32 = entry.file_name().to_str()?.parse().ok()?;
            Some((major, entry.path().join("bin")))
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .rev();
    on_path
        .chain(debian)
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .ok_or(Error::BinariesNotFound)
}
