#!/usr/bin/env bash
# The workspace's tests: every crate's unit, integration and doc tests, hazptr's
# again with its force-slow-path feature and again in SeqCst fence mode (and
# rcu-lite's example in that mode), bench-suite's examples on tiny arguments,
# then the loom models of every crate that has them (tests/loom.rs).
#
#   ./scripts/test.sh            # all of it
#   LOOM_MAX_PREEMPTIONS=3 ./scripts/test.sh   # a deeper loom search
set -euo pipefail
cd "$(dirname "$0")/.."

# The crates with loom models. A listed crate without tests/loom.rs, or a
# tests/loom.rs of an unlisted crate, fails here, before anything runs: a
# model file renamed or added must not drop out of the run unnoticed.
loom_crates=(futex-word hazptr membarrier-sim qrwlock rcu-lite)
for crate in "${loom_crates[@]}"; do
    [ -f "$crate/tests/loom.rs" ] || { echo "test.sh: $crate/tests/loom.rs is missing" >&2; exit 1; }
done
for model in */tests/loom.rs; do
    [ -f "$model" ] || continue
    [[ " ${loom_crates[*]} " == *" ${model%%/*} "* ]] ||
        { echo "test.sh: $model is not in loom_crates" >&2; exit 1; }
done

cargo test --workspace
# hazptr's debug switch: every acquire in every domain takes the slow path
# (backup slots), so the suite runs again through it; the tests of the
# threads' slot blocks and own retire lists, which it leaves unused, say so
# and are ignored.
cargo test -p hazptr --features force-slow-path
# And with the fences forced to their fence(SeqCst) fallback (a kernel without
# membarrier): blocks then keep their first slot back, which every test that
# counts a thread's slots must allow for (tests/seqcst_fences.rs checks the
# slot itself). No rebuild: the mode is read at run time.
SYNCPRIMS_FENCE=seqcst cargo test -p hazptr
SYNCPRIMS_FENCE=seqcst cargo test -p rcu-lite --example routing_table
# qrwlock's `arc_lock` feature (lock_api's owned guards), and `send_guard`
# (guards that are `Send`: its test, and the crate docs' example, which
# compiles only with it).
cargo test -p qrwlock --features arc_lock --test rwlock
cargo test -p qrwlock --features arc_lock,send_guard --test rwlock
cargo test -p qrwlock --features send_guard --doc
# test-support's own ignored test: a test that reruns itself in a child
# process must run there when it is itself run on request (--ignored).
cargo test -p test-support --lib -- --include-ignored

# bench-suite's examples measure the floors the docs quote; `cargo test` only
# builds them. Each runs once on tiny arguments (a few seconds in all), so
# that one that panics, hangs or no longer parses its arguments is seen.
for example in "callback_backlog 50 1" "callers_per_gp 0.05 1/0,2/1" \
    "contention_floor 200 4" "read_floor 1 10000" "registration_churn 8 16" \
    "timer_lateness 5 100" "preempted_readers 2 1" "fork_wait hazptr 2 reader"; do
    read -r name args <<< "$example"
    echo "== example $name $args"
    # shellcheck disable=SC2086 # the arguments split on purpose
    # --foreground keeps cargo and the example in this script's process
    # group, where Ctrl-C reaches them (and stops the script).
    timeout --foreground 120 cargo run -q -p bench-suite --example "$name" -- $args
done

# Loom builds every crate with `--cfg loom`; a separate target directory keeps
# that from invalidating the normal build. `-C debug-assertions`: the release
# build loom needs for speed would otherwise compile out the crates'
# `debug_assert!`s, the invariants (grace periods started in order, only
# readers admitted together) a model's interleavings should check too (and
# rustc turns overflow checks on with them, as a debug build has); it
# costs about 13% (hazptr 200 s against 176, rcu-lite 264 against 233, on
# the 2-vCPU EPYC guest, 2026-12-07).
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
loom_build=(env RUSTFLAGS="--cfg loom -C debug-assertions" CARGO_TARGET_DIR=target/loom
    cargo test --release --test loom)
# Built one crate at a time, each suite started as soon as it is built (so
# that it runs while the next crates build), all then running at once. A
# suite's models run two at a time in name order, so its longest (hazptr's
# wildcard_flip_escape_shared, the last in name order and about half the
# suite's CPU time) ran alone at its end with the other CPU idle; run
# together, the other suites' models fill that CPU. On the 2-vCPU EPYC
# guest (2026-12-07) hazptr's and rcu-lite's suites took 379 s and 393 s
# one after the other (772 s), and 468 s and 489 s at once. Each suite's
# output is kept in target/loom-logs and printed whole once it and the
# suites before it in loom_crates have ended; a test.sh stopped before that
# (CI's timeout) prints the end of each log, which names a model that hangs
# ("has been running for over 60 seconds").
loom_logs=target/loom-logs
rm -rf "$loom_logs" && mkdir -p "$loom_logs"
loom_pids=()
# A test.sh that is stopped (CI's timeout) stops the suites it started,
# and shows how far each got.
stop_loom_suites() {
    kill "${loom_pids[@]}" 2>/dev/null || true
    for log in "$loom_logs"/*.log; do
        [ -f "$log" ] || continue
        echo "== loom models stopped: the end of $log" >&2
        tail -n 40 "$log" >&2
    done
}
trap stop_loom_suites EXIT
for crate in "${loom_crates[@]}"; do
    echo "== loom models: build $crate"
    "${loom_build[@]}" -p "$crate" --no-run --message-format=json-render-diagnostics \
        > "$loom_logs/$crate.json"
    # The loom test target's artifact: its executable.
    executable=$(grep -F '"kind":["test"]' "$loom_logs/$crate.json" | grep -F '"name":"loom"' |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p')
    [ -n "$executable" ] && [ "$(wc -l <<< "$executable")" -eq 1 ] ||
        { echo "test.sh: no single loom test executable for $crate: $executable" >&2; exit 1; }
    # In the crate's directory, as cargo test runs it.
    (cd "$crate" && exec "$executable") > "$loom_logs/$crate.log" 2>&1 &
    loom_pids+=("$!")
done
loom_failed=()
for i in "${!loom_crates[@]}"; do
    crate=${loom_crates[$i]}
    outcome=passed
    wait "${loom_pids[$i]}" || { outcome=FAILED; loom_failed+=("$crate"); }
    echo "== loom models: $crate (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS): $outcome"
    cat "$loom_logs/$crate.log"
done
trap - EXIT
if [ ${#loom_failed[@]} -gt 0 ]; then
    echo "test.sh: the loom models of ${loom_failed[*]} failed (their output is above)" >&2
    exit 1
fi
