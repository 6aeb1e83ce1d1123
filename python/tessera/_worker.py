"""A worker's Python process: `python3 -m tessera._worker MODE [NAME] -- MODULE...`.

--describe          imports the modules and writes what they register to descriptor 3, one line each
                    (the node registers them by name); an import that fails is written there as an error.
--serve-simulation  runs one simulation's sets, fed by the worker over descriptor 3 (tessera._tessera._serve).
--serve-tasks       runs the modules' task functions, each set being [name, *arguments].
--serve-generator   runs one generator (gest-api), each set a request: suggest, ingest, done, save, load,
                    finalize.

Started by the worker (actors/simulation_process.cpp), not by users."""

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback

from . import _registry

_MAX_TRACEBACK = 8192
_MAX_FRAMES = 20


def describe(exc, tb=None):
    """The text a failed set carries: the exception's type and message, then a bounded traceback."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__qualname__}"
    head = f"{name}: {exc}" if str(exc) else name
    frames = traceback.format_tb(tb if tb is not None else exc.__traceback__)
    # Our own frames (the call into the user's code) say nothing to the user.
    frames = [f for f in frames if "tessera/_worker.py" not in f][-_MAX_FRAMES:]
    tail = "".join(frames)
    if len(tail) > _MAX_TRACEBACK:
        tail = "...\n" + tail[-_MAX_TRACEBACK:]
    return head + ("\nTraceback (most recent call last):\n" + tail.rstrip() if tail else "")


def _import(module):
    if module.endswith(".py") or os.sep in module:
        path = os.path.abspath(module)
        name = os.path.splitext(os.path.basename(path))[0]
        directory = os.path.dirname(path)
        if directory not in sys.path:
            sys.path.insert(0, directory)  # the file's siblings import as they would beside it
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None:
            raise ImportError(f"{path} is not a Python file")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
        return loaded
    return importlib.import_module(module)


def _import_all(modules):
    for module in modules:
        _import(module)


def _digest(obj):
    """What makes two nodes' definitions of a name the same: where it is and its module's source."""
    try:
        source = inspect.getsourcefile(obj) or inspect.getfile(obj)
        with open(source, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except (OSError, TypeError):
        return "unknown"


def _identity(obj):
    return f"python {obj.__module__}.{obj.__qualname__} source {_digest(obj)}"


def _arity(fn):
    """Positional parameters without defaults: what a call by name must give."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in signature.parameters.values() if p.kind in kinds and p.default is p.empty)


def _names(cls, attribute):
    names = getattr(cls, attribute, None)
    if names is None:
        return []
    if isinstance(names, str) or not all(isinstance(n, str) and n and "," not in n and "\t" not in n
                                         for n in names):
        raise TypeError(f"{cls.__module__}.{cls.__qualname__}.{attribute} must be a list of names "
                        f"(strings without commas), not {names!r}")
    return list(names)


def _resource(cls, attribute, default, least, most):
    """A simulation class's `threads` or `gpus`: an integer in [least, most], the default when absent."""
    value = getattr(cls, attribute, default)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise TypeError(f"{cls.__module__}.{cls.__qualname__}.{attribute} must be an integer in [{least}, {most}], "
                        f"not {value!r}")
    return str(value)


def _describe(modules, out):
    try:
        _import_all(modules)
        lines = []
        for name, fn in _registry.tasks.items():
            lines.append(["task", name, str(_arity(fn)), _identity(fn), fn.__module__, fn.__qualname__])
        for name, cls in _registry.simulations.items():
            for method in ("run",):
                if not callable(getattr(cls, method, None)):
                    raise TypeError(f"simulation '{name}' ({cls.__module__}.{cls.__qualname__}) has no {method}(p)")
            lines.append(["simulation", name, ",".join(_names(cls, "parameters")),
                          ",".join(_names(cls, "outputs")), _identity(cls), cls.__module__, cls.__qualname__,
                          _resource(cls, "threads", 1, 1, 4096), _resource(cls, "gpus", 0, 0, 64)])
        for name, cls in _registry.generators.items():
            lines.append(["generator", name, _identity(cls), cls.__module__, cls.__qualname__])
        for line in lines:
            out.write("\t".join(field.replace("\t", " ").replace("\n", " ") for field in line) + "\n")
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the node, named
        text = describe(exc).replace("\t", " ").replace("\n", "\x1f")
        out.write(f"error\t{text}\n")
        out.flush()
        return 1
    out.flush()
    return 0


CLIENT_CLASS = "python:class"
CLIENT_GENERATOR = "python:generator"
CLIENT_CODE_KEY = "tessera.python_code"


def _client_object(config, what):
    """The class or object a client sent, from the config that carries it (the key taken out)."""
    header = config.pop(CLIENT_CODE_KEY, None)
    if header is None:
        raise LookupError(f"{what}: the config carries no {CLIENT_CODE_KEY} (a client sends it)")
    return _client_code_caller().loads(header)


def _simulation_factory(name):
    if name == CLIENT_CLASS:
        def factory(config):
            config.pop("tessera.outputs", None)
            config.pop("tessera.parameters", None)
            return _simulation_runner(name, _client_object(config, "a Python class sent by a client"), config)
        return factory
    cls = _registry.simulations.get(name)
    if cls is None:
        raise LookupError(f"no module imported here registers simulation '{name}' "
                          f"(it has: {', '.join(sorted(_registry.simulations)) or 'none'})")
    return lambda config: _simulation_runner(name, cls, config)


def _simulation_runner(name, cls, config):
    """run_set of a simulation class's instance: parameters as a dict when it declares them, a dict
    result ordered by its declared outputs."""
    parameters = _names(cls, "parameters")
    outputs = _names(cls, "outputs")
    instance = cls(config)
    run = instance.run

    def run_set(p):
        if parameters:
            p = dict(zip(parameters, p.tolist() if hasattr(p, "tolist") else p))
        result = run(p)
        if isinstance(result, dict):
            if not outputs:
                raise TypeError(f"simulation '{name}' returned a dict: declare its names as "
                                f"outputs = [...] on {cls.__qualname__} so results can be named")
            missing = [k for k in outputs if k not in result]
            if missing:
                raise KeyError(f"simulation '{name}' returned no {', '.join(map(repr, missing))} "
                               f"(its outputs are {outputs})")
            return [float(result[k]) for k in outputs]
        return result
    return run_set


class _GeneratorHost:
    """One gest-api generator and what Tessera keeps beside it: the order of its variables and outputs
    (its class's `parameters` and `outputs`, else its VOCS's variable and objective names, else the keys
    of its first point), and for each id handed out the `_id` the generator gave that point."""

    def __init__(self, name, cls, config):
        self.name = name
        # The names the stream stores results under, when the stream has them (the scheduler adds them).
        stored = list(config.pop("tessera.outputs", None) or [])
        self.instance = cls(config)
        vocs = getattr(self.instance, "vocs", None)
        made = type(self.instance)
        self.parameters = (_names(cls, "parameters") or _names(made, "parameters")
                           or list(getattr(vocs, "variable_names", None) or []))
        self.outputs = (_names(cls, "outputs") or _names(made, "outputs")
                        or list(getattr(vocs, "objective_names", None) or []) or stored)
        self.next_id = 0
        self.their_ids = {}

    def suggest(self, n):
        points = list(self.instance.suggest(int(n)))[:int(n)]
        out = []
        for point in points:
            if not isinstance(point, dict):
                raise TypeError(f"generator '{self.name}': suggest gave a {type(point).__name__}, not a dict of "
                                "variable values")
            if not self.parameters:
                self.parameters = [k for k in point if k != "_id"]
            missing = [k for k in self.parameters if k not in point]
            if missing:
                raise KeyError(f"generator '{self.name}': a suggested point has no {', '.join(map(repr, missing))} "
                               f"(its variables are {self.parameters})")
            if "_id" in point:
                self.their_ids[self.next_id] = point["_id"]
            self.next_id += 1
            out.append([float(point[k]) for k in self.parameters])
        return out

    def ingest(self, tessera_id, parameters, result, error, succeeded):
        values = list(parameters.tolist() if hasattr(parameters, "tolist") else parameters)
        record = dict(zip(self.parameters, values))
        if succeeded:
            numbers = result.tolist() if hasattr(result, "tolist") else result
            if not isinstance(numbers, (list, tuple)):
                numbers = [numbers]
            names = self.outputs or (["f"] if len(numbers) == 1 else [f"f{i}" for i in range(len(numbers))])
            record.update(zip(names, numbers))
        else:
            for k in self.outputs or ["f"]:
                record[k] = float("nan")
            record["_error"] = error
        if tessera_id in self.their_ids:
            record["_id"] = self.their_ids.pop(tessera_id)
        self.instance.ingest([record])

    def done(self):
        done = getattr(self.instance, "done", False)
        return bool(done() if callable(done) else done)

    def save(self):
        """The checkpoint's state; empty (said once on stderr) when the instance cannot be pickled: the
        ensemble goes on, and only a resume after a restart is refused."""
        try:
            import cloudpickle
            return cloudpickle.dumps((self.instance, self.parameters, self.outputs, self.next_id, self.their_ids))
        except Exception as error:  # noqa: BLE001 - any pickling failure means no resumable state
            if not getattr(self, "_said_unpicklable", False):
                self._said_unpicklable = True
                sys.stderr.write(f"[tessera] generator '{self.name}' cannot be pickled, so its ensemble cannot "
                                 f"resume after a restart: {describe(error)}\n")
            return b""

    def load(self, state):
        import pickle
        if not state:
            raise RuntimeError(f"generator '{self.name}' could not be pickled at its last checkpoint: it cannot "
                               "resume where it was")
        self.instance, self.parameters, self.outputs, self.next_id, self.their_ids = pickle.loads(state)

    def finalize(self):
        finalize = getattr(self.instance, "finalize", None)
        if callable(finalize):
            finalize()

    def __call__(self, request):
        op, *arguments = request
        if op == "suggest":
            return self.suggest(*arguments)
        if op == "ingest":
            return self.ingest(*arguments)
        if op == "done":
            return self.done()
        if op == "save":
            return self.save()
        if op == "load":
            return self.load(*arguments)
        if op == "finalize":
            return self.finalize()
        raise ValueError(f"generator '{self.name}': unknown request {op!r}")


def _generator_factory(name):
    if name == CLIENT_GENERATOR:
        def factory(config):
            instance = _client_object(config, "a Python generator sent by a client")
            return _GeneratorHost(name, lambda _config: instance, config)
        return factory
    cls = _registry.generators.get(name)
    if cls is None:
        raise LookupError(f"no module imported here registers generator '{name}' "
                          f"(it has: {', '.join(sorted(_registry.generators)) or 'none'})")
    return lambda config: _GeneratorHost(name, cls, config)


CLIENT_CODE = "python:call/"
_MAX_CACHED_CLIENT_FUNCTIONS = 256


def versions():
    """What a client's pickled function must have been made with: Python major.minor, cloudpickle."""
    try:
        import cloudpickle
        pickler = cloudpickle.__version__
    except ImportError:
        pickler = "none"
    return f"{sys.version_info.major}.{sys.version_info.minor}", pickler


class _ClientCode:
    """Functions, classes and objects a client pickled: checked against this worker's versions, unpickled
    once per pickle (the last 256 kept by their bytes)."""

    def __init__(self):
        self.ours = versions()
        self.loaded = {}

    def loads(self, header):
        python, pickler, payload = header
        if (python, pickler) != self.ours:
            raise RuntimeError(f"the client pickled this code with Python {python} and cloudpickle {pickler}; "
                               f"this worker runs Python {self.ours[0]} with cloudpickle {self.ours[1]}: run the "
                               "client with the workers' Python and cloudpickle versions")
        obj = self.loaded.get(payload)
        if obj is None:
            import pickle
            obj = pickle.loads(payload)  # cloudpickle's output is a pickle: its loads is pickle's
            if len(self.loaded) >= _MAX_CACHED_CLIENT_FUNCTIONS:
                self.loaded.clear()
            self.loaded[payload] = obj
        return obj

    def __call__(self, header, *arguments):
        return self.loads(header)(*arguments)


def _client_code_caller():
    return _ClientCode()


def _tasks_factory(config):
    functions = _registry.tasks
    client_code = _client_code_caller()

    def call(job):
        name, *arguments = job
        if name.startswith(CLIENT_CODE):
            return client_code(*arguments)
        fn = functions.get(name)
        if fn is None:
            raise LookupError(f"no module imported here registers task '{name}'")
        return fn(*arguments)
    return call


def main(argv):
    if "--" not in argv or len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    split = argv.index("--")
    mode, rest, modules = argv[1], argv[2:split], argv[split + 1:]
    if mode == "--describe":
        with os.fdopen(3, "w", encoding="utf-8") as out:
            return _describe(modules, out)
    # The worker's job frames are on descriptor 3; nothing here may print to it.
    from . import _tessera
    try:
        _import_all(modules)
        if mode == "--serve-simulation":
            factory = _simulation_factory(rest[0])
        elif mode == "--serve-tasks":
            factory = _tasks_factory
        elif mode == "--serve-generator":
            factory = _generator_factory(rest[0])
        else:
            sys.stderr.write(f"tessera._worker: unknown mode {mode}\n")
            return 2
        name = rest[0] if rest else "python tasks"
    except BaseException as exc:  # noqa: BLE001 - every set then fails with this, named
        text = describe(exc)

        def factory(config, text=text):
            raise RuntimeError(f"the Python modules could not be imported on this worker: {text}")
        name = rest[0] if rest else "python tasks"
    _tessera._serve(name, factory, describe)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
