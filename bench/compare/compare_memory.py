#!/usr/bin/python3
"""Runs the memory-bounded workload on Tessera and on Dask distributed with the same memory limit, in one go,
with the spill speed beside RocksDB's own put/get, and compares them.

  tessera-bench-memory --mode all --memory-limit-mib L --times T      (bench/memory_bench.cpp)
  /usr/bin/python3 bench/compare/dask_memory.py --memory-limit-mib L --times T

Everything goes to stdout as markdown (raw JSON lines, then the table), ready for bench/RESULTS.md.

  /usr/bin/python3 bench/compare/compare_memory.py [--build-dir build] [--memory-limit-mib 256] [--times 4]
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def run(command, timeout):
    print(f"[compare_memory] {' '.join(command)}", file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not records:
        print(done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"{command[0]} failed (exit {done.returncode})")
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    parser.add_argument("--memory-limit-mib", type=int, default=256)
    parser.add_argument("--times", type=int, default=4)
    parser.add_argument("--chunk-rows", type=int, default=8192)
    args = parser.parse_args()
    common = ["--memory-limit-mib", str(args.memory_limit_mib), "--times", str(args.times),
              "--chunk-rows", str(args.chunk_rows)]
    tessera = run([str(Path(args.build_dir) / "bin" / "tessera-bench-memory"), "--mode", "all"] + common, 1200)
    dask = run(["/usr/bin/python3", str(HERE / "dask_memory.py")] + common, 1200)
    print("```")
    for record in tessera + dask:
        print(json.dumps(record))
    print("```\n")
    disk = next(r for r in tessera if r["bench"] == "spill_disk")
    ours = next(r for r in tessera if r["bench"] == "memory_workload")
    theirs = dask[0]
    print("| system | completed | time | peak RSS above start | bound (1.25 x limit) | within |")
    print("|---|---|---|---|---|---|")
    for r in (ours, theirs):
        within = "yes" if r.get("completed") and r["peak_rss_above_start_mib"] <= r["bound_mib"] else "no"
        print(f"| {r['system']} | {'yes' if r.get('completed') else 'no'} | {r['seconds']:.1f} s | "
              f"{r['peak_rss_above_start_mib']:.0f} MiB | {r['bound_mib']:.0f} MiB | {within} |")
    print(f"\nTessera / Dask time: {ours['seconds'] / theirs['seconds']:.2f}x; "
          f"spills {ours['spills']}, {ours['spilled_mb']:.0f} MB at {ours['spill_mb_per_s']:.0f} MB/s in the run.")
    print(f"\nDisk ({disk['value_mib']} MiB values): RocksDB put {disk['rocksdb_put_mb_per_s']:.0f} MB/s, "
          f"get {disk['rocksdb_get_mb_per_s']:.0f} MB/s; spill write {disk['spill_write_mb_per_s']:.0f} MB/s "
          f"({disk['write_fraction_of_rocksdb']:.2f} of put), read {disk['spill_read_mb_per_s']:.0f} MB/s "
          f"({disk['read_fraction_of_rocksdb']:.2f} of get).")


if __name__ == "__main__":
    sys.exit(main())
