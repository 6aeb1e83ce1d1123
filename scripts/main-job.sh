#!/usr/bin/env bash
# The main job, on an embedded local cluster: a tessera-node from config/local.toml (scheduler and workers
# in one process), the example's 500 parameter sets streamed into the costly_simulation simulation with
# progress, the summary and the count of results > 2 queried from the node's store, results.csv written,
# and the node stopped cleanly. Run from anywhere, after the build (see README.md). What it writes
# (params.csv, stream.log, results.csv) goes to TESSERA_OUTPUT_DIR, by default TMPDIR/tessera-main-job:
# never into the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
address=tcp://127.0.0.1:7070
out="${TESSERA_OUTPUT_DIR:-${TMPDIR:-/tmp}/tessera-main-job}"
mkdir -p "$out"

"$bin/embarrassingly_parallel" --params-csv "$out/params.csv"
"$bin/tessera-node" --config config/local.toml &
node=$!
trap 'kill -TERM "$node" 2>/dev/null || true; wait "$node" 2>/dev/null || true' EXIT
# The node answers status once it listens; give it 30 s.
for _ in $(seq 300); do
  if "$bin/tessera" --scheduler "$address" status >/dev/null 2>&1; then break; fi
  sleep 0.1
done
"$bin/tessera" --scheduler "$address" stream push --simulation costly_simulation --input "$out/params.csv" \
  --output "$out/results.csv" | tee "$out/stream.log"
stream=$(sed -n 's/^stream \([0-9]*\):.*/\1/p' "$out/stream.log" | head -n 1)
echo "summary of stream $stream:"
"$bin/tessera" --scheduler "$address" results --stream "$stream"
above=$("$bin/tessera" --scheduler "$address" results --stream "$stream" --where 'result > 2' --format count)
total=$("$bin/tessera" --scheduler "$address" results --stream "$stream" --format count)
awk -v above="$above" -v total="$total" \
  'BEGIN { printf "results > 2: %d of %d (%.1f%%)\n", above, total, total ? 100 * above / total : 0 }'
kill -TERM "$node"
wait "$node"
trap - EXIT
echo "the node stopped cleanly; results in $out/results.csv"
