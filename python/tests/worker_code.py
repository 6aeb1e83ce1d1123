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
