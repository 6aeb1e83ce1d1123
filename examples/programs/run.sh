#!/usr/bin/env bash
# LAMMPS over a temperature and density sweep, as a Tessera program simulation: starts a tessera-node from
# lj_melt.toml (scheduler and worker in one process, its data_dir in a temporary directory), pushes
# params.csv into the lj_melt simulation, waits for every set's result, prints them as CSV and stops the
# node. Needs Debian's lammps and openmpi-bin (scripts/setup.sh) and a build of Tessera.
#   examples/programs/run.sh [BUILD_DIR]     (or TESSERA_BUILD=BUILD_DIR; default: the repository's build/)
# TESSERA_KEEP=1 keeps the temporary directory (the node's log and store, each set's working directory);
# it is kept anyway when something fails. Exit codes: 0 every set stored a result; 1 a failure (a failed set,
# the node, a deadline); 2 no Tessera build; 77 no lmp or mpirun.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${TESSERA_BUILD:-$here/../../build}}
[[ -d $build ]] || { echo "run.sh: no build directory $build (name it: run.sh BUILD_DIR)" >&2; exit 2; }
bin=$(cd "$build" && pwd)/bin
for tool in "$bin/tessera-node" "$bin/tessera"; do
  [[ -x $tool ]] || { echo "run.sh: $tool is missing: build Tessera first (or name the build directory)" >&2; exit 2; }
done
# Exit 77 (a skipped test, as ctest's SKIP_RETURN_CODE reads it) without LAMMPS or Open MPI.
for tool in lmp mpirun; do
  command -v "$tool" >/dev/null ||
    { echo "run.sh: $tool is missing: apt-get install lammps openmpi-bin (scripts/setup.sh)" >&2; exit 77; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-lj-melt.XXXXXX")
node=
client=
# Stops the node: SIGTERM, SIGKILL if it is still there after 15 s (node.shutdown_timeout is 10 s); its
# exit status.
stop_node() {
  kill -TERM "$node" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$node" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$node" 2>/dev/null || true
  local rc=0
  wait "$node" || rc=$?
  node=
  return "$rc"
}
finish() {
  local rc=$?
  if [[ -n $client ]]; then kill -TERM "$client" 2>/dev/null || true; wait "$client" 2>/dev/null || true; fi
  if [[ -n $node ]]; then stop_node || true; fi
  if ((rc != 0)) || [[ ${TESSERA_KEEP:-0} == 1 ]]; then
    echo "run.sh: kept $tmp (node.log, data/runs/STREAM/ID of failed sets)" >&2
  else
    rm -rf "$tmp"
  fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The config as it is, but with its data_dir in the temporary directory; its template travels with it
# (relative paths are relative to the config file).
cp -r "$here/templates" "$tmp/templates"
sed 's|^\[node\]$|[node]\ndata_dir = "data"|' "$here/lj_melt.toml" >"$tmp/lj_melt.toml"

"$bin/tessera-node" --config "$tmp/lj_melt.toml" --address-file "$tmp/address" >"$tmp/node.log" 2>&1 &
node=$!
# The address file appears, whole, once the node listens: 30 s at most.
for _ in $(seq 300); do
  [[ -s $tmp/address ]] && break
  kill -0 "$node" 2>/dev/null || { echo "run.sh: tessera-node exited at start:" >&2; cat "$tmp/node.log" >&2; exit 1; }
  sleep 0.1
done
[[ -s $tmp/address ]] || { echo "run.sh: tessera-node did not listen within 30 s" >&2; exit 1; }
address=$(cat "$tmp/address")

# Push every row and wait for its result: 5 minutes at most for the whole sweep (each set about 1 s of
# 2 cores; 120 s at most, lj_melt.toml's timeout). Progress goes to stderr, the results' CSV to stdout.
# In the background and waited for, so that a signal to this script ends it at once (timeout runs its
# command in a process group of its own, out of reach of the terminal's Ctrl-C).
timeout --kill-after=10 300 "$bin/tessera" --scheduler "$address" stream push --simulation lj_melt \
  --input "$here/params.csv" --quiet >"$tmp/stream.log" &
client=$!
wait "$client"
client=
cat "$tmp/stream.log" >&2
stream=$(sed -n 's/^stream \([0-9]*\):.*/\1/p' "$tmp/stream.log" | head -n 1)
[[ -n $stream ]] || { echo "run.sh: no stream id in the output of stream push" >&2; exit 1; }
timeout --kill-after=10 60 "$bin/tessera" --scheduler "$address" results --stream "$stream" --format csv

stop_node || { echo "run.sh: tessera-node did not stop cleanly (exit $?): see $tmp/node.log" >&2; exit 1; }
# Failed sets are in the CSV (status, error); the script fails with them, keeping their directories.
grep -q ' (0 failed)$' "$tmp/stream.log" || { echo "run.sh: some parameter sets failed" >&2; exit 1; }
