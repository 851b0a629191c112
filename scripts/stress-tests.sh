#!/usr/bin/env bash
# Runs every test binary of the README's test command (scripts/test.sh, less
# the loom models and doc tests) over and over, several at once, to find the
# tests that fail only now and then: a race in a test's own set-up, a
# timing assumption that a loaded machine breaks. CI runs each test once, on
# 2 busy cores; one failure in ten runs there is one CI run in ten lost.
#
#   ./scripts/stress-tests.sh              # 10 rounds, 2 loops at once
#   ./scripts/stress-tests.sh 30 3         # 30 rounds, 3 loops (more load)
#
# Each loop runs every binary once per round, from its crate's directory as
# `cargo test` does; the hazptr binaries also run with its force-slow-path
# feature and with SYNCPRIMS_FENCE=seqcst. A failing run's output is kept in
# target/stress/; the summary counts failures per binary. Exits 1 if any
# run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
loops=${2:-2}
[[ "$rounds" =~ ^[1-9][0-9]*$ && "$loops" =~ ^[1-9][0-9]*$ ]] ||
    { echo "usage: $0 [ROUNDS] [LOOPS] (positive integers)" >&2; exit 2; }
out=target/stress
rm -rf "$out"
mkdir -p "$out"

# "CONFIG NAME CRATE_DIR EXECUTABLE" lines for one `cargo test` build.
binaries() {
    local config=$1
    shift
    cargo test --no-run --message-format=json "$@" 2>/dev/null | python3 -c '
import json, os, sys
config = sys.argv[1]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        crate_dir = os.path.dirname(m["manifest_path"])
        # Tab-separated: a checkout path may hold spaces.
        print("\t".join([config, m["target"]["name"], crate_dir, m["executable"]]))
' "$config"
}

echo "building the test binaries"
cargo test --workspace --no-run
cargo test -p hazptr --features force-slow-path --no-run
{
    binaries plain --workspace
    binaries force-slow-path -p hazptr --features force-slow-path
    binaries seqcst -p hazptr
} | awk -F '\t' '$2 != "loom"' > "$out/binaries"
echo "$(wc -l < "$out/binaries") binaries x $rounds rounds x $loops loops"

# One loop: every binary once per round; a failure leaves its output and a
# line in the loop's failure list.
run_loop() {
    local loop=$1 round config name dir exe log fence
    for round in $(seq 1 "$rounds"); do
        while IFS=$'\t' read -r config name dir exe; do
            log="$out/$config.$(basename "$dir").$name.loop$loop.round$round.log"
            # The seqcst configuration is hazptr's binaries in SeqCst fence mode.
            fence=${SYNCPRIMS_FENCE:-}
            [ "$config" = seqcst ] && fence=seqcst
            # --foreground keeps the binary in this script's process group,
            # where Ctrl-C and the trap below reach it.
            if (cd "$dir" && SYNCPRIMS_FENCE=$fence timeout --foreground 600 "$exe" -q) > "$log" 2>&1; then
                rm "$log"
            else
                echo "$config $(basename "$dir")/$name" >> "$out/failed.$loop"
            fi
        done < "$out/binaries"
        echo "loop $loop: round $round of $rounds done"
    done
}

started=$(date +%s)
# The loops run in the background, where a non-interactive shell starts them
# ignoring SIGINT: on Ctrl-C or a TERM, end them and their binaries with the
# script (until 2026-12-08 they ran on, into the next run's target/stress/).
# With job control on, each loop is a process group of its own (its binaries
# stay in it, see --foreground above), which the trap ends whole, without
# signalling whatever started this script.
set -m
loop_groups=()
stop_loops() {
    trap - INT TERM
    local group
    for group in "${loop_groups[@]}"; do
        kill -TERM -- "-$group" 2>/dev/null || true
    done
    exit "$1"
}
trap 'stop_loops 130' INT
trap 'stop_loops 143' TERM
for loop in $(seq 1 "$loops"); do
    run_loop "$loop" &
    loop_groups+=("$!")
done
wait
echo "== $(( $(date +%s) - started )) s"
if cat "$out"/failed.* > "$out/failed" 2>/dev/null && [ -s "$out/failed" ]; then
    echo "failed runs, per binary (logs in $out/):"
    sort "$out/failed" | uniq -c
    exit 1
fi
echo "no run failed ($(( rounds * loops )) runs of each binary)"
