#!/usr/bin/env bash
# The benchmarks (release builds) against a private PostgreSQL cluster: the engine's criterion
# benchmarks, then `loadgen`, Toolgate processes under MCP load, and `soak`, two replicas under
# a steady load for half an hour (see bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

cargo build --locked -p pgcluster
pgcluster="$CARGO_TARGET_DIR/debug/pgcluster"
pg_dir=$(mktemp -d /tmp/toolgate-bench.XXXXXX)
trap '"$pgcluster" stop "$pg_dir" >/dev/null 2>&1; rm -rf "$pg_dir"' EXIT
DATABASE_URL=$("$pgcluster" start "$pg_dir")
export DATABASE_URL
cargo bench --locked --workspace --benches --features engine/test-support

scripts/build-site.sh release
cargo build --locked --release -p toolgate-bench
TOOLGATE_BIN="$CARGO_TARGET_DIR/release/toolgate" TOOLGATE_SITE_ROOT="$SITE_DIR" \
    TOOLGATE_PYTHON="$TOOLGATE_VENV/bin/python" "$CARGO_TARGET_DIR/release/loadgen"
# Then the soak: two replicas for SOAK_MINUTES (30 by default) at a steady rate.
TOOLGATE_BIN="$CARGO_TARGET_DIR/release/toolgate" TOOLGATE_SITE_ROOT="$SITE_DIR" "$CARGO_TARGET_DIR/release/soak"
