#!/usr/bin/env bash
# The workspace's tests built for and run on Linux targets other than the
# host's x86_64 glibc, natively on an x86_64 kernel:
#
#   i686      i686-unknown-linux-gnu: 32-bit usize and pointers (hazptr's
#             wildcard generations wrap after 2^30 scans, and its readers
#             check theirs again: docs/hazptr.md, *Limits*), 64-bit atomics
#             through SSE, and the 32-bit futex and clock calls.
#   musl      x86_64-unknown-linux-musl: static, and std runs thread-local
#             destructors from its own list rather than glibc's
#             `__cxa_thread_atexit_impl`, the order hazptr's and rcu-lite's
#             thread-exit paths depend on.
#
#   ./scripts/other-targets.sh            # both
#   ./scripts/other-targets.sh musl       # one
#
# Installs what it needs where it is missing: the targets' standard
# libraries (rustup) and a C toolchain for each (gcc-multilib, musl-tools:
# apt-get, as root). The liburcu peers are left out (SYNCBENCH_NO_LIBURCU=1:
# the system's liburcu is x86_64 glibc). Debug builds, as `cargo test`: on
# i686 that keeps the overflow checks that caught a 64-bit shift in a test.
# Logs go to target/other-targets/. About 8 minutes on a 2-core machine
# (2026-12-07); not part of scripts/test.sh or .ci/run.
set -uo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(i686 musl)
for t in "${targets[@]}"; do
    case "$t" in
        i686 | musl) ;;
        *)
            echo "usage: $0 [i686] [musl]   (default: both)" >&2
            exit 2
            ;;
    esac
done

logs=target/other-targets
mkdir -p "$logs"
failed=0

# Adds a rustup target and a Debian package where they are missing.
need() {
    local triple=$1 package=$2
    rustup target list --installed | grep -qx "$triple" || rustup target add "$triple" || return 1
    dpkg -s "$package" > /dev/null 2>&1 || apt-get install -y "$package" > "$logs/apt-$package.log" 2>&1 || {
        echo "cannot install $package (see $logs/apt-$package.log)" >&2
        return 1
    }
}

for t in "${targets[@]}"; do
    case "$t" in
        i686) triple=i686-unknown-linux-gnu package=gcc-multilib ;;
        musl) triple=x86_64-unknown-linux-musl package=musl-tools ;;
    esac
    echo "== $t ($triple)"
    need "$triple" "$package" || { failed=1; continue; }
    log="$logs/$t.log"
    start=$SECONDS
    SYNCBENCH_NO_LIBURCU=1 CARGO_TARGET_DIR="target/$t" \
        cargo test --workspace --target "$triple" --no-fail-fast > "$log" 2>&1
    rc=$?
    # Sums the "test result" lines: passed, failed, ignored.
    counts=$(awk '/^test result:/ { p += $4; f += $6; i += $8 }
        END { printf "%d passed, %d failed, %d ignored", p, f, i }' "$log")
    if [ $rc -eq 0 ]; then
        echo "   PASS: $counts, $((SECONDS - start)) s"
    else
        echo "   FAIL (cargo test exit $rc): $counts; see $log"
        grep -E "^error: test failed|process didn't exit successfully|^    [a-z_:]+$" "$log" | head -20 | sed 's/^/     /'
        failed=1
    fi
done
exit $failed
