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

# bench-suite's examples measure the floors the docs quote; `cargo test` only
# builds them. Each runs once on tiny arguments (a few seconds in all), so
# that one that panics, hangs or no longer parses its arguments is seen.
for example in "callback_backlog 50 1" "callers_per_gp 0.05 1/0,2/1" \
    "contention_floor 200 4" "read_floor 1 10000" "registration_churn 8 16" \
    "timer_lateness 5 100" "preempted_readers 2 1" "fork_wait hazptr 2 reader"; do
    read -r name args <<< "$example"
    echo "== example $name $args"
    # shellcheck disable=SC2086 # the arguments split on purpose
    timeout 120 cargo run -q -p bench-suite --example "$name" -- $args
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
for crate in "${loom_crates[@]}"; do
    echo "== loom models: $crate (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS)"
    RUSTFLAGS="--cfg loom -C debug-assertions" CARGO_TARGET_DIR=target/loom \
        cargo test -p "$crate" --test loom --release
done
