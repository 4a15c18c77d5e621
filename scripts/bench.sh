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

# agentgateway, the peer measured side by side, when its source tree is present: prepared as
# bench/README.md says (its release tags need patching to build from crates.io), built here
# with its own toolchain and target directory (cached), never Toolgate's.
agentgateway_src="${AGENTGATEWAY_SRC:-$HOME/.cache/toolgate/agentgateway/src}"
if [[ -f $agentgateway_src/Cargo.toml ]]; then
    toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$agentgateway_src/rust-toolchain.toml")
    rustup toolchain list | grep -q "^$toolchain" || rustup toolchain install "$toolchain" --profile minimal
    agentgateway_target="${AGENTGATEWAY_TARGET:-$HOME/.cache/toolgate/agentgateway/target}"
    (cd "$agentgateway_src" && CARGO_TARGET_DIR="$agentgateway_target" \
        cargo "+$toolchain" build --profile quick-release --bin agentgateway)
    export AGENTGATEWAY_BIN="$agentgateway_target/quick-release/agentgateway"
else
    echo "bench: no agentgateway source at $agentgateway_src: the side-by-side run leaves it out (bench/README.md says how to prepare it)" >&2
fi
TOOLGATE_BIN="$CARGO_TARGET_DIR/release/toolgate" TOOLGATE_SITE_ROOT="$SITE_DIR" \
    TOOLGATE_PYTHON="$TOOLGATE_VENV/bin/python" TOOLGATE_PYTHON_MCP1="$TOOLGATE_VENV-mcp1/bin/python" \
    "$CARGO_TARGET_DIR/release/loadgen"
# Then the soak: two replicas for SOAK_MINUTES (30 by default) at a steady rate.
TOOLGATE_BIN="$CARGO_TARGET_DIR/release/toolgate" TOOLGATE_SITE_ROOT="$SITE_DIR" "$CARGO_TARGET_DIR/release/soak"
