#!/usr/bin/python3
"""Python code on the workers, Tessera and its peers side by side in one run (issue 43's figures).

One JSON object per measurement on stdout (progress on stderr):

  python_tasks / tessera            client.map(lambda x: x, range(N)) on LocalCluster(1 worker x 2 threads)
  python_tasks / dask-threaded      dask.compute of N dask.delayed(lambda) calls, scheduler="threads", 2 threads
  python_tasks / dask-distributed   client.map(lambda, range(n), pure=False), LocalCluster(1 worker x 2 threads)
  python_stream / tessera           N trivial sets of a Python simulation class, every result durable
  python_sims / tessera             S sets of a 20 ms Python simulation on 4 slots (LocalCluster 1 x 4)
  python_sims / multiprocessing     the same function through multiprocessing.Pool(4).map
  python_latency / tessera-remote   submit(lambda) + result through a real tessera-node: p50/p99 us
  python_latency / registered-python-remote  the same with a Python function the node registered (py_square)
  python_latency / compiled-remote  the same with a compiled function of the node (the test plugin's "square");
                                    the three are called in turn, one of each per round

"seconds" is the median of --repeat timed runs after a warm-up; "rate" is per second. Timings cover
submission, execution and gathering, not cluster start-up. The peers need Debian's python3-dask and
python3-distributed (TESSERA_WITH_PEERS=1 scripts/setup.sh); a peer that is missing is reported as such.

  PYTHONPATH=build/python /usr/bin/python3 bench/compare/python_tasks.py [--tasks 200000] [--repeat 3]
      [--sims-only | --latency-only]
"""
import argparse
import json
import multiprocessing
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import tessera

HERE = pathlib.Path(__file__).resolve().parent
SIM_SECONDS = 0.02


def log(message):
    print(f"[python_tasks] {message}", file=sys.stderr, flush=True)


def emit(**record):
    print(json.dumps(record), flush=True)


RUNS = []  # every timed run's seconds, of the last call to timed()


def timed(run, repeat):
    run()  # warm-up: interpreters started, caches filled
    RUNS.clear()
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        RUNS.append(time.perf_counter() - start)
    return statistics.median(RUNS)


def sleepy(x):
    time.sleep(SIM_SECONDS)
    return x


def tessera_tasks(n, repeat):
    with tessera.LocalCluster(workers=1, threads_per_worker=2) as cluster, tessera.Client(cluster) as client:
        def run():
            results = client.gather(client.map(lambda x: x, range(n)))
            assert results[-1] == n - 1
        seconds = timed(run, repeat)
    emit(bench="python_tasks", system="tessera", tasks=n, seconds=seconds, rate=n / seconds)


def dask_threaded(n, repeat):
    import dask
    noop = dask.delayed(lambda x: x, pure=False)

    def run():
        results = dask.compute(*[noop(i) for i in range(n)], scheduler="threads", num_workers=2)
        assert results[-1] == n - 1
    seconds = timed(run, repeat)
    emit(bench="python_tasks", system="dask-threaded", tasks=n, seconds=seconds, rate=n / seconds)


def dask_distributed(n, repeat):
    import logging
    from distributed import Client, LocalCluster
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        def run():
            results = client.gather(client.map(lambda x: x, range(n), pure=False))
            assert results[-1] == n - 1
        seconds = timed(run, repeat)
    emit(bench="python_tasks", system="dask-distributed", tasks=n, seconds=seconds, rate=n / seconds)


SIMULATIONS = '''
import time
import tessera

@tessera.simulation("bench_trivial")
class Trivial:
    def __init__(self, config):
        pass
    def run(self, p):
        return p[0]

@tessera.simulation("bench_sleepy")
class Sleepy:
    def __init__(self, config):
        self.seconds = config.get("seconds", 0.02)
    def run(self, p):
        time.sleep(self.seconds)
        return p[0]
'''


def tessera_streams(module, sets, sims, repeat):
    import numpy as np
    if sets > 0:
        with tessera.LocalCluster(workers=1, threads_per_worker=2, python=[module]) as cluster, \
                tessera.Client(cluster) as client:
            rows = np.arange(float(sets)).reshape(-1, 1)

            def run():
                stream = client.stream("bench_trivial", max_in_flight=sets)
                stream.push_many(rows)
                stream.close()
                assert stream.wait(timeout=600)
            seconds = timed(run, repeat)
        emit(bench="python_stream", system="tessera", sets=sets, seconds=seconds, rate=sets / seconds)
    with tessera.LocalCluster(workers=1, threads_per_worker=4, python=[module]) as cluster, \
            tessera.Client(cluster) as client:
        rows = np.arange(float(sims)).reshape(-1, 1)

        def run():
            stream = client.stream("bench_sleepy", max_in_flight=sims, pool_size=4,
                                   config={"seconds": SIM_SECONDS})
            stream.push_many(rows)
            stream.close()
            assert stream.wait(timeout=600)
        seconds = timed(run, repeat)
    floor = sims * SIM_SECONDS / 4
    emit(bench="python_sims", system="tessera", sets=sims, seconds=seconds, floor=floor,
         over_floor=seconds / floor - 1, runs=[round(t, 3) for t in RUNS])


def multiprocessing_sims(sims, repeat):
    with multiprocessing.get_context("fork").Pool(4) as pool:
        seconds = timed(lambda: pool.map(sleepy, range(sims), chunksize=1), repeat)
    floor = sims * SIM_SECONDS / 4
    emit(bench="python_sims", system="multiprocessing", sets=sims, seconds=seconds, floor=floor,
         over_floor=seconds / floor - 1, runs=[round(t, 3) for t in RUNS])


REMOTE_MODULE = '''
import tessera

@tessera.task
def py_square(x):
    return x * x
'''


def remote_latency(node_binary, plugin, calls):
    """A lambda from this client, the node's registered Python py_square and its compiled square, called
    in turn (one of each per round, so drift touches all three alike)."""
    with tempfile.TemporaryDirectory() as directory:
        config = pathlib.Path(directory) / "node.toml"
        (pathlib.Path(directory) / "bench_remote.py").write_text(REMOTE_MODULE)
        config.write_text("[node]\nname = \"bench\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
                          f"[worker]\nworkers = 1\nthreads_per_worker = 2\n[plugins]\npaths = [\"{plugin}\"]\n"
                          "python = [\"bench_remote.py\"]\n")
        node = subprocess.Popen([node_binary, "--config", str(config)], stdout=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)
        try:
            line = node.stdout.readline()
            if "tcp://" not in line:
                raise RuntimeError(f"tessera-node did not start: {line!r}")
            endpoint = line[line.index("tcp://"):].split()[0].rstrip(";")
            with tessera.Client(endpoint) as client:
                systems = (("tessera-remote", lambda x: x * x), ("registered-python-remote", "py_square"),
                           ("compiled-remote", "square"))
                latencies = {system: [] for system, _ in systems}
                for i in range(200 + calls):
                    for system, function in systems:
                        start = time.perf_counter()
                        assert client.submit(function, i).result(timeout=30) == i * i
                        if i >= 200:  # the first 200 rounds warm up
                            latencies[system].append((time.perf_counter() - start) * 1e6)
                for system, measured in latencies.items():
                    measured.sort()
                    emit(bench="python_latency", system=system, calls=calls,
                         p50_us=measured[len(measured) // 2], p99_us=measured[int(len(measured) * 0.99)])
        finally:
            node.send_signal(signal.SIGTERM)
            node.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--dask-tasks", type=int, default=50_000)
    parser.add_argument("--distributed-tasks", type=int, default=5_000)
    parser.add_argument("--sets", type=int, default=200_000)
    parser.add_argument("--sims", type=int, default=2_000)
    parser.add_argument("--calls", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--node", default=os.environ.get("TESSERA_NODE_BINARY", "build/bin/tessera-node"))
    parser.add_argument("--plugin", default=os.environ.get("TESSERA_TEST_PLUGIN", "build/lib/libtessera_test_plugin.so"))
    parser.add_argument("--latency-only", action="store_true", help="only the remote submit + result latency")
    parser.add_argument("--sims-only", action="store_true",
                        help="only the 20 ms simulation floor, beside multiprocessing.Pool")
    args = parser.parse_args()
    log(f"tessera {tessera.__version__}, Python {sys.version.split()[0]}")
    if args.latency_only:
        remote_latency(os.path.abspath(args.node), os.path.abspath(args.plugin), args.calls)
        return 0
    if args.sims_only:
        with tempfile.TemporaryDirectory() as directory:
            module = pathlib.Path(directory) / "bench_simulations.py"
            module.write_text(SIMULATIONS)
            tessera_streams(str(module), 0, args.sims, args.repeat)
        multiprocessing_sims(args.sims, args.repeat)
        return 0
    tessera_tasks(args.tasks, args.repeat)
    for name, run, n in (("dask-threaded", dask_threaded, args.dask_tasks),
                         ("dask-distributed", dask_distributed, args.distributed_tasks)):
        try:
            run(n, args.repeat)
        except ImportError as missing:
            emit(bench="python_tasks", system=name, missing=str(missing))
    with tempfile.TemporaryDirectory() as directory:
        module = pathlib.Path(directory) / "bench_simulations.py"
        module.write_text(SIMULATIONS)
        tessera_streams(str(module), args.sets, args.sims, args.repeat)
    multiprocessing_sims(args.sims, args.repeat)
    if os.access(args.node, os.X_OK) and os.path.exists(args.plugin):
        remote_latency(os.path.abspath(args.node), os.path.abspath(args.plugin), args.calls)
    else:
        log(f"no {args.node} or {args.plugin}: the remote latency is left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
