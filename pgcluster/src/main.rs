//! `pgcluster start <folder> [database]` starts (creating if needed) a private cluster and
//! prints its `DATABASE_URL`; `pgcluster stop <folder>` stops it. Used by the test scripts.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["start", dir] => start(dir, "postgres"),
        ["start", dir, database] => start(dir, database),
        ["stop", dir] => pgcluster::Cluster::stop_at(Path::new(dir)),
        _ => {
            eprintln!("usage: pgcluster start <folder> [database] | pgcluster stop <folder>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn start(dir: &str, database: &str) -> pgcluster::Result<()> {
    let cluster = pgcluster::Cluster::start(Path::new(dir))?;
    // The server keeps running after this process exits; `pgcluster stop` ends it.
    println!("{}", cluster.url(database));
    Ok(())
}
