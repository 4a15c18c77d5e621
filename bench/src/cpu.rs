//! Where a benchmark's CPU goes: the whole machine's time (`/proc/stat`) and each watched
//! process's (`/proc/<pid>/stat`), so a row can say what one call costs the machine and who
//! spent it — the gateway, the upstream, the load driver, PostgreSQL.

use anyhow::{Context, Result};

/// CPU time of a process, or of a process and its children, in seconds.
#[derive(Debug, Clone, Copy)]
pub enum Pids {
    /// One process: its user and system time.
    One(u32),
    /// A server that forks a process per connection (PostgreSQL's postmaster): its time, its
    /// live children's, and what its children that exited left it (`cutime`, `cstime`).
    Tree(u32),
}

/// A process's `/proc/<pid>/stat` fields after the command name, as numbers (0 when unreadable).
fn stat_fields(pid: u32) -> Vec<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name may hold spaces; the fields that follow start after the last ')'.
    stat.rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().map(|v| v.parse().unwrap_or(0.0)).collect())
        .unwrap_or_default()
}

/// USER_HZ is 100 on Linux.
const TICKS: f64 = 100.0;

/// User + system time of `pid`, with its reaped children's when `children`, in seconds.
fn process_seconds(pid: u32, children: bool) -> f64 {
    let fields = stat_fields(pid);
    let at = |i: usize| fields.get(i).copied().unwrap_or(0.0);
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    let own = at(11) + at(12);
    (if children { own + at(13) + at(14) } else { own }) / TICKS
}

/// The processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat_fields(*pid).get(1).copied() == Some(f64::from(parent)))
        .collect()
}

impl Pids {
    /// The process itself (the parent, for a tree).
    pub fn root(self) -> u32 {
        match self {
            Pids::One(pid) | Pids::Tree(pid) => pid,
        }
    }

    pub fn seconds(self) -> f64 {
        match self {
            Pids::One(pid) => process_seconds(pid, false),
            Pids::Tree(pid) => {
                process_seconds(pid, true)
                    + children_of(pid).into_iter().map(|c| process_seconds(c, false)).sum::<f64>()
            }
        }
    }
}

/// CPU time of the whole machine (every state but idle and I/O wait), in seconds.
pub fn machine_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<f64> = stat
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("cpu "))
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap_or(0.0)).collect())
        .unwrap_or_default();
    // user nice system idle iowait irq softirq (steal is another machine's)
    let busy: f64 = [0, 1, 2, 5, 6].iter().filter_map(|i| cpu.get(*i)).sum();
    busy / TICKS
}

/// The postmaster of the PostgreSQL cluster at `database_url`: the parent of the backend
/// serving a connection.
pub async fn postmaster(database_url: &str) -> Result<u32> {
    use sqlx::Connection;
    let mut db = sqlx::PgConnection::connect(database_url).await?;
    let backend: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&mut db).await?;
    // Fields after the name: state(0) ppid(1).
    let parent = stat_fields(backend.unsigned_abs()).get(1).copied();
    db.close().await?;
    parent.filter(|p| *p > 1.0).map(|p| p as u32).context("the database is not on this machine")
}

/// The processes a row watches, named.
#[derive(Debug, Clone, Default)]
pub struct Watch(pub Vec<(&'static str, Pids)>);

/// CPU seconds each watched process and the machine had used at one moment.
#[derive(Debug, Clone)]
pub struct Reading {
    processes: Vec<f64>,
    machine: f64,
}

/// What a stretch of work cost per call: each watched process's share, and the machine's.
#[derive(Debug, Clone, Default)]
pub struct PerCall {
    pub processes: Vec<(&'static str, f64)>,
    pub machine: f64,
}

impl Watch {
    pub fn read(&self) -> Reading {
        Reading { processes: self.0.iter().map(|(_, p)| p.seconds()).collect(), machine: machine_seconds() }
    }

    /// The CPU spent between `before` and now, per call of `calls`, in seconds.
    pub fn per_call(&self, before: &Reading, calls: f64) -> PerCall {
        let now = self.read();
        let processes = self
            .0
            .iter()
            .zip(now.processes.iter().zip(&before.processes))
            .map(|((name, _), (after, before))| (*name, (after - before) / calls))
            .collect();
        PerCall { processes, machine: (now.machine - before.machine) / calls }
    }
}

impl PerCall {
    /// The share of the process named `name`, in seconds per call.
    pub fn of(&self, name: &str) -> Option<f64> {
        self.processes.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
    }
}
