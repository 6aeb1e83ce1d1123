#!/usr/bin/env python3
"""The main job from Python: 500 parameter sets streamed into the examples' costly_simulation, progress
on the terminal, the summary and the count of results > 2 from the store, results.csv written (by default
in TMPDIR/tessera-examples, outside the source tree).

    PYTHONPATH=build/python python3 examples/python/main_job.py                      # a LocalCluster here
    PYTHONPATH=build/python python3 examples/python/main_job.py --scheduler tcp://127.0.0.1:7070
"""

import argparse
import pathlib
import sys
import tempfile

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
    parser.add_argument("--output", help="the results' CSV (default: results.csv in TMPDIR/tessera-examples)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    if args.sets < 1 or not 0 <= args.max_sleep <= 60:
        parser.error("--sets must be >= 1 and --max-sleep in [0, 60]")
    if args.output is None:
        folder = pathlib.Path(tempfile.gettempdir()) / "tessera-examples"
        folder.mkdir(exist_ok=True)
        args.output = str(folder / "results.csv")

    cluster = None
    if args.scheduler:
        client = tessera.Client(args.scheduler)
    else:
        cluster = tessera.LocalCluster(workers=10, threads_per_worker=4, plugins=[args.plugin])
        client = tessera.Client(cluster)

    parameters = np.random.default_rng(args.seed).random((args.sets, 4))
    with client.stream("costly_simulation", config={"max_sleep": args.max_sleep},
                       parameter_names=["a", "b", "c", "d"]) as stream:
        stream.push_many(parameters)
    tessera.progress(stream, out=sys.stderr)
    failed = sum(record.failed for record in stream)

    results = client.results(stream)
    summary = results.summary()
    print(f"stream {stream.id}: {summary['count']:,} results ({failed:,} failed), mean {summary['mean']:.4f}, "
          f"min {summary['min']:.4f}, max {summary['max']:.4f}")
    above = results.where('result > 2').count()
    print(f"results > 2: {above:,} of {summary['count']:,} ({100 * above / max(summary['count'], 1):.1f}%)")
    results.to_pandas().to_csv(args.output, index=False)
    print(f"wrote {args.output}")
    client.close()
    if cluster is not None:
        cluster.close()
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
