#!/usr/bin/env bash
# Runs the benchmarks (release builds) against a private PostgreSQL cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

cargo build --locked -p pgcluster
pgcluster="$CARGO_TARGET_DIR/debug/pgcluster"
pg_dir=$(mktemp -d /tmp/toolgate-bench.XXXXXX)
trap '"$pgcluster" stop "$pg_dir" >/dev/null 2>&1; rm -rf "$pg_dir"' EXIT
DATABASE_URL=$("$pgcluster" start "$pg_dir")
export DATABASE_URL
cargo bench --locked --workspace --benches
