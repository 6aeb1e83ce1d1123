"""Futures by registered name on a LocalCluster: submit, map, gather, as_completed, timeouts, errors."""

import threading
import time

import numpy as np
import pytest

import tessera


def test_submit_map_gather(client):
    assert client.submit("square", 12).result() == 144
    futures = client.map("square", range(1000))
    assert client.gather(futures) == [i * i for i in range(1000)]
    # Futures as arguments: the task runs on their results.
    a = client.submit("square", 3)
    assert client.submit("add", a, a).result(timeout=10) == 18
    assert client.gather(client.map("add", range(5), client.map("square", range(5)))) == [0, 2, 6, 12, 20]


def test_delayed_calls_run_once_each_when_computed(cluster, client):
    square, add = tessera.delayed("square"), tessera.delayed("add")
    a = square(3)
    total = add(a, a)  # the shared call runs once
    before = cluster.status()["tasks_done"]
    assert total.compute() == 18
    assert cluster.status()["tasks_done"] - before == 2
    chain = add(total, square(4))
    assert tessera.compute(total, chain, 7) == (18, 34, 7)
    assert client.compute(square(5)) == 25
    persisted = client.persist(chain)
    assert isinstance(persisted, tessera.Delayed) and "persisted" in repr(persisted)
    assert persisted.compute() == 34
    before = cluster.status()["tasks_done"]
    assert add(persisted, 1).compute() == 35  # the persisted chain does not run again
    assert cluster.status()["tasks_done"] - before == 1
    long = tessera.delayed("add")(0, 0)
    for i in range(1, 3000):  # a long chain is not a deep recursion
        long = add(long, i)
    assert long.compute() == sum(range(3000))
    with pytest.raises(TypeError, match="registered under"):
        tessera.delayed(42)
    with pytest.raises(TypeError, match="argument 0 of delayed.'add'.: a list holding delayed values"):
        add([a], 1)
    with pytest.raises(tessera.SubmissionError, match="no_such_function"):
        tessera.delayed("no_such_function")(1).compute()
    with pytest.raises(TypeError, match="argument 1 is a int, not a delayed value"):
        client.persist(a, 3)


def test_a_dask_style_graph_runs_by_key(client):
    graph = {"x": 3, "a": ("square", "x"), "b": ("add", "a", "a"), "c": ("add", "b", 1)}
    assert client.get(graph, "c") == 19
    assert client.get(graph, ["a", "b", "x"]) == [9, 18, 3]
    with pytest.raises(KeyError, match="'nope' is not in the graph"):
        client.get(graph, "nope")
    with pytest.raises(ValueError, match="cycle: 'p' -> 'q' -> 'p'"):
        client.get({"p": ("add", "q", 1), "q": ("add", "p", 1)}, "p")
    with pytest.raises(tessera.SubmissionError, match="no_such_function"):
        client.get({"k": ("no_such_function", 1)}, "k")


def test_bags_map_filter_and_fold_by_registered_names(client):
    b = tessera.bag.from_sequence(range(100), npartitions=10)
    assert b.npartitions == 10 and b.compute() == list(range(100))
    squares = b.map("square")
    assert squares.compute() == [i * i for i in range(100)]
    even = squares.filter("is_even")
    assert even.compute() == [i * i for i in range(0, 100, 2)]
    assert even.map("square").compute() == [i ** 4 for i in range(0, 100, 2)]  # steps in their order
    assert b.filter("is_even").map("square").compute() == [i * i for i in range(0, 100, 2)]
    assert even.fold("add").compute() == sum(i * i for i in range(0, 100, 2))
    assert b.fold("add", initial=1000).compute() == sum(range(100)) + 10 * 1000  # initial once a partition
    assert tessera.bag.from_sequence([], npartitions=3).fold("add", initial=5).compute() == 5
    assert tessera.bag.from_sequence(range(250)).npartitions == 3  # about 100 elements a partition
    with pytest.raises(ValueError, match="fold of an empty bag"):
        tessera.bag.from_sequence([]).fold("add").compute()
    with pytest.raises(TypeError, match="registered under"):
        b.map(3.5)
    with pytest.raises(tessera.SubmissionError, match="no_such_function"):
        b.map("no_such_function").compute()


def test_a_local_cluster_s_status_is_what_the_cli_prints(cluster, client):
    client.gather(client.map("square", range(10)))
    status = cluster.status()  # dashboard/status_json's writer, as `tessera status --json`'s scheduler part
    assert status["workers"] == 2 and status["tasks_done"] >= 10 and status["tasks_erred"] == 0
    assert len(status["memory"]) == 2 and all("managed_bytes" in m and "memory_limit" in m for m in status["memory"])
    assert "clients" not in status


def test_values_cross_as_numpy(client):
    ramp = client.submit("ramp", 5).result()
    assert isinstance(ramp, np.ndarray) and ramp.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert not ramp.flags.writeable  # the result's own storage, shared, not copied
    assert client.submit("total", np.arange(10.0)).result() == 45.0
    assert client.submit("total", [1.5, 2.5]).result() == 4.0


def test_as_completed_yields_every_future_once(client):
    futures = client.map("slow_square", range(20))
    seen = [f.result() for f in tessera.as_completed(futures, timeout=30)]
    assert sorted(seen) == [i * i for i in range(20)]


def test_a_failing_task_raises_with_its_message(client):
    future = client.submit("fails_on_seven", 7)
    with pytest.raises(tessera.TaskFailed, match="seven is not allowed") as caught:
        future.result(timeout=10)
    assert caught.value.function == "fails_on_seven" and not caught.value.cancelled
    assert isinstance(future.exception(), tessera.TaskFailed)
    assert future.status == "erred"
    # Its dependents end cancelled, naming the cause.
    with pytest.raises(tessera.TaskFailed, match="cancelled"):
        client.submit("add", future, 1).result(timeout=10)
    assert client.submit("fails_on_seven", 6).exception(timeout=10) is None


def test_result_timeout_and_bad_input(client):
    slow = client.submit("slower_square", 4)
    with pytest.raises(TimeoutError, match="slower_square"):
        slow.result(timeout=0.001)
    assert slow.result(timeout=30) == 16
    with pytest.raises(ValueError, match="timeout"):
        slow.result(timeout=float("nan"))
    with pytest.raises(tessera.SubmissionError, match="no_such_function"):
        client.submit("no_such_function", 1)
    with pytest.raises(tessera.SubmissionError, match="square"):
        client.submit("square", 1, 2)  # one argument too many
    with pytest.raises((tessera.SubmissionError, tessera.ValueTypeError), match="square"):
        client.submit("square", "text")
    with pytest.raises(tessera.ValueTypeError, match="dict"):
        client.submit("square", {"a": 1})
    with pytest.raises(tessera.ValueTypeError, match="64 bits"):
        client.submit("square", 2**70)
    with pytest.raises(tessera.SubmissionError, match="input 1 has 2 elements"):
        client.map("add", [1, 2, 3], [1, 2])
    # The cluster keeps running after all of that.
    assert client.submit("square", 5).result(timeout=10) == 25


def test_cancel(client):
    futures = client.map("slower_square", range(200))
    client.cancel(futures)
    states = {f.status for f in futures if f.wait(timeout=30)}
    assert "cancelled" in states


def test_waits_release_the_gil(client):
    # Another Python thread runs while this one waits on a slow task.
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        client.submit("slower_square", 2).result(timeout=30)
        begun = len(ticks)
        client.gather(client.map("slow_square", range(8)))
        assert len(ticks) > begun
    finally:
        stop.set()
        thread.join()


def test_an_unloadable_plugin_is_an_import_error():
    with pytest.raises(tessera.PluginError, match="cannot be loaded"):
        tessera.load_plugin("/nonexistent/libnothing.so")
    with pytest.raises(ImportError):
        tessera.load_plugin("/nonexistent/libnothing.so")
    assert "square" in tessera.functions()
    assert "pause_square" in tessera.simulations()


def test_cluster_arguments_are_checked():
    with pytest.raises(ValueError, match="workers must be in"):
        tessera.LocalCluster(workers=0)
    with pytest.raises(TypeError, match="workers must be an int"):
        tessera.LocalCluster(workers=1.5)
    with pytest.raises(ValueError, match="memory_limit"):
        tessera.LocalCluster(memory_limit="lots")
    with pytest.raises(ValueError, match="memory_limit"):
        tessera.LocalCluster(memory_limit=float("inf"))


def test_gather_keeps_the_shape_it_is_given(client):
    a, b, c = client.submit("square", 2), client.submit("square", 3), client.submit("square", 4)
    assert client.gather({"a": a, "rest": [b, (c, 7)], "none": None}) == {"a": 4, "rest": [9, (16, 7)], "none": None}
    assert client.gather((a, [b, [c]])) == (4, [9, [16]])
    assert client.gather([]) == []
    assert client.gather(f for f in (a, b)) == [4, 9]  # any iterable of futures, as before
    assert sorted(client.gather({a, b})) == [4, 9]
    assert client.gather({"x": a}.values()) == [4]
    import collections
    Pair = collections.namedtuple("Pair", "left right")
    assert client.gather(Pair(a, b)) == Pair(4, 9)


def _progress_lines(text):
    return [line for line in text.split("\n") if line]


def test_progress_over_futures_prints_plain_lines_ending_with_the_totals(client):
    import io
    futures = {"squares": client.map("square", range(2000)), "one": client.submit("square", 5)}
    out = io.StringIO()
    assert tessera.progress(futures, label="squares", out=out) is futures
    assert all(f.done() for f in futures["squares"])
    lines = _progress_lines(out.getvalue())
    assert "\r" not in out.getvalue()
    assert 1 <= len(lines) <= 12, lines
    assert all(line.startswith("squares: ") for line in lines), lines
    assert lines[-1].startswith("squares: 2,001/2,001 done (100%), "), lines[-1]
    assert sum("2,001/2,001" in line for line in lines) == 1, lines  # the totals once
    with pytest.raises(TypeError, match="progress: int is neither a Stream nor futures"):
        tessera.progress(3)
    with pytest.raises(ValueError, match="display 'fancy'"):
        tessera.progress([], display="fancy")


def test_progress_on_a_terminal_is_one_redrawn_line_with_rate_and_time_left(client):
    import os
    controller, terminal = os.openpty()
    with os.fdopen(terminal, "w") as out:
        futures = client.map("slow_square", range(1000))  # 10 ms each: about 2.5 s on the 4 threads
        tessera.progress(futures, label="naps", out=out)
    drawn = b""
    os.set_blocking(controller, False)
    try:
        while chunk := os.read(controller, 65536):
            drawn += chunk
    except (BlockingIOError, OSError):
        pass
    os.close(controller)
    text = drawn.decode()
    assert "\rnaps [" in text, text
    assert "] 100%  1,000/1,000" in text, text
    assert "/s" in text and " left" in text, text  # the rate, and the time left while it ran
    assert text.count("\n") == 1 and text.endswith("\n"), text


def test_progress_over_a_stream_follows_it_until_it_finishes(client):
    import io
    out = io.StringIO()
    stream = client.stream("pause_square", max_in_flight=64, config={"pause_us": 100})
    pusher = threading.Thread(target=lambda: (stream.push_many([[float(i)] for i in range(1500)]), stream.close()))
    pusher.start()
    tessera.progress(stream, out=out)
    pusher.join()
    assert stream.completed == 1500
    assert _progress_lines(out.getvalue())[-1].startswith(f"stream {stream.id}: 1,500/1,500 done (100%)")


def test_progress_in_jupyter_updates_one_html_bar(client):
    pytest.importorskip("IPython", reason="IPython (python3-ipython) is not installed: no Jupyter display to test")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.displaypub import CapturingDisplayPublisher
    shell = InteractiveShell.instance()
    shell.display_pub = CapturingDisplayPublisher()
    try:
        tessera.progress(client.map("square", range(500)), label="squares", display="jupyter")
        outputs = shell.display_pub.outputs
    finally:
        InteractiveShell.clear_instance()
    assert len(outputs) >= 2  # the bar shown, then updated in place
    last = outputs[-1]
    assert last["update"] is True
    assert '<progress value="500" max="500"' in last["data"]["text/html"]
    assert "squares: 100%  500/500" in last["data"]["text/plain"]
