#!/usr/bin/env python3
"""Parsl's side of compare_tasks.py: no-op app throughput and round-trip latency on this host.

Run with the interpreter of bench/.venv (Parsl from PyPI, see ../shared/BENCHMARKS.md):

  bench/.venv/bin/python bench/compare/parsl_tasks.py [--tasks 5000] [--workers 2] [--samples 500] [--repeat 3]

Two executors, each its own run of Parsl:
  htex     HighThroughputExecutor: an interchange process and a pool of --workers worker processes on
           this host (the executor Parsl recommends for one node and for clusters)
  threads  ThreadPoolExecutor with --workers threads in this process

Prints one JSON object per line:
  {"bench": "tasks_map", "impl": "parsl-htex", ...}  N no-op python_apps submitted at once, then every
                                                     result (tasks/s)
  {"bench": "latency", "impl": "parsl-htex", ...}    one no-op app submitted and waited for, one at a time
and the same with "parsl-threads". Each timed run follows one warm-up; the figure reported is the median
of --repeat runs.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def log(msg):
    print(f"[parsl_tasks] {msg}", file=sys.stderr, flush=True)


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def executor(kind, workers):
    if kind == "threads":
        from parsl.executors import ThreadPoolExecutor
        return ThreadPoolExecutor(label="threads", max_threads=workers)
    from parsl.executors import HighThroughputExecutor
    from parsl.providers import LocalProvider
    return HighThroughputExecutor(label="htex", address="127.0.0.1", max_workers_per_node=workers,
                                  cores_per_worker=1,
                                  provider=LocalProvider(init_blocks=1, min_blocks=1, max_blocks=1))


def measure(kind, args, parsl):
    run_dir = tempfile.mkdtemp(prefix="parsl-bench-")
    config = parsl.config.Config(executors=[executor(kind, args.workers)], run_dir=run_dir,
                                 initialize_logging=False, usage_tracking=0)
    dfk = parsl.load(config)

    @parsl.python_app
    def noop(x):
        return x

    def map_once():
        start = time.perf_counter()
        out = [f.result() for f in [noop(i) for i in range(args.tasks)]]
        seconds = time.perf_counter() - start
        assert out[-1] == args.tasks - 1
        return seconds

    try:
        map_once()  # warm-up: the pool started, the function shipped
        runs = [map_once() for _ in range(args.repeat)]
        seconds = statistics.median(runs)
        common = {"peer": "parsl", "parsl_version": parsl.__version__, "executor": kind, "workers": args.workers}
        print(json.dumps({"bench": "tasks_map", "mode": "map", "impl": f"parsl-{kind}", "tasks": args.tasks,
                          "seconds": seconds, "rate": args.tasks / seconds, "runs": runs, **common}), flush=True)
        for i in range(100):  # warm-up
            noop(i).result()
        trips = []
        for i in range(args.samples):
            start = time.perf_counter()
            noop(i).result()
            trips.append((time.perf_counter() - start) * 1e6)
        trips.sort()
        print(json.dumps({"bench": "latency", "impl": f"parsl-{kind}", "samples": len(trips),
                          "p50_us": percentile(trips, 0.5), "p99_us": percentile(trips, 0.99), **common}),
              flush=True)
    finally:
        dfk.cleanup()
        parsl.clear()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=5_000, help="no-op apps per throughput run")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (htex) or threads")
    ap.add_argument("--samples", type=int, default=500, help="round trips timed one at a time")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs after one warm-up")
    ap.add_argument("--executors", default="htex,threads", help="comma-separated: htex, threads")
    args = ap.parse_args()
    # Parsl starts its interchange and worker pool by their script names (interchange.py,
    # process_worker_pool.py), installed beside this interpreter: the venv's bin/ must be on PATH.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    try:
        import parsl
        import parsl.config
    except ImportError as e:
        log(f"error: Parsl is not importable ({e}): make bench/.venv as ../shared/BENCHMARKS.md says")
        return 2
    for kind in args.executors.split(","):
        if kind not in ("htex", "threads"):
            log(f"error: unknown executor {kind!r} (htex, threads)")
            return 2
        measure(kind, args, parsl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
