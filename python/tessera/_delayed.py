"""tessera.delayed: calls of task functions (registered names or Python callables) made lazily, as dask.delayed's are. Nothing runs until
the values are computed (tessera.compute, Client.compute, .compute()) or persisted (Client.persist): then
each call becomes one task, its delayed arguments the futures of the tasks before it, all sent at once, and a
call shared by several values runs once.

    inc = tessera.delayed("inc")
    total = tessera.delayed(lambda a, b: a + b)(inc(1), inc(2))
    total.compute()  # 5
"""

import itertools

from . import _checks, _client_code

_keys = itertools.count()


class Delayed:
    """One call not made yet: a registered function on literal values and other delayed values; or, once
    persisted, the future of its task."""

    __slots__ = ("_function", "_args", "_key", "_future")

    def __init__(self, function, args, future=None):
        self._function = function
        self._args = args
        self._key = "%s-%d" % (_label(function), next(_keys))
        self._future = future

    @property
    def key(self):
        """A name for this call, unique in this process ('add-7')."""
        return self._key

    def compute(self, client=None):
        """Runs what this value needs and returns its result."""
        from ._cluster import compute

        return compute(self, client=client)

    def __repr__(self):
        return "Delayed(%r%s)" % (self._key, ", persisted" if self._future is not None else "")


class _DelayedFunction:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __call__(self, *args):
        for i, arg in enumerate(args):
            if isinstance(arg, (list, tuple, set, dict)) and any(_holds_delayed(x) for x in _items(arg)):
                raise TypeError("argument %d of delayed(%r): a %s holding delayed values; pass each as an "
                                "argument of its own" % (i, _label(self._name), type(arg).__name__))
        return Delayed(self._name, args)

    def __repr__(self):
        return "delayed(%r)" % _label(self._name)


def _label(function):
    """A registered name as itself, a callable by its name ('<lambda>' for a lambda)."""
    return function if isinstance(function, str) else getattr(function, "__name__", type(function).__name__)


def _items(container):
    return container.values() if isinstance(container, dict) else container


def _holds_delayed(value):
    if isinstance(value, Delayed):
        return True
    if isinstance(value, (list, tuple, set, dict)):
        return any(_holds_delayed(x) for x in _items(value))
    return False


def delayed(function):
    """A delayed version of `function`: the name of a task function the cluster has (from a plugin or a
    Python module it imported), or a Python callable (pickled with cloudpickle when computed, run by the
    workers). Calling it records the call and returns a Delayed."""
    if _client_code.is_code(function):
        return _DelayedFunction(function)
    if not isinstance(function, str):
        raise TypeError("tessera.delayed: give a callable or the name a task function is registered under "
                        "(such as 'inc'); got %s" % type(function).__name__)
    return _DelayedFunction(_checks.text("delayed: function", function))


def submit_all(values, client):
    """Sends every call the delayed `values` need, each once (their own order: arguments first); the futures
    of `values`, in order."""
    futures = {}  # id(Delayed) -> Future

    def future_of(root):
        # Depth-first without recursion: a chain of a hundred thousand calls is a long list, not a deep stack.
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in futures:
                continue
            if node._future is not None:
                futures[id(node)] = node._future
                continue
            if not ready:
                stack.append((node, True))
                stack.extend((arg, False) for arg in node._args
                             if isinstance(arg, Delayed) and id(arg) not in futures)
                continue
            args = [futures[id(a)] if isinstance(a, Delayed) else a for a in node._args]
            futures[id(node)] = client.submit(node._function, *args)
        return futures[id(root)]

    return [future_of(v) for v in values]


def persist(values, client):
    """The same values, each now the future of its task (which runs from now on)."""
    futures = submit_all(values, client)
    return [Delayed(v._function, (), future=f) for v, f in zip(values, futures)]


def from_graph(graph, keys):
    """Delayed values for `keys` of a Dask-style graph: a dict whose values are tasks, tuples
    (registered function name, *arguments), or literal values; an argument that is a key of the graph is
    that task's result. Refused naming the key: a cycle, or a key that is not in the graph."""
    if not isinstance(graph, dict):
        raise TypeError("get: the graph is a %s, not a dict of key -> (function name, *arguments)"
                        % type(graph).__name__)
    built = {}
    for wanted in keys:
        if not _is_key(graph, wanted):
            raise KeyError("get: key %r is not in the graph" % (wanted,))
        # Depth-first without recursion; `open_keys` holds the keys on the current path, to name a cycle.
        stack, open_keys = [(wanted, False)], []
        while stack:
            key, ready = stack.pop()
            if key in built:
                continue
            task = graph[key]
            refs = [a for a in task[1:] if _is_key(graph, a)] if _is_task(task) else []
            if not ready:
                if key in open_keys:
                    raise ValueError("get: the graph has a cycle: %s" % " -> ".join(
                        map(repr, open_keys[open_keys.index(key):] + [key])))
                open_keys.append(key)
                stack.append((key, True))
                for ref in refs:
                    if ref not in built:
                        if ref in open_keys:
                            raise ValueError("get: the graph has a cycle: %s" % " -> ".join(
                                map(repr, open_keys[open_keys.index(ref):] + [ref])))
                        stack.append((ref, False))
                continue
            open_keys.remove(key)
            if _is_task(task):
                args = [built[a] if _is_key(graph, a) else a for a in task[1:]]
                built[key] = delayed(task[0])(*args)
            else:
                built[key] = task
    return [built[k] for k in keys]


def _is_task(value):
    return isinstance(value, tuple) and len(value) > 0 and isinstance(value[0], str)


def _is_key(graph, value):
    try:
        return value in graph
    except TypeError:  # unhashable: a list or dict argument is a literal
        return False
