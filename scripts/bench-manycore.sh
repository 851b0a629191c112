#!/usr/bin/env bash
# The contention measures at 16 threads on a machine with at least 16 CPUs,
# as one run of about four minutes: the 2-vCPU development machine is
# oversubscribed at 16 threads, so these are the figures for the other case
# (threads <= CPUs). Every figure is JSON, one block per command, in
# $OUT/manycore.jsonl; peers run in the same invocation as ours, so compare
# ratios within a block.
#
# usage: scripts/bench-manycore.sh [SYNCBENCH] [OUT]
#   SYNCBENCH  a release syncbench binary (default: this checkout's, built
#              or brought up to date first, in cargo's target directory,
#              CARGO_TARGET_DIR included). One built with liburcu is dynamically
#              linked to liburcu-memb.so and liburcu-qsbr.so: a binary copied
#              from another host starts only where liburcu's runtime library
#              is installed (liburcu8 on Debian and Ubuntu); or build it with
#              SYNCBENCH_NO_LIBURCU=1, without the liburcu peers.
#   OUT        output folder (default: target/bench-manycore)
#   TREIBER_BENCH (environment) the criterion `treiber` bench's executable, run
#              with --quick at 1, 2 and one thread per CPU into OUT/treiber.txt.
#              Without SYNCBENCH the script builds and runs it through cargo.
#              scripts/manycore-bundle.sh packs both executables and liburcu's
#              runtime libraries into one folder for a host without cargo.
set -u
out=${2:-target/bench-manycore}
mkdir -p "$out"
if [ -n "${1:-}" ]; then
    sb=$1
else
    # The build's own binary: a syncbench an earlier build left in
    # ./target (or none there, with CARGO_TARGET_DIR set) is not this one.
    cargo build --release -p bench-suite --bin syncbench || exit 1
    sb=$(cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/syncbench || exit 1
fi
if ! "$sb" --version > /dev/null; then
    echo "bench-manycore: $sb does not start here (built with liburcu? see ldd $sb)" >&2
    exit 1
fi
log="$out/manycore.jsonl"
: > "$log"

# One measure: a header line naming the command, then its JSON (or its error).
run() {
    local limit=$1
    shift
    echo "### $*" | tee -a "$log" >&2
    # --foreground: the command stays in the script's process group, so
    # Ctrl-C stops it and the script (in its own group, timeout's child never
    # saw the signal, and the script went on to the next command).
    timeout --foreground "$limit" "$sb" "$@" --json >> "$log" 2>> "$out/stderr.txt"
    local rc=$?
    [ $rc -eq 0 ] || echo "### exit $rc" >> "$log"
}

{
    echo "### machine"
    echo "{\"nproc\": $(nproc), \"kernel\": \"$(uname -r)\", \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\", \"schedstat\": \"$(cat /proc/thread-self/schedstat 2>/dev/null)\"}"
} >> "$log"

# Read side, 1 and 16 threads.
run 60 refscale --impl all --threads 1 --iterations 2000000 --runs 5
run 60 refscale --impl all --threads 16 --iterations 2000000 --runs 5

# hazptr's shared scan against scanning alone.
for _ in 1 2; do
    run 30 rcuscale --impl hazptr,hazptr-unshared --writers 16 --duration-s 2
done
run 30 rcuscale --impl hazptr,hazptr-unshared --writers 1 --duration-s 2
run 30 rcuscale --impl hazptr,hazptr-unshared --writers 16 --readers 1 --duration-s 2
run 60 rcuscale --impl hazptr,hazptr-unshared --writers 16 --idle-threads 256 --duration-s 2

# rcu-lite: busy reader against liburcu, quick QS, 16 callers against 1.
run 30 rcuscale --impl rcu-lite,liburcu-memb --writers 1 --readers 1 --duration-s 2
for _ in 1 2 3 4 5; do
    run 10 rcuscale --impl rcu-lite,rcu-lite-noqs --writers 1 --idle-threads 1 --fqs-interval-ms 3 \
        --waits 100
done
for readers in 0 1; do
    run 30 rcuscale --impl rcu-lite --writers 1 --readers "$readers" --duration-s 2
    run 30 rcuscale --impl rcu-lite --writers 16 --readers "$readers" --duration-s 2
done
# Callers that fit the CPUs spin while they wait, those that do not sleep
# (rcu-lite's CallerSpin): both sides of the line.
run 30 rcuscale --impl rcu-lite --writers 4,8,32 --readers 0 --duration-s 1
run 30 rcuscale --impl rcu-lite --writers 1 --idle-threads 1 --fqs-interval-ms 3 --duration-s 2
run 30 rcuscale --impl rcu-lite --writers 16 --idle-threads 1 --fqs-interval-ms 3 --duration-s 2

# Locks: the mix (20 threads: slightly oversubscribed on 16 CPUs),
# twice, and a mix that fits the CPUs.
for _ in 1 2; do
    run 60 locktorture --lock qrwlock,parking_lot,std,spin --writers 4 --readers 16 --duration-s 5
done
run 60 locktorture --lock qrwlock,parking_lot,std,spin --writers 4 --readers 12 --duration-s 5

# Torture every reclamation scheme at once, with faults.
run 90 torture --impl all --readers 8 --writers 4 --duration-s 30 --faults

# The real targeted membarrier with CPUs to target.
run 30 membarrier --mode real --cpus 16 --callers 16 --duration-s 3
run 60 membarrier --mode threaded --cpus 8 --callers 8 --policy global --duration-s 2
run 60 membarrier --mode threaded --cpus 8 --callers 8 --policy per-cpu --duration-s 2

# The Treiber stack with retire, hazptr against haphazard, one thread per CPU.
treiber() {
    if [ -n "${TREIBER_BENCH:-}" ]; then
        # Criterion writes its data under ./target/criterion.
        (cd "$out" && timeout --foreground 120 "$TREIBER_BENCH" --bench --quick)
    elif [ -z "${1:-}" ]; then
        # Not --foreground here: cargo runs the bench as its own child, which
        # only a timeout of the whole process group ends.
        timeout 300 cargo bench -p bench-suite --bench treiber -- --quick
    fi
}
echo "### treiber" >&2
treiber "${1:-}" 2>&1 | grep 'time:' > "$out/treiber.txt"
# The bench's own status (a panic's message is not a `time:` line): a failed
# or timed-out run is marked, as run() marks a command's, not left to read as
# a shorter one.
treiber_rc=${PIPESTATUS[0]}
if [ "$treiber_rc" -ne 0 ]; then
    echo "### treiber exit $treiber_rc" | tee -a "$out/treiber.txt" >> "$log"
fi
echo "### done" >> "$log"
