#!/usr/bin/env bash
# Builds the server binary and the hydrating wasm client, and assembles the site folder the
# server serves: the same artefacts `cargo leptos build` makes, without needing cargo-leptos.
# Usage: scripts/build-site.sh release|debug   (the server's profile; the client is always
# built with the small `wasm-release` profile)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

profile=${1:-release}
server_flags=()
[[ "$profile" == release ]] && server_flags+=(--release)

cargo build --locked --bin toolgate "${server_flags[@]}"

client=(cargo build --locked -p app --lib --target wasm32-unknown-unknown
        --no-default-features --features hydrate --profile wasm-release)
if rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    "${client[@]}"
else
    # Debian's rustc-web builds std for wasm32 from source (see scripts/install-deps.sh).
    RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc \
        CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld-19 \
        "${client[@]}" -Zbuild-std=std,panic_abort
fi

pkg="$SITE_DIR/pkg"
rm -rf "$SITE_DIR" && mkdir -p "$pkg"
wasm-bindgen --target web --no-typescript --out-dir "$pkg" --out-name toolgate \
    "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/app.wasm"
tools/node_modules/.bin/wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-mutable-globals \
    "$pkg/toolgate_bg.wasm" -o "$pkg/toolgate_bg.wasm"
cp style/main.css "$pkg/toolgate.css"
cp -r public/. "$SITE_DIR/"
gzip -9 --keep --force "$pkg"/*.{wasm,js,css}
echo "site: $SITE_DIR (client $(stat -c %s "$pkg/toolgate_bg.wasm") bytes, $(stat -c %s "$pkg/toolgate_bg.wasm.gz") gzipped)"
