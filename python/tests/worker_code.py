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
