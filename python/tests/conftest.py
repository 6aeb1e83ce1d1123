"""Fixtures: the build's plugins, an in-process LocalCluster, and real tessera-node processes (on
127.0.0.1 with a free port, in a temporary directory, stopped at the end)."""

import os
import pathlib
import signal
import subprocess
import tempfile

import pytest

import tessera


def _required(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these tests through ctest (python_client_*)")
    return value


@pytest.fixture(scope="session")
def test_plugin():
    path = _required("TESSERA_TEST_PLUGIN")
    tessera.load_plugin(path)
    return path


@pytest.fixture(scope="session")
def examples_plugin():
    path = _required("TESSERA_EXAMPLES_PLUGIN")
    tessera.load_plugin(path)
    return path


@pytest.fixture(scope="module")
def cluster(test_plugin, examples_plugin):
    with tessera.LocalCluster(workers=2, threads_per_worker=2, plugins=[test_plugin, examples_plugin]) as c:
        yield c


@pytest.fixture()
def client(cluster):
    with tessera.Client(cluster) as c:
        yield c


class Node:
    """A tessera-node process of the build, from a TOML config; its first line names its endpoint."""

    def __init__(self, config_text):
        self.dir = tempfile.TemporaryDirectory(prefix="tessera-python-node-")
        config = pathlib.Path(self.dir.name) / "node.toml"
        config.write_text(config_text)
        self.log = open(pathlib.Path(self.dir.name) / "stderr.log", "w+")
        self.process = subprocess.Popen([_required("TESSERA_NODE_BINARY"), "--config", str(config)],
                                        stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL,
                                        text=True)
        line = self.process.stdout.readline()  # returns once the node listens (or has exited)
        if "tcp://" not in line:
            self.stop()
            self.log.seek(0)
            raise RuntimeError(f"tessera-node did not start: {line!r} {self.log.read()}")
        start = line.index("tcp://")
        self.endpoint = line[start:].split()[0].rstrip(";")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.log.close()
        self.dir.cleanup()


def node_config(plugin, extra=""):
    return ("[node]\nname = \"python-test-node\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
            f"[worker]\nworkers = 2\nthreads_per_worker = 2\n[plugins]\npaths = [\"{plugin}\"]\n" + extra)


@pytest.fixture()
def start_node():
    nodes = []

    def start(config_text):
        node = Node(config_text)
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        node.stop()
