#!/usr/bin/env python3
"""The seed notebook (Dask's "embarrassingly parallel workloads") with `dask` replaced by `tessera`: the
costly simulation is a Python function, run lazily (delayed, compute, persist), as futures (submit, map,
gather) and as a bag of 100 partitions; then the same simulation as a Python class streamed from the
DataFrame, its stored results queried, a histogram of them (results.png), and a gest-api generator (a
random-restart local search, written below) steering an ensemble of that class toward its minimum.

    PYTHONPATH=build/python python3 examples/python/seed_notebook.py
"""

import argparse
import pathlib
import random
import sys
import tempfile
import time

import matplotlib

matplotlib.use("Agg")  # a file, not a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import tessera  # noqa: E402
from tessera import Client  # noqa: E402

MAX_SLEEP = 1.0  # the notebook sleeps up to a second per call; --max-sleep shortens it


def costly_simulation(list_param):
    time.sleep(random.random() * MAX_SLEEP)
    return sum(list_param)


@tessera.simulation("costly_class")
class CostlySimulation:
    """The same work as a simulation class: built once per simulation instance, then run per parameter set
    of a stream, each result stored as it arrives. `parameters` names the DataFrame's columns."""

    parameters = ["param_a", "param_b", "param_c", "param_d"]

    def __init__(self, config):
        self.max_sleep = config.get("max_sleep", 1.0)

    def run(self, p):
        time.sleep(random.random() * self.max_sleep)
        return sum(p.values())


@tessera.generator("restart_search")
class RandomRestartSearch:
    """A gest-api generator: points around the best result so far (a shrinking step), with a random
    restart one time in four. Tessera asks it for points as simulation slots free up and tells it each
    durable result once; its state is pickled in the ensemble's checkpoints."""

    parameters = ["param_a", "param_b", "param_c", "param_d"]
    outputs = ["result"]

    def __init__(self, config):
        self.rng = random.Random(int(config.get("seed", 0)))
        self.best, self.best_value, self.step = None, float("inf"), 0.25

    def suggest(self, num_points):
        points = []
        for _ in range(num_points):
            if self.best is None or self.rng.random() < 0.25:
                point = [self.rng.random() for _ in self.parameters]
            else:
                point = [min(1.0, max(0.0, x + self.rng.gauss(0.0, self.step))) for x in self.best]
            points.append(dict(zip(self.parameters, point)))
        return points

    def ingest(self, results):
        for r in results:
            if r["result"] < self.best_value:
                self.best_value, self.best = r["result"], [r[k] for k in self.parameters]
                self.step = max(0.01, self.step * 0.9)

    def finalize(self):
        pass


def main():
    global MAX_SLEEP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=500)
    parser.add_argument("--max-sleep", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=10, help="what cluster.scale asks for")
    parser.add_argument("--plot", help="the histogram's PNG (default: results.png in TMPDIR/tessera-examples)")
    args = parser.parse_args()
    if args.plot is None:
        folder = pathlib.Path(tempfile.gettempdir()) / "tessera-examples"
        folder.mkdir(exist_ok=True)
        args.plot = str(folder / "results.png")
    MAX_SLEEP = args.max_sleep

    # [1] The client and its own cluster, sized as Dask's is; this file is the module its workers import
    # (for the simulation class below; functions need no module: they are pickled).
    client = Client(threads_per_worker=4, n_workers=1, python=[__file__])
    print(client)

    input_params = pd.DataFrame(np.random.default_rng(0).random(size=(args.sets, 4)),
                                columns=["param_a", "param_b", "param_c", "param_d"])
    expected = input_params.values.sum(axis=1)

    # [8-11] Delayed calls, computed together.
    lazy_results = [tessera.delayed(costly_simulation)(parameters) for parameters in input_params.values[:10]]
    print(lazy_results[0])
    np.testing.assert_allclose(tessera.compute(*lazy_results), expected[:10])

    # [12-14] All of them persisted in the background, more workers, then the results.
    lazy_results = [tessera.delayed(costly_simulation)(parameters) for parameters in input_params.values]
    futures = tessera.persist(*lazy_results)
    client.cluster.scale(args.workers)
    results = tessera.compute(*futures)
    np.testing.assert_allclose(results, expected)
    print(f"delayed: {len(results)} results, first {results[0]:.4f}")

    # [15-18] Futures: submit, gather, map.
    futures = [client.submit(costly_simulation, parameters) for parameters in input_params.values]
    results = client.gather(futures)
    futures = client.map(costly_simulation, input_params.values)
    results = client.gather(futures)
    np.testing.assert_allclose(results, expected)
    print(f"futures: {len(results)} results")

    # [20-23] Analysis with pandas.
    output = input_params.copy()
    output["result"] = pd.Series(results, index=output.index)
    above = len(output[output['result'] > 2])
    print(f"mean {output['result'].mean():.4f}; results > 2: {above:,} of {len(output):,} "
          f"({100 * above / len(output):.1f}%)")

    # A bag of 100 partitions.
    bag = tessera.bag.from_sequence(input_params.values.tolist(), npartitions=100)
    bagged = bag.map(costly_simulation).compute()
    np.testing.assert_allclose(bagged, expected)
    print(f"bag: {len(bagged)} results in {bag.npartitions} partitions")

    # Beyond the notebook: the simulation class as a stream from the DataFrame, every result durable.
    with client.stream("costly_class", config={"max_sleep": args.max_sleep}) as stream:
        stream.push_many(input_params)
    streamed = {record.id: record.value for record in stream}
    print(f"stream {stream.id}: {len(streamed)} results")
    stored = client.results(stream)
    above, count = stored.where('result > 2').count(), stored.count()
    print(f"results > 2: {above:,} of {count:,} ({100 * above / max(count, 1):.1f}%)")
    frame = stored.to_pandas()
    np.testing.assert_allclose(frame.sort_values("id")["result"], expected)

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

    # A gest-api generator steering the simulation class: an adaptive ensemble of 200 sets.
    ensemble = client.ensemble("restart_search", "costly_class", 200, generator_config={"seed": 1},
                               config={"max_sleep": args.max_sleep})
    ensemble.wait()
    best = min(record.value for record in ensemble if not record.failed)
    print(f"ensemble {ensemble.id}: {ensemble.error or 'done'}; best sum {best:.4f} (the minimum is 0)")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
