"""Python callables sent to the workers: a function, lambda or callable object is pickled with
cloudpickle and runs as the task function python:call/N (N: its arguments), in the workers' interpreter
processes. The scheduler runs such code only when its security.allow_client_code is on (always for a
LocalCluster; by default for a node listening on loopback only)."""

import inspect
import sys
import weakref

PREFIX = "python:call/"
MAX_ARGUMENTS = 16
# A task's function is pickled once while it lives, as Dask's and Ray's clients do: pickling it again for
# every submit cost a remote call about 100 us (cloudpickle with cold caches). id -> (weak reference,
# header). Classes and generator objects sent with a stream are pickled each time: an object's state is
# what it is now.
_HEADERS = {}
_MAX_HEADERS = 1024


def _versions():
    try:
        import cloudpickle
    except ImportError:
        return f"{sys.version_info.major}.{sys.version_info.minor}", "none"
    return f"{sys.version_info.major}.{sys.version_info.minor}", cloudpickle.__version__


def _offender(function, dumps):
    """The first variable the function refers to that cannot be pickled: 'name' (type), or None."""
    try:
        variables = inspect.getclosurevars(function)
    except (TypeError, ValueError):
        return None
    for kind, table in (("closure variable", variables.nonlocals), ("global", variables.globals)):
        for name, value in table.items():
            try:
                dumps(value)
            except Exception:  # noqa: BLE001 - any failure names this variable
                return f"its {kind} '{name}' (a {type(value).__module__}.{type(value).__qualname__})"
    return None


def task_header(function, where):
    """What a task of `function` carries as its first argument: [python, cloudpickle, pickled bytes];
    pickled on its first use only (what it refers to is sent as it was then)."""
    known = _HEADERS.get(id(function))
    if known is not None and known[0]() is function:
        return list(known[1])
    made = header(function, where)
    try:
        reference = weakref.ref(function)
    except TypeError:  # no weak reference to it: pickled each time
        return made
    if len(_HEADERS) >= _MAX_HEADERS:
        _HEADERS.clear()
    _HEADERS[id(function)] = (reference, tuple(made))
    return made


def header(function, where):
    """A callable, class or object as [python, cloudpickle, pickled bytes], pickled now."""
    try:
        import cloudpickle
    except ImportError:
        raise RuntimeError(f"{where}: sending a Python function to the workers needs cloudpickle "
                           "(Debian: apt install python3-cloudpickle)") from None
    try:
        payload = cloudpickle.dumps(function)
    except Exception as error:  # noqa: BLE001 - re-raised naming what failed
        culprit = _offender(function, cloudpickle.dumps)
        raise TypeError(f"{where}: {getattr(function, '__qualname__', repr(function))} cannot be sent to the "
                        f"workers: {culprit + ' cannot be pickled: ' if culprit else ''}{error}") from error
    python, pickler = _versions()
    return [python, pickler, payload]


def task_name(arguments, where):
    if arguments > MAX_ARGUMENTS:
        raise TypeError(f"{where}: a Python function sent to the workers takes at most {MAX_ARGUMENTS} "
                        f"arguments, got {arguments}")
    return f"{PREFIX}{arguments}"


def is_code(function):
    return callable(function) and not isinstance(function, (str, bytes))


CLASS_SIMULATION = "python:class"
OBJECT_GENERATOR = "python:generator"
CODE_KEY = "tessera.python_code"
OUTPUTS_KEY = "tessera.outputs"
PARAMETERS_KEY = "tessera.parameters"


def _names(cls, attribute):
    names = getattr(cls, attribute, None)
    if names is None:
        return []
    if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
        raise TypeError(f"{cls.__qualname__}.{attribute} must be a list of names, not {names!r}")
    return list(names)


def simulation_class(cls, config, parameter_names):
    """A simulation class sent with its stream: (the simulation that runs it, the config carrying it,
    the parameter names)."""
    if not callable(getattr(cls, "run", None)):
        raise TypeError(f"stream: {cls.__qualname__} has no run(p) method")
    config = dict(config or {})
    config[CODE_KEY] = header(cls, "stream")
    outputs = _names(cls, "outputs")
    if outputs:
        config[OUTPUTS_KEY] = outputs
    parameters = _names(cls, "parameters")
    if parameters:
        config[PARAMETERS_KEY] = parameters
    return CLASS_SIMULATION, config, parameter_names or parameters or None


def generator_object(generator, generator_config):
    """A gest-api generator object sent with its ensemble, pickled as it is now (its state included)."""
    for method in ("suggest", "ingest"):
        if not callable(getattr(generator, method, None)):
            raise TypeError(f"ensemble: {type(generator).__qualname__} has no {method}() method: a generator "
                            "is a registered name or a gest-api generator object")
    config = dict(generator_config or {})
    config[CODE_KEY] = header(generator, "ensemble")
    return OBJECT_GENERATOR, config
