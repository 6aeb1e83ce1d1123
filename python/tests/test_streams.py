"""Streams from Python: push, push_many from NumPy and pandas, iteration, cancellation, and the stored
results as counts, summaries, arrays and frames."""

import math
import time

import numpy as np
import pandas as pd
import pytest

import tessera


def test_push_iterate_and_query(client):
    with client.stream("pause_square", max_in_flight=64, config={"pause_us": 10}) as stream:
        ids = [stream.push(float(x)) for x in range(100)]
    assert ids == list(range(100))
    records = {r.id: r for r in stream}
    assert sorted(records) == ids
    assert records[13].failed and "13 is refused" in records[13].error
    assert records[12].value == 144.0
    # Who ran each set, live and stored: a worker's name for every one, not only the failed one.
    assert all(r.node.startswith("worker-") for r in records.values())
    query = client.results(stream)
    assert all(query.get(i).node.startswith("worker-") for i in (0, 12, 13, 99))
    assert query.count() == 100
    assert query.where("result > 2").count() == 97  # 0 and 1 are not, nor 13 (failed)
    assert query.where("failed").count() == 1
    summary = query.summary()
    assert summary["count"] == 100 and summary["failed"] == 1 and summary["max"] == 99.0**2
    edges = summary["bin_edges"]
    assert len(edges) == len(summary["histogram"]) + 1 and edges[0] == 0.0 and edges[-1] == 99.0**2
    values = query.to_numpy()
    assert values.shape == (100,) and math.isnan(values[13])
    np.testing.assert_array_equal(np.delete(values, 13), np.delete(np.arange(100.0) ** 2, 13))
    np.testing.assert_array_equal(query.to_numpy("id"), np.arange(100))
    frame = query.to_pandas()
    assert list(frame.columns[:3]) == ["id", "parameters", "result"]
    assert frame.loc[13, "failed"] and "13 is refused" in frame.loc[13, "error"]
    assert query.get(5).value == 25.0 and query.get(5).parameters == 5.0
    assert "id" in query.to_csv().splitlines()[0]
    with pytest.raises(tessera.QueryError, match="position"):
        query.where("result >>> 2")


def test_push_many_from_numpy_and_a_dataframe(client):
    rows = np.random.default_rng(7).random((5000, 4))
    stream = client.stream("costly_simulation", max_in_flight=4096, config={"max_sleep": 0.0})
    first = stream.push_many(rows)
    assert first == range(0, 5000)
    frame = pd.DataFrame(rows[:10], columns=["a", "b", "c", "d"])
    assert stream.push_many(frame) == range(5000, 5010)
    stream.close()
    assert stream.wait(timeout=120)
    results = client.results(stream).to_numpy()
    np.testing.assert_allclose(results, np.concatenate([rows.sum(axis=1), rows[:10].sum(axis=1)]))
    parameters = client.results(stream).to_numpy("parameters")
    assert parameters.shape == (5010, 4)
    np.testing.assert_array_equal(parameters[:5000], rows)


def test_bad_pushes_are_refused_and_the_stream_goes_on(client):
    stream = client.stream("costly_simulation", max_in_flight=16, config={"max_sleep": 0.0})
    with pytest.raises(tessera.SubmissionError, match="costly_simulation"):
        stream.push([1.0, 2.0])  # wrong arity: uses no id
    with pytest.raises(tessera.ValueTypeError, match="dtype"):
        stream.push_many(np.array([["a", "b", "c", "d"]]))
    with pytest.raises(ValueError, match="dimensions"):
        stream.push_many(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="priority"):
        stream.push([1.0, 2.0, 3.0, 4.0], priority=float("inf"))
    assert stream.push([1.0, 2.0, 3.0, 4.0]) == 0
    stream.close()
    assert [r.value for r in stream] == [10.0]
    with pytest.raises(tessera.SubmissionError, match="no_such_simulation"):
        client.stream("no_such_simulation")
    with pytest.raises(ValueError, match="isolation"):
        client.stream("pause_square", isolation="fiber")
    with pytest.raises(ValueError, match="max_in_flight"):
        client.stream("pause_square", max_in_flight=0)


def test_cancel_where_and_next_with_a_timeout(client):
    stream = client.stream("pause_square", max_in_flight=4096, pool_size=1, config={"pause_us": 20000})
    stream.push_many(np.arange(200.0))
    queued, running = stream.cancel_where("id >= 50")
    assert queued + running > 0
    stream.close()
    seen = 0
    while (record := stream.next(timeout=60)) is not None:
        seen += 1
    assert seen == 200
    assert client.results(stream).where("failed").count() >= queued


def test_an_adaptive_ensemble(client):
    box = {"lower": [-3.0, -2.0], "upper": [3.0, 2.0], "seed": 7}
    ensemble = client.ensemble("aposmm", "six_hump_camel", 300, generator_config=box)
    with pytest.raises(RuntimeError):
        ensemble.push([0.0, 0.0])  # its sets come from the generator
    assert ensemble.wait(timeout=120) and ensemble.error == ""
    records = list(ensemble)
    assert sorted(r.id for r in records) == list(range(300)) and not any(r.failed for r in records)
    # Six-hump camel's global minimum is -1.0316; the search gets near it.
    assert min(r.value for r in records) < -1.0
    with pytest.raises(tessera.SubmissionError, match="no generator is registered as 'nope'"):
        client.ensemble("nope", "six_hump_camel", 10)
    with pytest.raises(ValueError, match="budget"):
        client.ensemble("aposmm", "six_hump_camel", 0, generator_config=box)


def test_a_program_declared_from_python_runs_per_set(client, tmp_path):
    tessera.register_program(
        "py_affine",
        command=["awk", "-F=", '/^a=/{{a=$2}} END{{printf "energy %.17g\\n", 2*a}}', "case.in"],
        parameters=["a"],
        files={"case.in": "a={a}\n"},
        result_regex=r"energy (\S+)",
        outputs=["energy"],
        workdir_root=str(tmp_path),
    )
    assert "py_affine" in tessera.simulations()
    with client.stream("py_affine") as stream:
        for x in (0.5, 1.25, -3.0):
            stream.push(x)
    records = {r.id: r for r in stream}
    assert [records[i].value for i in range(3)] == [1.0, 2.5, -6.0]
    # Each record keeps how its process ended and what it printed; the declaration names the columns.
    assert records[1].program == {"exit_status": 0, "signal": 0, "stdout": "energy 2.5\n", "stderr": ""}
    query = client.results(stream)
    frame = query.to_pandas()
    assert list(frame.columns) == ["id", "a", "energy", "failed", "error", "exit_status"]
    assert frame["energy"].tolist() == [1.0, 2.5, -6.0] and frame["exit_status"].tolist() == [0, 0, 0]
    assert query.where("energy > 2 and a < 2").count() == 1
    assert query.get(2).program["stdout"] == "energy -6\n"
    with pytest.raises(ValueError, match="unknown placeholder"):
        tessera.register_program("py_bad", command=["echo", "{nope}"])


def test_streams_are_listed_and_dropped(client):
    with client.stream("pause_square", config={"pause_us": 0}) as stream:
        for x in range(50):
            stream.push(float(x))
    list(stream)
    deadline = time.monotonic() + 30  # the store marks it finished right after its last result
    while (listed := {s["id"]: s for s in client.streams()})[stream.id]["state"] != "finished":
        assert time.monotonic() < deadline, listed[stream.id]
        time.sleep(0.01)
    assert listed[stream.id]["stored"] == 50
    client.drop_stream(stream)
    assert stream.id not in {s["id"] for s in client.streams()}
    with pytest.raises(tessera.QueryError, match=f"no stream {stream.id}"):
        client.drop_stream(stream.id)
