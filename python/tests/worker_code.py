"""Python code the tests' clusters and nodes run by name (LocalCluster(python=), [plugins] python)."""

import ctypes
import os
import time

import tessera


@tessera.task
def square(x):
    return x * x


@tessera.task(name="add3")
def add(a, b, c):
    return a + b + c


@tessera.task
def raises_on_seven(x):
    if x == 7:
        raise ValueError(f"seven is not allowed (got {x})")
    return x


@tessera.task
def segfault(x):
    ctypes.string_at(0)  # a crash in C code, as a broken extension would


@tessera.task
def pid_after(seconds):
    time.sleep(seconds)
    return os.getpid()


@tessera.task
def not_a_value(x):
    return object()


@tessera.task
def column_sums(matrix):
    return matrix.sum(axis=0)


@tessera.simulation("damped")
class Damped:
    parameters = ["omega", "zeta"]
    outputs = ["amplitude", "phase"]

    def __init__(self, config):
        self.scale = config.get("scale", 1.0)

    def run(self, p):
        if p["omega"] < 0:
            raise ArithmeticError(f"omega {p['omega']} is negative")
        return {"amplitude": self.scale * p["omega"], "phase": 2.0 * p["zeta"]}


@tessera.simulation("sleepy")
class Sleepy:
    def __init__(self, config):
        pass

    def run(self, p):
        time.sleep(float(p[0]))
        return os.getpid()


@tessera.task
def zeros(n):
    import numpy as np
    return np.zeros(int(n))


@tessera.simulation("flaky_py")
class FlakyPy:
    """Fails a set the first time its parameter is seen (a marker file in config["dir"]), then succeeds."""

    def __init__(self, config):
        self.directory = config["dir"]

    def run(self, p):
        marker = os.path.join(self.directory, f"seen-{p[0]:g}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError(f"first try of {p[0]:g}")
        return p[0]


@tessera.simulation("gated_py")
class GatedPy:
    """A negative set waits while the file config["gate"] exists (at most 60 s); every set returns
    its parameter."""

    def __init__(self, config):
        self.gate = config.get("gate", "")

    def run(self, p):
        if p[0] < 0:
            until = time.monotonic() + 60
            while self.gate and os.path.exists(self.gate) and time.monotonic() < until:
                time.sleep(0.005)
        return p[0]


@tessera.simulation("wide_py")
class WidePy:
    """Occupies two compute threads per instance: says which process ran it and the threads it was given."""
    threads = 2

    def __init__(self, config):
        self.threads = config["tessera.threads"]

    def run(self, p):
        return [os.getpid(), self.threads]


@tessera.simulation("on_gpu_py")
class OnGpuPy:
    gpus = 1

    def __init__(self, config):
        self.device = config["tessera.device"]

    def run(self, p):
        return self.device


@tessera.simulation("paced")
class Paced:
    """damped's outputs, after config["seconds"] of sleep."""
    parameters = ["omega", "zeta"]
    outputs = ["amplitude", "phase"]

    def __init__(self, config):
        self.seconds = float(config.get("seconds", 0.0))

    def run(self, p):
        time.sleep(self.seconds)
        return {"amplitude": p["omega"], "phase": 2.0 * p["zeta"]}


@tessera.simulation("camel_py")
class CamelPy:
    """The six-hump camel function of (p[0], p[1]), a float, after config["seconds"] of sleep."""

    def __init__(self, config):
        self.seconds = float(config.get("seconds", 0.0))

    def run(self, p):
        time.sleep(self.seconds)
        x, y = float(p[0]), float(p[1])
        return (4 - 2.1 * x * x + x ** 4 / 3) * x * x + x * y + (-4 + 4 * y * y) * y * y


@tessera.simulation("blob")
class Blob:
    """A result of p[0] doubles."""

    def __init__(self, config):
        pass

    def run(self, p):
        import numpy as np
        return np.zeros(int(p[0]))


@tessera.generator("random_search")
class RandomSearch:
    """A gest-api generator: random points in the unit square, each result logged where config["log"] says
    (so a test sees what it was told); after config["fail_after"] results, ingest raises."""

    parameters = ["omega", "zeta"]
    outputs = ["amplitude", "phase"]

    def __init__(self, config):
        import random
        self.rng = random.Random(int(config.get("seed", 1)))
        self.log = config.get("log", "")
        self.fail_after = int(config.get("fail_after", -1))
        self.told = 0

    def suggest(self, num_points):
        return [{"omega": self.rng.uniform(0, 1), "zeta": self.rng.uniform(0, 1)} for _ in range(num_points)]

    def ingest(self, results):
        import json
        for result in results:
            self.told += 1
            if self.told == self.fail_after:
                raise RuntimeError(f"the model diverged at result {self.told}")
            if self.log:
                with open(self.log, "a") as log:
                    log.write(json.dumps(result) + "\n")

    def finalize(self):
        if self.log:
            with open(self.log, "a") as log:
                log.write("finalized\n")


@tessera.simulation("spawning")
class Spawning:
    """Starts a subprocess that would outlive it, writes its pid to config['pidfile'], then waits."""

    def __init__(self, config):
        self.pidfile = config["pidfile"]

    def run(self, p):
        import subprocess
        child = subprocess.Popen(["sleep", "300"])
        with open(self.pidfile, "w") as out:
            out.write(str(child.pid))
        time.sleep(float(p[0]))
        return 0.0
