#!/usr/bin/env bash
# The workspace's tests built for Linux targets other than the host's x86_64
# glibc, and run on this x86_64 kernel: natively for i686 and musl, under
# qemu-user for the two ARM targets (the primitive crates' tests there, and
# a `cargo check` of bench-suite's):
#
#   i686      i686-unknown-linux-gnu: 32-bit usize and pointers (hazptr's
#             wildcard generations wrap after 2^30 scans, and its readers
#             check theirs again: docs/hazptr.md, *Limits*), 64-bit atomics
#             through SSE, and the 32-bit futex and clock calls.
#   musl      x86_64-unknown-linux-musl: static, and std runs thread-local
#             destructors from its own list rather than glibc's
#             `__cxa_thread_atexit_impl`, the order hazptr's and rcu-lite's
#             thread-exit paths depend on.
#   aarch64   aarch64-unknown-linux-gnu under qemu-user: the primitive
#             crates' tests (bench-suite has no code of its own per
#             architecture), through qrwlock's LDXR/WFE wait, which no other
#             target runs.
#   armv7     armv7-unknown-linux-gnueabihf under qemu-user, the same
#             tests: 32-bit, with 64-bit atomics made of LDREXD/STREXD
#             loops (rcu-lite's reader words, hazptr's domain ids).
#
# qemu translates the guest's accesses with the host's x86 ordering, so the
# two qemu targets check the ARM code, not the weak memory model (loom and
# miri's weak-memory emulation do that). Seven of their tests are skipped:
# six fork a multithreaded process, whose child qemu-user 7.2 aborts
# ("cpu_exec: assertion failed: (cpu == current_cpu)"), and one lowers
# RLIMIT_AS, which qemu's own reserved guest address space ignores.
#
#   ./scripts/other-targets.sh            # all four
#   ./scripts/other-targets.sh musl       # one
#
# Installs what it needs where it is missing: the targets' standard
# libraries (rustup), a C toolchain for each (Debian's cross compilers, not
# gcc-multilib, which conflicts with them; musl-tools; the i386 loader and
# libc to run the i686 binaries) and qemu-user (apt-get, as root), and registers
# qemu with binfmt_misc so that the tests' re-runs of their own binary (as
# child processes) start under it; the registration stays, and a qemu that
# already has one (qemu-user-static's, say) is used as it is: apt-get is
# told never to remove a package to make room. The liburcu peers are left out
# (SYNCBENCH_NO_LIBURCU=1: the system's liburcu is x86_64 glibc). Debug
# builds, as `cargo test`: on i686 that keeps the overflow checks that
# caught a 64-bit shift in a test. Logs go to target/other-targets/. About
# 8 minutes on a 2-core machine (2026-12-07, packages installed); not part
# of scripts/test.sh or .ci/run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(i686 musl aarch64 armv7)
for t in "${targets[@]}"; do
    case "$t" in
        i686 | musl | aarch64 | armv7) ;;
        *)
            echo "usage: $0 [i686] [musl] [aarch64] [armv7]   (default: all four)" >&2
            exit 2
            ;;
    esac
done

logs=target/other-targets
mkdir -p "$logs"
failed=0

# Adds a rustup target and Debian packages where they are missing.
need() {
    local triple=$1 package
    shift
    rustup target list --installed | grep -qx "$triple" || rustup target add "$triple" || return 1
    for package in "$@"; do
        dpkg -s "$package" > /dev/null 2>&1 && continue
        # A fresh image has no package lists yet: read them once, then try again.
        apt-get install -y --no-remove "$package" > "$logs/apt-$package.log" 2>&1 ||
            { apt-get update && apt-get install -y --no-remove "$package"; } \
                >> "$logs/apt-$package.log" 2>&1 || {
            echo "cannot install $package (see $logs/apt-$package.log)" >&2
            return 1
        }
    done
}

# Registers qemu-$1 with binfmt_misc (mounting it if need be), so that a
# binary of that architecture that a test starts runs under qemu.
register_qemu() {
    local misc=/proc/sys/fs/binfmt_misc
    [ -e "$misc/register" ] || mount -t binfmt_misc binfmt_misc "$misc" || {
        echo "cannot mount binfmt_misc on $misc (as root?)" >&2
        return 1
    }
    grep -qx enabled "$misc/status" || echo 1 > "$misc/status"
    [ -e "$misc/qemu-$1" ] && echo 1 > "$misc/qemu-$1"
    [ -e "$misc/qemu-$1" ] || cat "/usr/lib/binfmt.d/qemu-$1.conf" > "$misc/register" || {
        echo "cannot register qemu-$1 with binfmt_misc" >&2
        return 1
    }
}

# The tests qemu-user cannot run (see the header).
qemu_skips=(
    a_child_forked_in_the_middle_of_everything_keeps_working
    a_fork_child_frees_foreign_slots_but_keeps_the_first_one_back
    a_child_forked_while_another_thread_waits_to_fork_runs_callbacks
    a_fork_waits_for_the_running_callback_not_the_whole_batch
    callbacks_queued_before_a_fork_run_once_in_the_child_and_once_in_the_parent
    a_failed_worker_start_loses_no_callback
)

for t in "${targets[@]}"; do
    crates=(--workspace) skips=() packages=() qemu='' gnu=''
    case "$t" in
        i686)
            triple=i686-unknown-linux-gnu gnu=i686-linux-gnu
            packages=(gcc-i686-linux-gnu libc6-dev-i386-cross libc6-i386)
            ;;
        musl) triple=x86_64-unknown-linux-musl packages=(musl-tools) ;;
        aarch64)
            triple=aarch64-unknown-linux-gnu qemu=aarch64 gnu=aarch64-linux-gnu
            packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
            ;;
        armv7)
            triple=armv7-unknown-linux-gnueabihf qemu=arm gnu=arm-linux-gnueabihf
            packages=(gcc-arm-linux-gnueabihf libc6-dev-armhf-cross)
            ;;
    esac
    if [ -n "$qemu" ]; then
        [ -e "/proc/sys/fs/binfmt_misc/qemu-$qemu" ] || packages+=(qemu-user qemu-user-binfmt)
        crates=(-p futex-word -p membarrier-sim -p qrwlock -p hazptr -p rcu-lite -p test-support)
        for name in "${qemu_skips[@]}"; do skips+=(--skip "$name"); done
    fi
    echo "== $t ($triple)"
    need "$triple" "${packages[@]}" || { failed=1; continue; }
    if [ -n "$qemu" ]; then
        register_qemu "$qemu" || { failed=1; continue; }
    fi
    # For the cross compilers: Cargo's per-target linker (named after the
    # triple, upper case, `-` as `_`) and the cc crate's compiler; under
    # qemu, its library root.
    env_triple=$(tr 'a-z-' 'A-Z_' <<<"$triple")
    cross=()
    [ -n "$gnu" ] && cross=("CARGO_TARGET_${env_triple}_LINKER=$gnu-gcc" "CC_${triple//-/_}=$gnu-gcc")
    [ -n "$qemu" ] && cross+=("QEMU_LD_PREFIX=/usr/$gnu")
    log="$logs/$t.log"
    start=$SECONDS
    run() { env SYNCBENCH_NO_LIBURCU=1 CARGO_TARGET_DIR="target/$t" "${cross[@]}" "$@"; }
    : > "$log"
    # bench-suite, whose tests the ARM phases leave out, must still build.
    if [ -n "$qemu" ] && ! run cargo check -p bench-suite --all-targets --target "$triple" >> "$log" 2>&1; then
        echo "   FAIL: bench-suite does not build; see $log"
        failed=1
        continue
    fi
    run cargo test "${crates[@]}" --target "$triple" --no-fail-fast -- "${skips[@]}" >> "$log" 2>&1
    rc=$?
    # Sums the "test result" lines: passed, failed, ignored, and left out by
    # the skips (a doc-test run counts nothing there).
    counts=$(awk '/^test result:/ { p += $4; f += $6; i += $8; s += $12 }
        END { printf "%d passed, %d failed, %d ignored, %d skipped", p, f, i, s }' "$log")
    if [ $rc -eq 0 ]; then
        echo "   PASS: $counts, $((SECONDS - start)) s"
    else
        echo "   FAIL (cargo test exit $rc): $counts; see $log"
        grep -E "^error: test failed|process didn't exit successfully|^    [a-z_:]+$" "$log" | head -20 | sed 's/^/     /'
        failed=1
    fi
done
exit $failed
