#!/usr/bin/python3
"""Runs the memory-bounded workload on Tessera and on Dask distributed with the same memory limit, in one go,
with the spill speed beside RocksDB's own put/get, and compares them.

  tessera-bench-memory --mode workload --memory-limit-mib L --times T --chunk-rows R --cols C
  /usr/bin/python3 bench/compare/dask_memory.py (the same flags)
for each workload in WORKLOADS, and the disk once for each of DISK_VALUE_MIB
(tessera-bench-memory --mode disk --value-mib V).

Everything goes to stdout as markdown (raw JSON lines, then the table), ready for bench/RESULTS.md.

  /usr/bin/python3 bench/compare/compare_memory.py [--build-dir build] [--only INDEX]
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


# The workloads compared: (limit MiB, times, chunk rows, cols). The first is issue 14's (4 MiB chunks);
# the second issue 44's (x and y of 1 GiB in 64 MiB chunks, 131072 x 1000, under a 1 GiB limit).
WORKLOADS = [(256, 4, 8192, 64), (1024, 1, 8192, 1000)]
# The value sizes the disk is measured with: the two workloads' chunk sizes.
DISK_VALUE_MIB = [4, 64]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    parser.add_argument("--only", type=int, choices=range(len(WORKLOADS)), help="run one workload (its index)")
    args = parser.parse_args()
    binary = str(Path(args.build_dir) / "bin" / "tessera-bench-memory")
    disks = [run([binary, "--mode", "disk", "--value-mib", str(mib)], 1200)[0] for mib in DISK_VALUE_MIB]
    rows = []
    records = list(disks)
    for index, (limit, times, chunk_rows, cols) in enumerate(WORKLOADS):
        if args.only is not None and index != args.only:
            continue
        common = ["--memory-limit-mib", str(limit), "--times", str(times), "--chunk-rows", str(chunk_rows),
                  "--cols", str(cols)]
        ours = run([binary, "--mode", "workload"] + common, 1200)[0]
        theirs = run(["/usr/bin/python3", str(HERE / "dask_memory.py")] + common, 1200)[0]
        records += [ours, theirs]
        rows.append((limit, chunk_rows * cols * 8 / 2**20, ours, theirs))
    print("```")
    for record in records:
        print(json.dumps(record))
    print("```\n")
    print("| limit | chunk | system | completed | time | peak RSS above start | bound (1.25 x limit) | within |")
    print("|---|---|---|---|---|---|---|---|")
    for limit, chunk_mib, ours, theirs in rows:
        for r in (ours, theirs):
            within = "yes" if r.get("completed") and r["peak_rss_above_start_mib"] <= r["bound_mib"] else "no"
            seconds = f"{r['seconds']:.1f} s" if r.get("completed") else "-"
            print(f"| {limit} MiB | {chunk_mib:.1f} MiB | {r['system']} | {'yes' if r.get('completed') else 'no'} | "
                  f"{seconds} | {r['peak_rss_above_start_mib']:.0f} MiB | {r['bound_mib']:.0f} MiB | {within} |")
    for limit, chunk_mib, ours, theirs in rows:
        ratio = f"{ours['seconds'] / theirs['seconds']:.2f}x" if theirs.get("completed") else "Dask did not complete"
        print(f"\n{limit} MiB, {chunk_mib:.1f} MiB chunks: Tessera / Dask time {ratio}; spills {ours['spills']}, "
              f"{ours['spilled_mb']:.0f} MB at {ours['spill_mb_per_s']:.0f} MB/s, read back at "
              f"{ours['unspill_mb_per_s']:.0f} MB/s in the run.")
    for disk in disks:
        print(f"\nDisk ({disk['value_mib']} MiB values): RocksDB put {disk['rocksdb_put_mb_per_s']:.0f} MB/s, "
              f"get {disk['rocksdb_get_mb_per_s']:.0f} MB/s; spill write {disk['spill_write_mb_per_s']:.0f} MB/s "
              f"({disk['write_fraction_of_rocksdb']:.2f} of put), read {disk['spill_read_mb_per_s']:.0f} MB/s "
              f"({disk['read_fraction_of_rocksdb']:.2f} of get).")


if __name__ == "__main__":
    sys.exit(main())
