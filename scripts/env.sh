# Shared settings for the scripts; sourced, not run.
# Cargo's outputs live outside the clone so that fresh clones reuse them.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/toolgate/target}"
# Incremental state only helps an edit-compile loop, and grows by gigabytes per clone.
export CARGO_INCREMENTAL=0
# Builds read query metadata from .sqlx/ and never need a database.
export SQLX_OFFLINE=true
export PATH="$HOME/.cargo/bin:$PATH"
SITE_DIR="$CARGO_TARGET_DIR/site"
# The tests' Python tools (schemathesis, the mcp SDK).
export TOOLGATE_VENV="${TOOLGATE_VENV:-$HOME/.cache/toolgate/venv}"
