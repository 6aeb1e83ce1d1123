#!/usr/bin/env python3
"""Ray's side of compare_tasks.py: no-op task throughput and round-trip latencies on a local Ray.

Run with the interpreter of bench/.venv (Ray from PyPI, see ../shared/BENCHMARKS.md):

  bench/.venv/bin/python bench/compare/ray_tasks.py [--tasks 20000] [--cpus 2] [--samples 2000] [--repeat 3]

Prints one JSON object per line:
  {"bench": "tasks_map", "impl": "ray", ...}     N no-op remote tasks submitted at once, then ray.get (tasks/s)
  {"bench": "latency", "impl": "ray-task", ...}  one tiny task submitted and waited for, one at a time
  {"bench": "latency", "impl": "ray-actor", ...} one call on an actor (its own worker process), one at a time
Each timed run follows one warm-up; the figure reported is the median of --repeat runs.
"""
import argparse
import json
import statistics
import sys
import time


def log(msg):
    print(f"[ray_tasks] {msg}", file=sys.stderr, flush=True)


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=20_000, help="no-op tasks per throughput run")
    ap.add_argument("--cpus", type=int, default=2, help="num_cpus given to ray.init")
    ap.add_argument("--samples", type=int, default=2000, help="round trips timed one at a time")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs after one warm-up")
    args = ap.parse_args()
    try:
        import ray
    except ImportError as e:
        log(f"error: Ray is not importable ({e}): make bench/.venv as ../shared/BENCHMARKS.md says")
        return 2

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")

    @ray.remote
    def noop(x):
        return x

    @ray.remote
    class Echo:
        def call(self, x):
            return x

    def map_once():
        start = time.perf_counter()
        out = ray.get([noop.remote(i) for i in range(args.tasks)])
        seconds = time.perf_counter() - start
        assert out[-1] == args.tasks - 1
        return seconds

    map_once()  # warm-up: workers started, functions exported
    runs = [map_once() for _ in range(args.repeat)]
    seconds = statistics.median(runs)
    common = {"peer": "ray", "ray_version": ray.__version__, "workers": 1, "threads": args.cpus}
    print(json.dumps({"bench": "tasks_map", "mode": "map", "impl": "ray", "tasks": args.tasks,
                      "seconds": seconds, "rate": args.tasks / seconds, "runs": runs, **common}), flush=True)

    def latencies(call):
        for i in range(200):  # warm-up
            call(i)
        out = []
        for i in range(args.samples):
            start = time.perf_counter()
            call(i)
            out.append((time.perf_counter() - start) * 1e6)
        out.sort()
        return out

    task = latencies(lambda i: ray.get(noop.remote(i)))
    print(json.dumps({"bench": "latency", "impl": "ray-task", "samples": len(task),
                      "p50_us": percentile(task, 0.5), "p99_us": percentile(task, 0.99), **common}), flush=True)
    actor = Echo.remote()
    calls = latencies(lambda i: ray.get(actor.call.remote(i)))
    print(json.dumps({"bench": "latency", "impl": "ray-actor", "samples": len(calls),
                      "p50_us": percentile(calls, 0.5), "p99_us": percentile(calls, 0.99), **common}), flush=True)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
