#!/usr/bin/env python3
"""The seed notebook in Python: the costly simulation as futures, then as a stream, the stored results
queried, and a matplotlib histogram of them (results.png).

    PYTHONPATH=build/python python3 examples/python/seed_notebook.py
"""

import argparse
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # a file, not a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import tessera  # noqa: E402

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugin", default=str(REPOSITORY / "build/lib/libtessera_examples.so"))
    parser.add_argument("--sets", type=int, default=500)
    parser.add_argument("--plot", default="results.png")
    args = parser.parse_args()

    with tessera.LocalCluster(workers=4, threads_per_worker=4, plugins=[args.plugin]) as cluster, \
            tessera.Client(cluster) as client:
        rng = np.random.default_rng(0)
        parameters = rng.random((args.sets, 4))

        # 1. Futures: one task per parameter set, results as they finish.
        futures = client.map("costly_simulation", list(parameters))
        by_future = {f.key: f.result() for f in tessera.as_completed(futures)}
        gathered = np.array(client.gather(futures))
        assert len(by_future) == args.sets
        np.testing.assert_allclose(gathered, parameters.sum(axis=1))
        print(f"futures: {args.sets} results, mean {gathered.mean():.4f}")

        # 2. A stream: the same sets through simulation actors, each result stored as it arrives.
        with client.stream("costly_simulation", config={"max_sleep": 0.01}) as stream:
            stream.push_many(parameters)
        streamed = {record.id: record.value for record in stream}
        print(f"stream {stream.id}: {len(streamed)} results")

        # 3. The query: counts and a summary from the store, and the results as a DataFrame.
        results = client.results(stream)
        print(f"results > 2: {results.where('result > 2').count()} of {results.count()}")
        frame = results.to_pandas()
        print(frame.describe().loc[["mean", "min", "max"], ["result"]])

        # 4. The plot.
        figure, axes = plt.subplots(figsize=(7, 4))
        axes.hist(frame["result"], bins=30, color="#3b6ea8")
        axes.axvline(2.0, color="#c44", linestyle="--", label="result = 2")
        axes.set_xlabel("sum of the four parameters")
        axes.set_ylabel("parameter sets")
        axes.set_title(f"costly_simulation: {len(frame)} results of stream {stream.id}")
        axes.legend()
        figure.tight_layout()
        figure.savefig(args.plot, dpi=100)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
