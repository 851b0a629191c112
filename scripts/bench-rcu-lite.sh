#!/usr/bin/env bash
# rcu-lite's speed goals (issue 4), each measured side by side with its peer in
# one syncbench run, under /work/bench.lock when it exists (so no two
# benchmarks overlap), and printed as ratios.
#
#   ./scripts/bench-rcu-lite.sh            # release build, then every goal
#   DURATION=2 ROUNDS=5 ./scripts/bench-rcu-lite.sh # longer rcuscale runs, more rounds
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p bench-suite --bin syncbench
# The build's own target directory: CARGO_TARGET_DIR (or a cargo config's
# build.target-dir) moves it out of ./target, where a syncbench (and criterion
# results) left by an earlier build would otherwise be measured and read.
target=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
sb="$target/release/syncbench"
lock() { if [ -e /work/bench.lock ]; then flock /work/bench.lock "$@"; else "$@"; fi; }
# rcuscale: ROUNDS rounds of DURATION seconds (implementations taking turns
# within a round); per-GP time is the median round.
d="${DURATION:-1}"
rounds="${ROUNDS:-3}"
out="$target/bench-rcu-lite"
mkdir -p "$out"

# The liburcu peers only where this build links liburcu: syncbench refuses an
# implementation it cannot run, and the goals without a liburcu side (qsbr,
# crossbeam-epoch, quick QS, concurrent callers) are still measured.
peers_memb=,liburcu-memb peers_qsbr=,liburcu-qsbr peers_read=,liburcu-memb,liburcu-qsbr
if ! "$sb" list --json | python3 -c '
import json, sys
sys.exit(not any(i["name"] == "liburcu-memb" and i["available"]
                 for k in json.load(sys.stdin) for i in k["implementations"]))'; then
    echo "liburcu is unavailable in this build (syncbench list): its comparisons are left out"
    peers_memb='' peers_qsbr='' peers_read=''
fi
lock "$sb" refscale --impl "rcu-lite-memb,rcu-lite-qsbr$peers_read,crossbeam-epoch" \
    --iterations 10000000 --runs 15 --json > "$out/refscale.json"
lock "$sb" rcuscale --impl "rcu-lite$peers_memb" --writers 1 --readers 1 --duration-s "$d" --rounds "$rounds" \
    --json > "$out/busy-reader.json"
# Not a goal: the qsbr flavor's writer against liburcu-qsbr's, both with
# readers that announce a quiescent state every 64 sections.
lock "$sb" rcuscale --impl "rcu-lite-qsbr$peers_qsbr" --writers 1,16 --readers 1 --duration-s "$d" \
    --rounds "$rounds" --json > "$out/qsbr-writers.json"
# Quick QS as the seed measured it: runs of 100 synchronize_rcu() calls, on
# and off alternating (each invocation runs on, then off), ten runs a side.
# The seed's system is idle, not a single CPU: one idle registered thread
# stands for its idle CPUs (with none, quick QS leaves no FQS wait at all).
qs_runs=10
for run in $(seq 1 "$qs_runs"); do
    lock "$sb" rcuscale --impl rcu-lite,rcu-lite-noqs --writers 1 --readers 0 --idle-threads 1 \
        --fqs-interval-ms 3 --waits 100 --json > "$out/quick-qs-$run.json"
done
for fqs in adaptive 3; do
    # Fixed-interval: beside one idle registered thread, as for quick QS
    # (the lone writer would otherwise make no FQS wait at all, while the
    # 16 writers are registered beside one another).
    flag=(); [ "$fqs" = adaptive ] || flag=(--fqs-interval-ms "$fqs" --idle-threads 1)
    for readers in 0 1; do
        # 1 and 16 writers in one run, taking turns round by round.
        lock "$sb" rcuscale --impl rcu-lite --writers 1,16 --readers "$readers" \
            --duration-s "$d" --rounds "$rounds" "${flag[@]}" --json > "$out/concurrent-$fqs-r$readers.json"
    done
done

python3 - "$out" "$qs_runs" <<'PY'
import json, statistics, sys
out = sys.argv[1]
load = lambda name: {r["impl"]: r for r in json.load(open(f"{out}/{name}.json"))}
ref = load("refscale")
ns = {k: v["ns_per_op"] for k, v in ref.items()}
lo = {k: min(v["runs_ns"]) for k, v in ref.items()}
print("read side, ns/op (median of 15 runs; min in brackets):")
for k in ns:
    print(f"  {k:16} {ns[k]:6.3f} [{lo[k]:.3f}]")
# refscale runs the contenders in turns, so run i of each is paired: every
# ratio goal of refscale and rcuscale is judged on the median of the
# per-run (or per-round) ratios, which
# a slow stretch of the machine cannot tip by landing on one side's median
# only (docs/measuring.md); the ratio of the medians is printed beside it
# (until 2026-12-06 the verdicts went by that).
paired = lambda a, b: statistics.median(x / y for x, y in zip(ref[a]["runs_ns"], ref[b]["runs_ns"]))
def ratio(a, b, goal, what):
    if b not in ns:
        print(f"  {what}: {b} unavailable"); return
    r = paired(a, b)
    print(f"  {what}: paired runs {r:.2f}x (ratio of medians {ns[a] / ns[b]:.2f}x, of minima {lo[a]/lo[b]:.2f}x) "
          f"goal <= {goal}x {'ok' if r <= goal else 'NOT MET'}")
ratio("rcu-lite-memb", "liburcu-memb", 1.2, "memb / liburcu-memb")
ratio("rcu-lite-memb", "crossbeam-epoch", 0.4, "memb / crossbeam-epoch pin")
q = ns["rcu-lite-qsbr"]
same_run = (f" (liburcu-qsbr {ns['liburcu-qsbr']:.3f} ns in the same run, paired runs "
            f"{paired('rcu-lite-qsbr', 'liburcu-qsbr'):.2f}x)") if "liburcu-qsbr" in ns else ""
print(f"  qsbr read side: {q:.3f} ns{same_run} goal <= 0.5 ns {'ok' if q <= 0.5 else 'NOT MET'}")

busy = load("busy-reader")
if "liburcu-memb" in busy:
    a, b = busy["rcu-lite"]["latency_us"], busy["liburcu-memb"]["latency_us"]
    # With one writer a round's per-GP time is its mean wait (one wait after
    # another), so the rounds' ratios pair the two means round by round.
    r = statistics.median(x / y for x, y in zip(busy["rcu-lite"]["per_gp_rounds_us"],
                                                busy["liburcu-memb"]["per_gp_rounds_us"]))
    print(f"synchronize with one busy reader, us: rcu-lite mean {a['mean']:.2f} p50 {a['p50']:.2f} max {a['max']:.0f}; "
          f"liburcu-memb mean {b['mean']:.2f} p50 {b['p50']:.2f} max {b['max']:.0f}; "
          f"mean ratio paired rounds {r:.2f}x (of all waits {a['mean'] / b['mean']:.2f}x) "
          f"goal <= 1.0x {'ok' if r <= 1.0 else 'NOT MET'}")
else:
    print("synchronize with one busy reader: liburcu-memb unavailable, goal not judged")

qsbr = json.load(open(f"{out}/qsbr-writers.json"))
for writers in sorted({r["writers"] for r in qsbr}):
    row = {r["impl"]: r for r in qsbr if r["writers"] == writers}
    ours = row["rcu-lite-qsbr"]
    # The time-weighted p50 (half the waiting time went to waits this long or
    # longer) shows what per-GP time and the mean do not: writers that nap
    # for milliseconds (docs/measuring.md, *Long waits*).
    waits = lambda r: (f"mean wait {r['latency_us']['mean']:.2f} us, time-weighted p50 "
                       f"{r['latency_us'].get('time_weighted_p50', float('nan')):.1f} us")
    line = (f"qsbr synchronize, {writers} writer(s), one busy reader (not a goal): rcu-lite-qsbr per-GP "
            f"{ours['per_gp_us']:.2f} us, {waits(ours)}")
    if "liburcu-qsbr" in row:
        peer = row["liburcu-qsbr"]
        # Round by round first: the rounds take turns, so a stretch of the
        # host running slower falls on both sides of a pair, where a ratio
        # of the two medians can pair a fast round with a slow one
        # (docs/measuring.md: the guest switched speed mid-run).
        pairs = [a / b for a, b in zip(ours["per_gp_rounds_us"], peer["per_gp_rounds_us"])]
        line += (f"; liburcu-qsbr {peer['per_gp_us']:.2f} us, {waits(peer)}; "
                 f"per-GP paired rounds {statistics.median(pairs):.2f}x "
                 f"({min(pairs):.2f}-{max(pairs):.2f}x; ratio of medians "
                 f"{ours['per_gp_us'] / peer['per_gp_us']:.2f}x)")
    print(line)

runs = [load(f"quick-qs-{i}") for i in range(1, int(sys.argv[2]) + 1)]
print(f"quick QS, fixed 3 ms FQS, idle (1 idle thread), {len(runs)} runs of 100 waits a side (us, per run: mean / max):")
side = {}
for name in ["rcu-lite", "rcu-lite-noqs"]:
    lat = [r[name]["latency_us"] for r in runs]
    print(f"  {name:14} " + "  ".join(f"{l['mean']:.0f}/{l['max']:.0f}" for l in lat))
    maxima = [l["max"] for l in lat]
    side[name] = (statistics.mean(l["mean"] for l in lat), max(maxima),
                  statistics.median(maxima))
(am, ax, ar), (bm, bx, br) = side["rcu-lite"], side["rcu-lite-noqs"]
rm, rx, rr = am / bm, ax / bx, ar / br
print(f"  on/off: mean {am:.0f}/{bm:.0f} = {rm:.2f}x (goal <= 0.65x {'ok' if rm <= 0.65 else 'NOT MET'}); "
      f"max of all runs {ax:.0f}/{bx:.0f} = {rx:.2f}x (goal <= 0.5x {'ok' if rx <= 0.5 else 'NOT MET'}); "
      f"median run max {ar:.0f}/{br:.0f} = {rr:.2f}x")
# The engine's own count of FQS waits: one per grace period with quick QS
# and two without means every long wait above was a late wake-up (of the
# driver's timer or of the caller), not a grace period that needed another
# scan.
fqs = {name: [r[name].get("fqs") for r in runs] for name in side}
if all(c for counts in fqs.values() for c in counts):
    per_gp = {name: sum(c["fqs_waits"] for c in counts) / sum(c["grace_periods"] for c in counts)
              for name, counts in fqs.items()}
    interval_us = 3000  # the runs' --fqs-interval-ms 3
    print(f"  FQS waits per grace period (the engine's count): rcu-lite {per_gp['rcu-lite']:.3f}, "
          f"rcu-lite-noqs {per_gp['rcu-lite-noqs']:.3f}; the largest waits ran "
          f"{ax - per_gp['rcu-lite'] * interval_us:.0f} and {bx - per_gp['rcu-lite-noqs'] * interval_us:.0f} us "
          f"past that many 3 ms intervals")

for fqs in ["adaptive", "3"]:
    for readers in [0, 1]:
        rows = {r["writers"]: r for r in json.load(open(f"{out}/concurrent-{fqs}-r{readers}.json"))}
        one_row, many_row = rows[1], rows[16]
        one, many = one_row["per_gp_us"], many_row["per_gp_us"]
        rng = lambda row: f" [{min(row['per_gp_rounds_us']):.2f}-{max(row['per_gp_rounds_us']):.2f}]"
        r = many / one
        # The two writer counts took turns in one run: round i of each pairs.
        paired_r = statistics.median(m / o for m, o in zip(many_row["per_gp_rounds_us"], one_row["per_gp_rounds_us"]))
        mode = "adaptive FQS" if fqs == "adaptive" else f"fixed {fqs} ms FQS, 1 idle thread"
        print(f"16 concurrent callers vs 1, {mode}, {readers} reader(s), one run, median round [range]: per-GP "
              f"{many:.2f}{rng(many_row)} vs {one:.2f}{rng(one_row)} us: paired rounds "
              f"{paired_r:.3f}x (ratio of median rounds {r:.3f}x) goal <= 0.25x {'ok' if paired_r <= 0.25 else 'NOT MET'}")
PY
