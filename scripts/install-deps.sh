#!/usr/bin/env bash
# Installs what building (and, with --test, testing; with --bench, benchmarking) Toolgate
# needs; skips what is present. Idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

with_test=false
with_python=false
case "${1:-}" in
    --test) with_test=true; with_python=true ;;
    --bench) with_python=true ;;
esac

as_root() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi; }

apt_missing=()
have_initdb() { command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }
have_initdb || apt_missing+=(postgresql)
command -v npm >/dev/null || apt_missing+=(nodejs npm)
command -v cc >/dev/null || apt_missing+=(gcc libc6-dev)
command -v gzip >/dev/null || apt_missing+=(gzip)
$with_test && { command -v chromium >/dev/null || apt_missing+=(chromium); }
$with_python && { python3 -c 'import ensurepip, venv' 2>/dev/null || apt_missing+=(python3 python3-venv); }

# The wasm32 target: from rustup when it can be fetched, else Debian's rustc-web with its std
# source, built with -Zbuild-std (see scripts/build-site.sh).
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    if ! timeout 180 rustup target add wasm32-unknown-unknown; then
        echo "rustup could not fetch wasm32-unknown-unknown; using Debian's rustc-web instead" >&2
        [[ -x /usr/bin/rustc && -d /usr/lib/rustlib/src/rust/library ]] \
            || apt_missing+=(rustc-web rust-web-src)
        command -v wasm-ld-19 >/dev/null || apt_missing+=(lld-19)
    fi
fi

if ((${#apt_missing[@]})); then
    echo "installing system packages: ${apt_missing[*]}" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_missing[@]}"
fi

# wasm-bindgen must match the wasm-bindgen crate in Cargo.lock exactly. Its own lockfile pins
# a crate the registry no longer has, so it is installed without --locked.
wbg_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
if [[ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $wbg_version" ]]; then
    cargo install --force wasm-bindgen-cli --version "$wbg_version"
fi

# npm packages, reinstalled when their lockfile changed: wasm-opt from binaryen (Debian's is
# too old for current rustc output); for tests, playwright-core and the MCP reference server.
npm_install() {
    [[ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]] || return 0
    npm ci --prefix "$1" --no-audit --no-fund --loglevel=error
}
npm_install tools
$with_test && npm_install end2end
# The public MCP servers of the schema corpus (tests/corpus/servers.json).
$with_test && npm_install tests/corpus
# The official MCP conformance suite and the Node 22 it needs.
$with_test && npm_install tests/conformance

# Python tools for the tests and benchmarks, in a virtualenv outside the clone: schemathesis
# (fuzzes the REST API from its OpenAPI document), the `mcp` SDK (an independent MCP client,
# and the benchmark's Python upstream), FastMCP 4 (an upstream as people write them),
# openai-agents (a row of the compatibility matrix), the LLM providers' SDKs (their types judge
# the rendered schemas) and the Python servers of the schema corpus. Reinstalled when the
# requirements change. The `mcp` 1.x line (a client of the matrix, and the upstream of the
# conformance suite's tools) needs a virtualenv of its own (`<TOOLGATE_VENV>-mcp1`, from
# requirements-mcp1.txt).
python_venv() {
    local venv=$1 requirements=$2
    if [[ $requirements -nt "$venv/.installed" ]]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
        touch "$venv/.installed"
    fi
}
if $with_python; then
    python_venv "$TOOLGATE_VENV" tools/python/requirements.txt
    python_venv "$TOOLGATE_VENV-mcp1" tools/python/requirements-mcp1.txt
fi

# cargo-fuzz, for the bounded fuzzing runs of the test suite (stable toolchain, no sanitizer).
cargo_fuzz_version=0.13.2
if $with_test && [[ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $cargo_fuzz_version" ]]; then
    cargo install --locked cargo-fuzz --version "$cargo_fuzz_version"
fi
