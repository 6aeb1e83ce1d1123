#!/usr/bin/env bash
# The main job, on an embedded local cluster: a tessera-node from config/local.toml (scheduler and workers
# in one process), the example's 500 parameter sets streamed into the costly_simulation simulation with
# progress, the summary and the count of results > 2 queried from the node's store, results.csv written,
# and the node stopped cleanly. Run from anywhere, after the build (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
address=tcp://127.0.0.1:7070

"$bin/embarrassingly_parallel" --params-csv params.csv
"$bin/tessera-node" --config config/local.toml &
node=$!
trap 'kill -TERM "$node" 2>/dev/null || true; wait "$node" 2>/dev/null || true' EXIT
# The node answers status once it listens; give it 30 s.
for _ in $(seq 300); do
  if "$bin/tessera" --scheduler "$address" status >/dev/null 2>&1; then break; fi
  sleep 0.1
done
"$bin/tessera" --scheduler "$address" stream push --simulation costly_simulation --input params.csv \
  --output results.csv | tee stream.log
stream=$(sed -n 's/^stream \([0-9]*\):.*/\1/p' stream.log | head -n 1)
echo "summary of stream $stream:"
"$bin/tessera" --scheduler "$address" results --stream "$stream"
echo "results > 2: $("$bin/tessera" --scheduler "$address" results --stream "$stream" --where 'result > 2' --format count)"
kill -TERM "$node"
wait "$node"
trap - EXIT
echo "the node stopped cleanly; results in results.csv"
