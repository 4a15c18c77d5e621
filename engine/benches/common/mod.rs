//! Helpers shared by the benchmarks.

// Each benchmark uses its own part of them.
#![allow(dead_code)]

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Executor, PgPool};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Prints p50/p99/max of `samples` under `name`.
pub fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name:<56} n={:<7} p50={:>10.3?} p99={:>10.3?} max={:>10.3?}",
        samples.len(),
        percentile(&samples, 0.50),
        percentile(&samples, 0.99),
        samples[samples.len() - 1],
    );
}

/// A fresh, migrated database on the server named by DATABASE_URL.
pub async fn fresh_database(name: &str) -> PgPool {
    let url =
        std::env::var("DATABASE_URL").expect("DATABASE_URL names the benchmark server (make bench sets it)");
    let admin = PgPoolOptions::new().max_connections(1).connect(&url).await.unwrap();
    admin.execute(format!("drop database if exists {name} with (force)").as_str()).await.unwrap();
    admin.execute(format!("create database {name}").as_str()).await.unwrap();
    let options = PgConnectOptions::from_str(&url).unwrap().database(name);
    let pool = PgPoolOptions::new().max_connections(8).connect_with(options).await.unwrap();
    engine::db::MIGRATOR.run(&pool).await.unwrap();
    pool
}

/// `cargo bench` passes `--bench`; `cargo test` also runs bench targets, without it.
pub fn benchmarking() -> bool {
    std::env::args().any(|a| a == "--bench")
}
