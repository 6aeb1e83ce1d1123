#!/usr/bin/python3
"""Dask peer measurements for Tessera's task benchmarks.

Prints one JSON object per measurement on stdout (progress goes to stderr):

  tasks_map / map   / dask-threaded     N no-op tasks via dask.delayed + dask.compute(scheduler="threads"), 2 threads
  tasks_map / graph / dask-threaded     N no-op tasks as a raw graph dict via dask.threaded.get, 2 threads
  tasks_map / chain / dask-threaded     a chain of C dask.delayed calls, each on the previous one's result, 2 threads
  tasks_map / tree  / dask-threaded     N leaves reduced pairwise (about 2N tasks), 2 threads
  tasks_map / map   / dask-distributed  client.map(noop, range(N), pure=False) on LocalCluster(2 procs x 1 thread)
  tasks_map / map   / dask-cluster      client.map(noop) on LocalCluster(2 procs x 2 threads), as tessera-bench-remote
  latency   /       / dask-cluster      one client.submit(noop).result(), p50/p99 (us), same cluster
  chunk_transfer /  / dask-cluster      8 MiB numpy chunks made on worker A (workers=[A]) and read on worker B
  sims      / map   / dask-distributed-map  500 simulations (sleep U(0, 0.05) s) via client.map, LocalCluster(10 x 4)
  sims      / bag   / dask-bag              the same through dask.bag.from_sequence(npartitions=100) on that cluster

"seconds" is the median of --repeat timed runs after one untimed warm-up run; "rate" is tasks/s.
Timings cover graph construction + submission + execution + gathering, not cluster start-up.
The sims records also carry "ideal_seconds": the expected total sleep spread over 40 threads
(500 * 0.025 / 40 = 0.3125 s).

Run (Debian's python, Dask 2022.12):
  /usr/bin/python3 bench/compare/dask_tasks.py [--tasks 100000] [--distributed-tasks 5000] [--repeat 3]
  /usr/bin/python3 bench/compare/dask_tasks.py --tasks 2000 --distributed-tasks 200 --repeat 1   # quick check
"""
import argparse
import json
import logging
import random
import statistics
import sys
import time

import dask
import dask.bag
import dask.threaded

SIM_TASKS, SIM_WORKERS, SIM_THREADS, SIM_MAX_SLEEP = 500, 10, 4, 0.05


def noop(x):
    return x


def add(a, b):
    return a + b


def costly_simulation(p):
    time.sleep(random.random() * SIM_MAX_SLEEP)
    return sum(p)


def timed(fn, repeat, before=lambda: None):
    """Run fn once untimed, then `repeat` times timed; returns (median seconds, all timings).
    `before` runs untimed ahead of every call."""
    before()
    fn()
    runs = []
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs


def emit(bench, mode, impl, tasks, workers, threads, seconds, runs, **extra):
    record = {"bench": bench, "mode": mode, "impl": impl, "peer": "dask", "tasks": tasks,
              "workers": workers, "threads": threads, "seconds": round(seconds, 6),
              "rate": round(tasks / seconds, 1), "runs": [round(r, 6) for r in runs],
              "dask_version": dask.__version__, **extra}
    print(json.dumps(record), flush=True)


def log(msg):
    print(f"[dask_tasks] {msg}", file=sys.stderr, flush=True)


def bench_threaded(n, chain_tasks, repeat):
    def delayed_map():
        tasks = [dask.delayed(noop)(i) for i in range(n)]
        dask.compute(tasks, scheduler="threads", num_workers=2)

    def raw_graph():
        dsk = {("noop", i): (noop, i) for i in range(n)}
        dask.threaded.get(dsk, list(dsk), num_workers=2)

    def chain():
        x = dask.delayed(noop)(0)
        for _ in range(1, chain_tasks):
            x = dask.delayed(add)(x, 1)
        if dask.compute(x, scheduler="threads", num_workers=2)[0] != chain_tasks - 1:
            raise RuntimeError("chain: wrong result")

    tree_tasks = [0]

    def tree():
        level = [dask.delayed(noop)(i) for i in range(n)]
        tasks = n
        while len(level) > 1:
            nxt = [dask.delayed(add)(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            tasks += len(level) // 2
            level = nxt
        tree_tasks[0] = tasks
        if dask.compute(level[0], scheduler="threads", num_workers=2)[0] != n * (n - 1) // 2:
            raise RuntimeError("tree: wrong result")

    log(f"threaded delayed map, {n} tasks")
    emit("tasks_map", "map", "dask-threaded", n, 1, 2, *timed(delayed_map, repeat))
    log(f"threaded raw graph, {n} tasks")
    emit("tasks_map", "graph", "dask-threaded", n, 1, 2, *timed(raw_graph, repeat))
    log(f"threaded chain, {chain_tasks} dependent tasks")
    emit("tasks_map", "chain", "dask-threaded", chain_tasks, 1, 2, *timed(chain, repeat))
    log(f"threaded tree, {n} leaves")
    seconds, runs = timed(tree, repeat)
    emit("tasks_map", "tree", "dask-threaded", tree_tasks[0], 1, 2, seconds, runs)


def local_cluster(n_workers, threads):
    from distributed import LocalCluster
    return LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True,
                        silence_logs=logging.ERROR, dashboard_address=None)


def settled(client, timeout=30.0):
    """A `before` hook: wait until the scheduler has forgotten the previous run's tasks.
    Otherwise a rerun of a deterministic-key graph (dask.bag) can pick up results still held
    in worker memory, and the release traffic of the last run leaks into the next timing."""
    def hook():
        deadline = time.monotonic() + timeout
        while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
            if time.monotonic() > deadline:
                raise RuntimeError("scheduler still holds tasks from the previous run")
            time.sleep(0.01)
    return hook


def bench_distributed(n, repeat):
    from distributed import Client

    log(f"distributed map, {n} tasks, 2 processes x 1 thread")
    with local_cluster(2, 1) as cluster, Client(cluster) as client:
        def run():
            client.gather(client.map(noop, range(n), pure=False))
        emit("tasks_map", "map", "dask-distributed", n, 2, 1, *timed(run, repeat, settled(client)))


CHUNK_DOUBLES = 1 << 20  # 8 MiB, as Tessera's stamped_chunk


def make_chunk(i):
    import numpy as np
    chunk = np.ones(CHUNK_DOUBLES)
    chunk[1] = i
    return chunk


def read_chunk(chunk):
    return float(chunk.sum())


def bench_cluster(n, repeat, chunks, latency_samples):
    """The peers of tessera-bench-remote: a scheduler and 2 worker processes x 2 threads."""
    from distributed import Client, wait

    log(f"cluster map, {n} tasks, 2 processes x 2 threads")
    with local_cluster(2, 2) as cluster, Client(cluster) as client:
        def run():
            client.gather(client.map(noop, range(n), pure=False))
        emit("tasks_map", "map", "dask-cluster", n, 2, 2, *timed(run, repeat, settled(client)))

        log(f"cluster latency, {latency_samples} samples")
        client.submit(noop, -1, pure=False).result()
        latencies = []
        for i in range(latency_samples):
            t0 = time.perf_counter()
            client.submit(noop, i, pure=False).result()
            latencies.append((time.perf_counter() - t0) * 1e6)
        latencies.sort()
        print(json.dumps({"bench": "latency", "impl": "dask-cluster", "peer": "dask", "samples": latency_samples,
                          "p50_us": round(latencies[len(latencies) // 2], 1),
                          "p99_us": round(latencies[len(latencies) * 99 // 100], 1),
                          "dask_version": dask.__version__}), flush=True)

        log(f"cluster chunk transfer, {chunks} chunks of 8 MiB, worker A -> worker B")
        a, b = sorted(client.scheduler_info()["workers"])[:2]
        runs = []
        for _ in range(repeat + 1):
            # Fresh chunks each run: B keeps a replica of what it read, so rereading old ones moves nothing.
            made = client.map(make_chunk, range(chunks), workers=[a], pure=False)
            wait(made)
            t0 = time.perf_counter()
            reads = client.map(read_chunk, made, workers=[b], pure=False)
            client.gather(reads)
            runs.append(time.perf_counter() - t0)
            del reads, made
            settled(client)()
        runs = runs[1:]  # the first run warms up
        seconds = statistics.median(runs)
        crossed = chunks * CHUNK_DOUBLES * 8
        print(json.dumps({"bench": "chunk_transfer", "impl": "dask-cluster", "peer": "dask", "chunk_bytes": CHUNK_DOUBLES * 8,
                          "crossed_bytes": crossed, "seconds": round(seconds, 6),
                          "gib_per_s": round(crossed / seconds / (1 << 30), 3), "runs": [round(r, 6) for r in runs],
                          "dask_version": dask.__version__}), flush=True)


def bench_sims(repeat):
    import numpy as np
    from distributed import Client

    np.random.seed(0)
    params = list(np.random.random((SIM_TASKS, 4)))
    ideal = SIM_TASKS * SIM_MAX_SLEEP / 2 / (SIM_WORKERS * SIM_THREADS)
    log(f"sims, {SIM_TASKS} tasks, {SIM_WORKERS} processes x {SIM_THREADS} threads")
    with local_cluster(SIM_WORKERS, SIM_THREADS) as cluster, Client(cluster) as client:
        def via_map():
            client.gather(client.map(costly_simulation, params, pure=False))

        def via_bag():
            dask.bag.from_sequence(params, npartitions=100).map(costly_simulation).compute()

        for mode, impl, fn in (("map", "dask-distributed-map", via_map), ("bag", "dask-bag", via_bag)):
            emit("sims", mode, impl, SIM_TASKS, SIM_WORKERS, SIM_THREADS, *timed(fn, repeat, settled(client)),
                 ideal_seconds=ideal, max_sleep=SIM_MAX_SLEEP)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=100_000, help="tasks for the threaded-scheduler runs")
    ap.add_argument("--chain-tasks", type=int, default=100_000, help="dependent tasks in the threaded chain run")
    ap.add_argument("--distributed-tasks", type=int, default=5_000, help="tasks for the distributed map run")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions (after one warm-up)")
    ap.add_argument("--cluster-tasks", type=int, default=5_000, help="tasks for the 2 x 2 cluster map run")
    ap.add_argument("--chunks", type=int, default=64, help="8 MiB chunks moved between workers")
    ap.add_argument("--latency-samples", type=int, default=500, help="submit + result round trips timed")
    ap.add_argument("--only", choices=("threaded", "distributed", "cluster", "sims"), action="append",
                    help="run only these groups (repeatable); default all")
    args = ap.parse_args()
    groups = args.only or ("threaded", "distributed", "cluster", "sims")

    logging.getLogger("distributed").setLevel(logging.ERROR)
    if "threaded" in groups:
        bench_threaded(args.tasks, args.chain_tasks, args.repeat)
    if "distributed" in groups:
        bench_distributed(args.distributed_tasks, args.repeat)
    if "cluster" in groups:
        bench_cluster(args.cluster_tasks, args.repeat, args.chunks, args.latency_samples)
    if "sims" in groups:
        bench_sims(args.repeat)


if __name__ == "__main__":
    main()
