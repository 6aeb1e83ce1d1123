#!/usr/bin/env python3
"""The main job from Python: 500 parameter sets streamed into the examples' costly_simulation, progress
on the terminal, the summary and the count of results > 2 from the store, results.csv written.

    PYTHONPATH=build/python python3 examples/python/main_job.py                      # a LocalCluster here
    PYTHONPATH=build/python python3 examples/python/main_job.py --scheduler tcp://127.0.0.1:7070
"""

import argparse
import pathlib
import sys
import time

import numpy as np

import tessera

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheduler", help="a tessera-node's address; without it, a LocalCluster in this process")
    parser.add_argument("--plugin", default=str(REPOSITORY / "build/lib/libtessera_examples.so"),
                        help="the examples plugin (costly_simulation)")
    parser.add_argument("--sets", type=int, default=500)
    parser.add_argument("--max-sleep", type=float, default=0.05, help="seconds a simulation sleeps at most")
    parser.add_argument("--output", default="results.csv")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    if args.sets < 1 or not 0 <= args.max_sleep <= 60:
        parser.error("--sets must be >= 1 and --max-sleep in [0, 60]")

    cluster = None
    if args.scheduler:
        client = tessera.Client(args.scheduler)
    else:
        cluster = tessera.LocalCluster(workers=10, threads_per_worker=4, plugins=[args.plugin])
        client = tessera.Client(cluster)

    parameters = np.random.default_rng(args.seed).random((args.sets, 4))
    started = time.monotonic()
    with client.stream("costly_simulation", config={"max_sleep": args.max_sleep},
                       parameter_names=["a", "b", "c", "d"]) as stream:
        stream.push_many(parameters)
    failed = 0
    for done, record in enumerate(stream, start=1):
        failed += record.failed
        if done % 50 == 0 or done == args.sets:
            print(f"\r{done}/{args.sets} sets, {failed} failed, {time.monotonic() - started:.1f} s", end="",
                  file=sys.stderr, flush=True)
    print(file=sys.stderr)

    results = client.results(stream)
    summary = results.summary()
    print(f"stream {stream.id}: {summary['count']} results, mean {summary['mean']:.4f}, "
          f"min {summary['min']:.4f}, max {summary['max']:.4f}")
    print(f"results > 2: {results.where('result > 2').count()}")
    results.to_pandas().to_csv(args.output, index=False)
    print(f"wrote {args.output}")
    client.close()
    if cluster is not None:
        cluster.close()
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
