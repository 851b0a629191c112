#!/usr/bin/env bash
# qrwlock's speed and fairness goals (issue 5), measured side by side with the
# peers in one run, and printed as ratios.
#
#   ./scripts/bench-qrwlock.sh            # locktorture, then criterion `rwlock`
#   RUNS=3 ./scripts/bench-qrwlock.sh     # repeat locktorture 3 times
#   SKIP_CRITERION=1 ./scripts/bench-qrwlock.sh
#
# Goals: locktorture --writers 4 --readers 16 --duration-s 5: Fail 0
# everywhere, qrwlock's writer share (writes per writer thread over reads per
# reader thread) >= 0.3, qrwlock's total >= 0.3x parking_lot's, no `???`;
# uncontended read and write lock+unlock <= 1.1x parking_lot's; 2-thread
# read-mostly throughput >= parking_lot's. On a shared machine every command
# runs under `flock /work/bench.lock` when that file exists.
set -euo pipefail
cd "$(dirname "$0")/.."
lock=()
[ -e /work/bench.lock ] && lock=(flock /work/bench.lock)

cargo build --release -p bench-suite --bin syncbench
# The build's own target directory: CARGO_TARGET_DIR (or a cargo config's
# build.target-dir) moves it out of ./target, where a syncbench (and criterion
# results) left by an earlier build would otherwise be measured and read.
target=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
for run in $(seq "${RUNS:-1}"); do
    echo "== locktorture run $run"
    "${lock[@]}" "$target/release/syncbench" locktorture --lock qrwlock,parking_lot,std,spin \
        --writers 4 --readers 16 --duration-s 5 --json > "$target/qrwlock-locktorture.json"
    python3 - "$target/qrwlock-locktorture.json" <<'PY'
import json, sys
rows = {r["lock"]: r for r in json.load(open(sys.argv[1]))}
total = lambda r: r["writes"]["total"] + r["reads"]["total"]
# Compared as rates: each lock's window is its own measured duration_s.
rate = lambda r: total(r) / r["duration_s"]
# The kernel's and syncbench's test, in whole numbers: max / 2 > min; and,
# as syncbench's "writers got none", a side whose threads got no
# acquisition at all (max 0 passes the kernel's test).
starved = lambda c: c["max"] // 2 > c["min"] or c["total"] == 0
pl = rate(rows["parking_lot"])
for name, r in rows.items():
    w, rd = r["writes"], r["reads"]
    share = (w["total"] / r["writers"]) / max(rd["total"] / r["readers"], 1e-9)
    flags = ("writers???" if starved(w) else "") + (" readers???" if starved(rd) else "")
    print(f"{name:12} fail={r['fail']} writes={w['total']} reads={rd['total']} "
          f"writer_share={share:.3f} total={total(r)} per_s/parking_lot={rate(r) / pl:.2f} {flags}")
PY
done

if [ -z "${SKIP_CRITERION:-}" ]; then
    # Full sampling (the bench's 0.5 s warm-up and 2 s of samples per
    # benchmark, about 1.5 minutes in all): `--quick` keeps two samples and
    # no warm-up, too few for the medians read below.
    echo "== criterion rwlock (full sampling)"
    "${lock[@]}" cargo bench -p bench-suite --bench rwlock > /dev/null
    python3 - "$target" <<'PY'
import json, os, sys
base = os.path.join(sys.argv[1], "criterion", "rwlock")
def median(imp, q):
    with open(os.path.join(base, imp, q, "new", "estimates.json")) as f:
        return json.load(f)["median"]["point_estimate"]
for q in ["uncontended-read", "uncontended-write", "read-mostly-2t"]:
    pl = median("parking_lot", q)
    cells = [f"{imp}={median(imp, q):.2f}ns ({median(imp, q) / pl:.2f}x)"
             for imp in ["qrwlock", "parking_lot", "std", "spin"]]
    print(f"{q:18} " + "  ".join(cells))
# Nested reads (a read hold and a recursive one inside it), against the locks
# whose nested reads cannot deadlock behind a waiting writer; not a goal.
for q in ["nested-read", "nested-read-mostly-2t"]:
    pl = median("parking_lot-recursive", q)
    cells = [f"{imp}={median(imp, q):.2f}ns ({median(imp, q) / pl:.2f}x)"
             for imp in ["qrwlock", "parking_lot-recursive", "spin"]]
    print(f"{q:21} " + "  ".join(cells))
print("(time per operation; the -2t rows are per pair of operations, one on each thread:"
      " lower is faster)")
PY
fi
