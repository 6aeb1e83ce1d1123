"""Python code a node runs by name: @tessera.task, @tessera.simulation and @tessera.generator record
functions and classes in the modules a node imports ([plugins] python in its TOML, LocalCluster(python=)).
The decorators return what they were given unchanged, so the module stays usable as plain Python."""

import re

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")

tasks = {}
simulations = {}
generators = {}


def _check_name(what, name, obj):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"@tessera.{what}: the name {name!r} of {getattr(obj, '__qualname__', obj)!r} is not "
                         "a name (letters, digits and _ . : -, starting with a letter or _, at most 128)")
    return name


def _record(table, what, name, obj):
    known = table.get(name)
    if known is not None and known is not obj and (
            getattr(known, "__module__", None), getattr(known, "__qualname__", None)) != (
            getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)):
        raise ValueError(f"@tessera.{what}: the name '{name}' is taken by {known.__module__}.{known.__qualname__}")
    table[name] = obj
    return obj


def task(fn=None, *, name=None):
    """Registers a function as a task function: @tessera.task or @tessera.task(name="square")."""
    def register(f):
        if not callable(f):
            raise TypeError(f"@tessera.task: {f!r} is not callable")
        return _record(tasks, "task", _check_name("task", name or f.__name__, f), f)
    if fn is not None and not isinstance(fn, str):
        return register(fn)
    if isinstance(fn, str):
        name = fn
    return register


def _class_decorator(table, what, name, factories=False):
    def register(cls):
        if not (isinstance(cls, type) or (factories and callable(cls))):
            raise TypeError(f"@tessera.{what}: {cls!r} is not a class" + (" or a function" if factories else ""))
        return _record(table, what, _check_name(what, name or cls.__name__, cls), cls)
    if isinstance(name, type):  # used bare: @tessera.simulation
        cls, name = name, None
        return register(cls)
    return register


def simulation(name=None):
    """Registers a class as a simulation: built once per simulation actor with the stream's config
    (a dict), then run(p) per parameter set. Optional class attributes: `parameters` (names: run gets a
    dict of them) and `outputs` (names: run may return a dict of them)."""
    return _class_decorator(simulations, "simulation", name)


def generator(name=None):
    """Registers a gest-api generator: a class built with the ensemble's generator config (a dict), or a
    function of that config that returns one (a generator from a library, such as libEnsemble's or
    Xopt's, built unchanged). It has suggest(n) -> list of dicts, ingest(results) and optionally
    finalize(); its variables and outputs are its class's `parameters` and `outputs`, else its VOCS's
    variable and objective names."""
    return _class_decorator(generators, "generator", name, factories=True)
