#!/usr/bin/env bash
# The workspace's tests: every crate's unit, integration and doc tests, then the
# loom models of every crate that has them (tests/loom.rs).
#
#   ./scripts/test.sh            # all of it
#   LOOM_MAX_PREEMPTIONS=3 ./scripts/test.sh   # a deeper loom search
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace

# Loom builds every crate with `--cfg loom`; a separate target directory keeps
# that from invalidating the normal build.
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
for crate in hazptr qrwlock rcu-lite membarrier-sim; do
    if [ -f "$crate/tests/loom.rs" ]; then
        echo "== loom models: $crate (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS)"
        RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
            cargo test -p "$crate" --test loom --release
    fi
done
