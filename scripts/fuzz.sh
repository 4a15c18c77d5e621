#!/usr/bin/env bash
# Runs each fuzz target (fuzz/fuzz_targets) for a bounded time, default 30 s, starting from its
# seeds in fuzz/seeds; a crash or a failed invariant fails the run and leaves the input in
# fuzz/artifacts. Uses the stable toolchain: coverage instrumentation, no sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

seconds=${1:-30}
corpus=$(mktemp -d /tmp/toolgate-fuzz.XXXXXX)
trap 'rm -rf "$corpus"' EXIT
for target in schema arguments; do
    mkdir -p "$corpus/$target"
    log="$corpus/$target.log"
    if ! cargo fuzz run --sanitizer none "$target" "$corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
        >"$log" 2>&1; then
        tail -40 "$log" >&2
        echo "fuzzing $target failed; the input is in fuzz/artifacts/$target" >&2
        exit 1
    fi
    echo "fuzz $target: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') inputs in ${seconds} s, no failure"
done
