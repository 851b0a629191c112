#!/usr/bin/env bash
# Every crate's speed and fairness goals, each measured side by side with its
# peers and printed as ratios. Run it on a quiet machine: other load moves
# every figure (the ratios less than the absolute numbers).
#
#   ./scripts/goals.sh            # all of them (about 10 minutes on 2 cores)
#   ./scripts/goals.sh hazptr     # one of: hazptr qrwlock rcu-lite membarrier
set -euo pipefail
cd "$(dirname "$0")"
for part in "${@:-hazptr qrwlock rcu-lite membarrier}"; do
    for p in $part; do
        echo "===== $p"
        "./bench-$p.sh"
    done
done
