"""The same API against a real tessera-node process, plain and with CURVE keys."""

import os

import numpy as np
import pytest

import tessera
from conftest import node_config


def test_futures_streams_and_queries_on_a_node(start_node, test_plugin):
    node = start_node(node_config(test_plugin))
    with tessera.Client(node.endpoint, reconnect_timeout=5.0) as client:
        assert client.gather(client.map("square", range(100))) == [i * i for i in range(100)]
        a = client.submit("square", 4)
        assert client.submit("add", a, 1).result(timeout=30) == 17
        with pytest.raises(tessera.TaskFailed, match="seven is not allowed"):
            client.submit("fails_on_seven", 7).result(timeout=30)
        stream = client.stream("pause_square", config={"pause_us": 10})
        stream.push_many(np.arange(1000.0))
        stream.close()
        got = {r.id: r.value for r in stream if not r.failed}
        assert len(got) == 999 and got[999] == 999.0**2
        values = client.results(stream.id).to_numpy()
        assert values.shape == (1000,) and values[30] == 900.0
        assert client.results(stream.id).where("result > 2").count() == 997


def test_a_client_without_the_plugin_calls_the_nodes_functions_by_name(start_node):
    # This interpreter never loads the plugin: the names resolve on the scheduler.
    node = start_node(node_config(os.environ["TESSERA_NODE_ONLY_PLUGIN"]))
    with tessera.Client(node.endpoint, reconnect_timeout=5.0) as client:
        functions = {f["name"]: f for f in client.functions()}
        assert functions["node_only_cube"]["argument_types"] == ["int"]
        assert "from libtessera_node_only_plugin.so build " in functions["node_only_cube"]["identity"]
        assert client.gather(client.map("node_only_cube", [1, 2, 3])) == [1, 8, 27]
        assert client.submit("node_only_weighted", [1.0, 2.0], 2.0).result(timeout=30) == 6.0
        with pytest.raises(tessera.SubmissionError, match="node_only_cube.*2 arguments|takes 1"):
            client.submit("node_only_cube", 1, 2)
        with pytest.raises(tessera.SubmissionError, match="argument 0"):
            client.submit("node_only_cube", "seven")
        with pytest.raises(tessera.SubmissionError, match="'no_such_function'.*node_only_cube"):
            client.submit("no_such_function", 1)
        simulations = {s["name"]: s for s in client.simulations()}
        assert simulations["node_only_sum"]["program"] is False
        # What `tessera status --json` and `tessera workers --json` print, from the same writer.
        status = client.status()
        assert status["name"] == "python-test-node" and status["workers"] == 2 and status["clients"] == 1
        assert status["tasks_done"] >= 4
        workers = client.workers()
        assert len(workers) == 2 and all(w["threads"] == 2 for w in workers)


def test_curve_keys(start_node, test_plugin):
    node_public, node_secret = tessera.curve_keypair()
    client_public, client_secret = tessera.curve_keypair()
    stranger_public, stranger_secret = tessera.curve_keypair()
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as keys:
        pub, key = pathlib.Path(keys, "node.pub"), pathlib.Path(keys, "node.key")
        pub.write_text(node_public + "\n")
        key.write_text(node_secret + "\n")
        key.chmod(0o600)
        node = start_node(node_config(test_plugin, f"[security]\ncurve = true\npublic_key_file = \"{pub}\"\n"
                                                   f"secret_key_file = \"{key}\"\n"
                                                   f"authorized_keys = [\"{client_public}\"]\n"))
        with tessera.Client(node.endpoint, public_key=client_public, secret_key=client_secret,
                            scheduler_public_key=node_public) as client:
            assert client.submit("square", 9).result(timeout=30) == 81
        with pytest.raises(tessera.ConnectionError):
            stranger = tessera.Client(node.endpoint, public_key=stranger_public, secret_key=stranger_secret,
                                      scheduler_public_key=node_public, heartbeat_timeout=1.0,
                                      reconnect_timeout=1.0)
            stranger.submit("square", 1).result(timeout=10)

        # A client config as `tessera slurm` writes it: the address and the key files, relative to it.
        pathlib.Path(keys, "client.pub").write_text(client_public + "\n")
        pathlib.Path(keys, "client.key").write_text(client_secret + "\n")
        config = pathlib.Path(keys, "client.toml")
        config.write_text(f"[client]\nscheduler = \"{node.endpoint}\"\n[security]\npublic_key_file = \"client.pub\"\n"
                          f"secret_key_file = \"client.key\"\nscheduler_public_key = \"node.pub\"\n")
        with tessera.Client(config=config) as client:
            assert client.address == node.endpoint and client.submit("square", 5).result(timeout=30) == 25
        import os
        os.environ["TESSERA_CLIENT_CONFIG"] = str(config)
        try:
            with tessera.Client() as client:  # inside `tessera slurm -- python3 job.py`
                assert client.address == node.endpoint
        finally:
            del os.environ["TESSERA_CLIENT_CONFIG"]
        with pytest.raises(ValueError, match="no \\[client\\] scheduler"):
            pathlib.Path(keys, "empty.toml").write_text("[security]\n")
            tessera.Client(config=pathlib.Path(keys, "empty.toml"))
        with pytest.raises(ValueError, match="cannot read"):
            tessera.Client(config=pathlib.Path(keys, "missing.toml"))


def test_an_unreachable_scheduler_is_an_error_naming_it():
    with pytest.raises((tessera.ConnectionError, TimeoutError), match="127.0.0.1:9"):
        client = tessera.Client("tcp://127.0.0.1:9", heartbeat_timeout=0.5, reconnect_timeout=0.5)
        client.submit("square", 1).result(timeout=10)
    with pytest.raises(tessera.ConnectionError, match="address"):
        tessera.Client("not an address")


def test_a_push_cut_by_ctrl_c_is_an_incomplete_stream_in_python(start_node, test_plugin, tmp_path):
    import signal
    import subprocess
    import time
    node = start_node(node_config(test_plugin))
    gate = tmp_path / "gate"
    gate.write_text("closed")
    params = tmp_path / "params.csv"
    params.write_text("x\n" + "-1\n" * 100)  # every set waits at the gate: the push fills its four and waits
    push = subprocess.Popen([os.environ["TESSERA_CLI_BINARY"], "--scheduler", node.endpoint, "stream", "push",
                             "--simulation", "gated", "--input", str(params), "--max-in-flight", "4", "--pool-size",
                             "1", "--simulation-config", f"gate={gate}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    with tessera.Client(node.endpoint) as client:
        deadline = time.monotonic() + 30
        while not any(s["pushed"] == 4 for s in client.streams()):
            assert time.monotonic() < deadline, "the push never filled its four sets in flight"
            time.sleep(0.05)
        push.send_signal(signal.SIGINT)
        out, err = push.communicate(timeout=30)
        assert push.returncode == 130, err
        assert "stream push --resume 1 --input" in err
        (listed,) = client.streams()
        assert listed["state"] == "incomplete", listed
        assert listed["ended_early"] == "closed by the client before its input ended"
        assert listed["pushed"] == 4 and listed["input_sets"] == 100
        gate.unlink()
