#!/usr/bin/env bash
# The whole test suite: a private PostgreSQL cluster for the Rust tests (a fresh database per
# test via #[sqlx::test]), bounded fuzzing (scripts/fuzz.sh), then the end-to-end suite in
# headless Chromium against a real `toolgate serve` on its own embedded cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

scripts/build-site.sh debug
toolgate="$CARGO_TARGET_DIR/debug/toolgate"

cargo build --locked -p pgcluster
pgcluster="$CARGO_TARGET_DIR/debug/pgcluster"
pg_dir=$(mktemp -d /tmp/toolgate-test.XXXXXX)
cleanup() {
    "$pgcluster" stop "$pg_dir" >/dev/null 2>&1 || true
    rm -rf "$pg_dir"
}
trap cleanup EXIT
DATABASE_URL=$("$pgcluster" start "$pg_dir")
export DATABASE_URL

if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --locked --workspace --no-fail-fast
    cargo test --locked --workspace --doc
else
    cargo test --locked --workspace --no-fail-fast
fi

# Coverage-guided fuzzing of the schema lint/normaliser and the argument validator, bounded.
scripts/fuzz.sh 30

TOOLGATE_BIN="$toolgate" TOOLGATE_SITE_ROOT="$SITE_DIR" npm test --prefix end2end
