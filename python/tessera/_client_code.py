"""Python callables sent to the workers: a function, lambda or callable object is pickled with
cloudpickle and runs as the task function python:call/N (N: its arguments), in the workers' interpreter
processes. The scheduler runs such code only when its security.allow_client_code is on (always for a
LocalCluster; by default for a node listening on loopback only)."""

import inspect
import sys

PREFIX = "python:call/"
MAX_ARGUMENTS = 16


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


def header(function, where):
    """What a task of `function` carries as its first argument: [python, cloudpickle, pickled bytes]."""
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
