//! The database Toolgate keeps its configuration in: an external server named by
//! `DATABASE_URL`, or the embedded private cluster (see [`pgcluster`]).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::Executor;
pub use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use pgcluster::Cluster;

/// Toolgate's own database inside the embedded cluster.
const EMBEDDED_DATABASE: &str = "toolgate";

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `DATABASE_URL` does not parse; the parser's reason is included (not the URL: it may
    /// carry a password).
    #[error("DATABASE_URL is not a valid PostgreSQL URL: {0}")]
    InvalidUrl(sqlx::Error),
    /// The embedded cluster could not be created or started.
    #[error("the private PostgreSQL cluster could not start: {0}")]
    Embedded(#[from] pgcluster::Error),
    /// The server did not accept a connection.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(sqlx::Error),
    /// A migration failed; the database is left at the last applied version.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// An open, migrated database and, for the embedded default, the cluster behind it.
pub struct Database {
    pool: PgPool,
    cluster: Option<Cluster>,
}

impl Database {
    /// Connects to `url`, or starts the embedded cluster in `data_dir` when there is none,
    /// then applies pending migrations.
    #[tracing::instrument(skip_all, err)]
    pub async fn open(url: Option<&str>, data_dir: &Path) -> Result<Self, Error> {
        let (options, cluster) = match url {
            Some(url) => (PgConnectOptions::from_str(url).map_err(Error::InvalidUrl)?, None),
            None => {
                let data_dir = data_dir.to_path_buf();
                let cluster = tokio::task::spawn_blocking(move || Cluster::start(&data_dir))
                    .await
                    .expect("cluster start panicked")?;
                create_database_if_missing(&cluster).await?;
                (embedded_options(&cluster, EMBEDDED_DATABASE), Some(cluster))
            }
        };
        let pool = connect(options).await?;
        MIGRATOR.run(&pool).await?;
        Ok(Database { pool, cluster })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool and stops the embedded cluster if this process started it.
    pub async fn close(self) -> Result<(), Error> {
        // A connection a request still holds (past the server's grace period) does not hold the
        // exit up: the cluster's fast shutdown ends its session.
        if tokio::time::timeout(Duration::from_secs(5), self.pool.close()).await.is_err() {
            tracing::warn!("database connections still in use at shutdown: closing them");
        }
        if let Some(cluster) = self.cluster {
            tokio::task::spawn_blocking(move || cluster.stop()).await.expect("cluster stop panicked")?;
        }
        Ok(())
    }
}

async fn connect(options: PgConnectOptions) -> Result<PgPool, Error> {
    PgPoolOptions::new()
        .max_connections(32)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(options)
        .await
        .map_err(Error::Connect)
}

fn embedded_options(cluster: &Cluster, database: &str) -> PgConnectOptions {
    PgConnectOptions::new().socket(cluster.socket_dir()).username(pgcluster::SUPERUSER).database(database)
}

async fn create_database_if_missing(cluster: &Cluster) -> Result<(), Error> {
    let pool = connect(embedded_options(cluster, "postgres")).await?;
    let exists: bool = sqlx::query_scalar("select exists (select from pg_database where datname = $1)")
        .bind(EMBEDDED_DATABASE)
        .fetch_one(&pool)
        .await
        .map_err(Error::Connect)?;
    if !exists {
        pool.execute(format!("create database {EMBEDDED_DATABASE}").as_str())
            .await
            .map_err(Error::Connect)?;
    }
    pool.close().await;
    Ok(())
}

/// Whether the database answers: the health check.
pub async fn ping(pool: &PgPool) -> Result<(), sqlx::Error> {
    pool.execute("select 1").await.map(drop)
}
