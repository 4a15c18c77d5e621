#!/usr/bin/env bash
# Regenerates .sqlx/ from a private cluster migrated to the current schema.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
command -v sqlx >/dev/null || cargo install sqlx-cli --version 0.8.6 --locked \
    --no-default-features --features postgres,rustls
cargo build --locked -p pgcluster
pgcluster="$CARGO_TARGET_DIR/debug/pgcluster"
pg_dir=$(mktemp -d /tmp/toolgate-sqlx.XXXXXX)
trap '"$pgcluster" stop "$pg_dir" >/dev/null 2>&1; rm -rf "$pg_dir"' EXIT
DATABASE_URL=$("$pgcluster" start "$pg_dir")
export DATABASE_URL
sqlx migrate run --source migrations
SQLX_OFFLINE=false cargo sqlx prepare --workspace
