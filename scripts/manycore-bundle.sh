#!/usr/bin/env bash
# Packs what scripts/bench-manycore.sh needs on a host without cargo into one
# folder: the release syncbench and the criterion `treiber` bench (stripped),
# the liburcu runtime libraries syncbench links against (if it was built with
# them), and `run`, which starts bench-manycore.sh with them from the
# checkout's root. On the other host, in a copy of this checkout:
#
#   DIR/run [OUT]
#
# usage: scripts/manycore-bundle.sh DIR
set -eu
dir=${1:?usage: scripts/manycore-bundle.sh DIR}
mkdir -p "$dir"
cargo build --release -p bench-suite --bin syncbench
target=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
cp "$target/release/syncbench" "$dir/syncbench"
# The bench's executable, named by cargo's JSON messages.
treiber=$(cargo bench -p bench-suite --bench treiber --no-run --message-format json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "treiber" and m.get("executable"):
        print(m["executable"])')
[ -n "$treiber" ] || { echo "manycore-bundle: no treiber bench executable" >&2; exit 1; }
cp "$treiber" "$dir/treiber"
strip "$dir/syncbench" "$dir/treiber"
# liburcu's libraries, if this syncbench links them.
ldd "$dir/syncbench" | awk '/liburcu/ { print $3 }' | while read -r lib; do
    cp -L "$lib" "$dir/"
done
cat > "$dir/run" <<'RUN'
#!/usr/bin/env bash
# Runs scripts/bench-manycore.sh with this folder's executables; from the
# checkout's root. usage: DIR/run [OUT]
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TREIBER_BENCH="$here/treiber"
exec scripts/bench-manycore.sh "$here/syncbench" "${1:-target/bench-manycore}"
RUN
chmod +x "$dir/run"
du -sh "$dir"
