#!/usr/bin/env python3
"""The Python client against the C++ client in one run (issue 18's figures):

1. push rate: push_many of a NumPy array into a trivial simulation, against tessera-bench-streams (the
   C++ client's push loop, the same trivial simulation, the same cluster shape and stream settings);
2. 1,000,000 stored results to a NumPy array (ResultQuery.to_numpy);
3. from_numpy + compute of an 800 MB array, against a plain NumPy copy of it.

    PYTHONPATH=build/python python3 bench/python/python_bench.py [--sets 1000000] [--repeat 3]

Prints one JSON line per measurement.
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import time

import numpy as np

import tessera

BUILD = pathlib.Path(__file__).resolve().parents[2] / "build"


def median_seconds(work, repeat):
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-in-flight", type=int, default=65536)
    parser.add_argument("--array-mb", type=int, default=800)
    args = parser.parse_args()

    # 1a. The C++ client's push rate: tessera-bench-streams' throughput run (1 worker x 2 threads).
    cpp = subprocess.run([str(BUILD / "bin/tessera-bench-streams"), "--sets", str(args.sets), "--repeat",
                          str(args.repeat), "--workers", "1", "--threads", "2", "--max-in-flight",
                          str(args.max_in_flight), "--memory-sets", "1", "--latency-samples", "1"],
                         capture_output=True, text=True, check=True)
    cpp_rate = next(json.loads(line) for line in cpp.stdout.splitlines() if '"bench":"stream"' in line)["rate"]

    # 1b. push_many from NumPy, the same shape of cluster and stream, a first run to warm up.
    plugins = [str(BUILD / "lib/libtessera_bench_plugin.so"), str(BUILD / "lib/libtessera_examples.so")]
    with tessera.LocalCluster(workers=1, threads_per_worker=2, plugins=plugins) as cluster:
        client = tessera.Client(cluster)
        sets = np.arange(args.sets, dtype=np.float64)
        last = {}

        def push_many():
            stream = client.stream("bench_echo", max_in_flight=args.max_in_flight)
            stream.push_many(sets)
            stream.close()
            assert stream.wait(timeout=600) and stream.completed == args.sets
            last["stream"] = stream

        push_many()
        seconds = median_seconds(push_many, args.repeat)
        rate = args.sets / seconds
        print(json.dumps({"bench": "python_push_many", "sets": args.sets, "seconds": round(seconds, 3),
                          "rate": int(rate), "cpp_push_rate": cpp_rate,
                          "fraction_of_cpp": round(rate / cpp_rate, 3)}), flush=True)

        # 1c. Four parameters a set (a 2-D array, one row per set), as a sweep pushes them.
        rows = np.random.default_rng(1).random((args.sets, 4))

        def push_rows():
            stream = client.stream("costly_simulation", max_in_flight=args.max_in_flight, config={"max_sleep": 0.0})
            stream.push_many(rows)
            stream.close()
            assert stream.wait(timeout=600) and stream.completed == args.sets

        seconds = median_seconds(push_rows, args.repeat)
        print(json.dumps({"bench": "python_push_many_rows", "sets": args.sets, "parameters": 4,
                          "seconds": round(seconds, 3), "rate": int(args.sets / seconds)}), flush=True)

        # 2. Stored results to NumPy: the last stream's million results, in id order.
        query = client.results(last["stream"])
        values = None

        def to_numpy():
            nonlocal values
            values = query.to_numpy()

        seconds = median_seconds(to_numpy, args.repeat)
        assert values.shape == (args.sets,) and values[-1] == args.sets - 1
        print(json.dumps({"bench": "python_results_to_numpy", "results": args.sets, "seconds": round(seconds, 3),
                          "rate": int(args.sets / seconds)}), flush=True)
        del rows

        # 3. from_numpy + compute against a plain copy.
        cols = 1000
        n_rows = args.array_mb * 1_000_000 // (8 * cols)
        a = np.random.default_rng(2).random((n_rows, cols))
        copy_seconds = median_seconds(lambda: a.copy(), args.repeat)
        out = {}

        def round_trip():
            out["b"] = tessera.from_numpy(a, chunks=(n_rows // 10, cols)).compute(client)

        seconds = median_seconds(round_trip, args.repeat)
        assert np.array_equal(out["b"], a)
        print(json.dumps({"bench": "python_from_numpy_compute", "mb": a.nbytes // 1_000_000, "chunks": 10,
                          "seconds": round(seconds, 3), "plain_copy_seconds": round(copy_seconds, 3),
                          "ratio_to_copy": round(seconds / copy_seconds, 2),
                          "gb_per_s": round(a.nbytes / seconds / 1e9, 2)}), flush=True)
        client.close()


if __name__ == "__main__":
    main()
