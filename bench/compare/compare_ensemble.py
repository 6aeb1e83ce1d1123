#!/usr/bin/python3
"""Supervised ensembles side by side: Tessera's stream under thread and process isolation against
Python's multiprocessing.Pool (the process pool most ensemble tools build on), in one run.

  floor:   2,000 sets sleeping 20 ms on 4 slots (floor 10 s); overhead = seconds / floor - 1
           (Ray Tune publishes +14% for 10,000 one-second trials on 16 CPUs)
  trivial: 200,000 sets that cost nothing on 2 slots; sets/s (process isolation target >= 100k/s)
  gest:    10,000 sets of a Python simulation proposed by libEnsemble's gest-api UniformSample, Tessera
           against libEnsemble 1.6.1 running the same generator (ensemble_gest.py, by bench/.venv's
           Python; left out with --no-gest or without bench/.venv)

Tessera: <build-dir>/bin/tessera-bench-ensemble. Pool: imap_unordered, chunksize 1 for the floor (each
set is a unit of work, as a supervised trial is) and 1,000 for the trivial sets (its fastest).
Markdown to stdout, ready for bench/RESULTS.md.

  /usr/bin/python3 bench/compare/compare_ensemble.py [--build-dir build] [--repeat 1] [--no-gest]
"""
import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import time
from pathlib import Path


def sleeper(x):
    time.sleep(0.02)
    return x


def increment(x):
    return x + 1


def pool_seconds(function, sets, slots, chunksize):
    with multiprocessing.get_context("fork").Pool(slots) as pool:
        start = time.perf_counter()
        for _ in pool.imap_unordered(function, range(sets), chunksize=chunksize):
            pass
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-gest", action="store_true", help="leave out the gest-api ensemble against libEnsemble")
    args = parser.parse_args()
    bench = Path(args.build_dir) / "bin" / "tessera-bench-ensemble"
    rows = []
    for mode, sets, slots in (("floor", 2000, 4), ("trivial", 200000, 2)):
        out = subprocess.run([str(bench), "--mode", mode, "--sets", str(sets), "--slots", str(slots),
                              "--repeat", str(args.repeat)], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            print(line)
            rows.append(json.loads(line))
        function, chunksize = (sleeper, 1) if mode == "floor" else (increment, 1000)
        seconds = statistics.median(pool_seconds(function, sets, slots, chunksize) for _ in range(args.repeat))
        peer = {"bench": "ensemble", "mode": mode, "isolation": "multiprocessing.Pool", "sets": sets,
                "slots": slots, "seconds": seconds}
        if mode == "floor":
            floor = sets * 0.02 / slots
            peer.update(floor_seconds=floor, overhead_percent=(seconds / floor - 1) * 100)
        else:
            peer["sets_per_second"] = sets / seconds
        print(json.dumps(peer))
        rows.append(peer)
    venv_python = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "python"
    if not args.no_gest and venv_python.exists():
        import os
        env = dict(os.environ, PYTHONPATH=str(Path(args.build_dir).resolve() / "python"))
        out = subprocess.run([str(venv_python), str(Path(__file__).with_name("ensemble_gest.py")), "--sets", "10000",
                              "--slots", "2", "--repeat", str(args.repeat)], capture_output=True, text=True, env=env,
                             timeout=1800).stdout
        for line in out.splitlines():
            print(line)
    elif not args.no_gest:
        print(f"(no {venv_python}: the gest-api ensemble against libEnsemble is left out)", file=sys.stderr)
    print()
    print("| mode | runner | seconds | overhead vs floor | sets/s |")
    print("|---|---|---|---|---|")
    for r in rows:
        over = f"{r['overhead_percent']:+.1f}%" if "overhead_percent" in r else ""
        rate = f"{r['sets_per_second']:,.0f}" if "sets_per_second" in r else ""
        print(f"| {r['mode']} | {r['isolation']} | {r['seconds']:.3f} | {over} | {rate} |")


if __name__ == "__main__":
    sys.exit(main())
