#!/usr/bin/env bash
# Runs the release build made by scripts/build-site.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec "$CARGO_TARGET_DIR/release/toolgate" serve
