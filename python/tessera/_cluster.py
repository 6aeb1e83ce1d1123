"""LocalCluster and Client with Dask's shape: a cluster in this process or a scheduler node's address,
futures by registered name, streams, ensembles and result queries."""

import collections.abc
import json
import os
import sys
import threading

from . import _checks, _client_code, _delayed, _tessera

_current = threading.local()
_last = [None]


def current_client():
    """The client made last (in this thread, else in any): what Array.compute uses when given none."""
    client = getattr(_current, "client", None) or _last[0]
    if client is None or client._state is None:
        raise RuntimeError("no open tessera.Client: make one (tessera.Client(cluster)) or pass client=")
    return client


class LocalCluster:
    """A scheduler and `workers` workers of `threads_per_worker` compute threads each, in this process.

    memory_limit is per worker: bytes, or a size such as "4GB"; past it results spill to data_dir.
    plugins are loaded into this process first (see load_plugin). python names Python modules (files
    or importable module names) whose @tessera.task functions and @tessera.simulation classes the
    workers run by name, in interpreter processes of their own (this interpreter, this tessera package)."""

    def __init__(self, workers=1, threads_per_worker=0, memory_limit=0, plugins=(), *, data_dir="",
                 dashboard="", actor_threads=0, memory_target_fraction=0.6, memory_pause_fraction=0.8,
                 python=()):
        workers = _checks.count("LocalCluster: workers", workers, 1, 4096)
        threads = _checks.count("LocalCluster: threads_per_worker", threads_per_worker, 0, 4096)
        limit = _checks.memory("LocalCluster: memory_limit", memory_limit)
        actors = _checks.count("LocalCluster: actor_threads", actor_threads, 0, 4096)
        target = _checks.fraction("LocalCluster: memory_target_fraction", memory_target_fraction)
        pause = _checks.fraction("LocalCluster: memory_pause_fraction", memory_pause_fraction)
        if isinstance(plugins, (str, bytes, os.PathLike)):
            plugins = [plugins]
        for plugin in plugins:
            _tessera.load_plugin(os.fspath(plugin))
        if isinstance(python, (str, os.PathLike)):
            python = [python]
        python = [os.fspath(m) for m in python]
        for m in python:
            if not isinstance(m, str) or not m:
                raise TypeError(f"LocalCluster: python takes files or module names, not {m!r}")
        # Python code (the modules', and functions this process sends) runs in this interpreter's kind.
        package = os.path.dirname(os.path.dirname(os.path.abspath(_tessera.__file__)))
        self.python = _tessera._register_python(python, sys.executable, package)
        self._cluster = _tessera._LocalCluster(
            workers, threads, limit, target, pause, _checks.text("LocalCluster: data_dir", data_dir),
            _checks.text("LocalCluster: dashboard", dashboard), actors)

    def _engine(self):
        if self._cluster is None:
            raise RuntimeError("this LocalCluster is closed")
        return self._cluster

    @property
    def workers(self):
        return self._engine().workers

    @property
    def threads_per_worker(self):
        return self._engine().threads_per_worker

    @property
    def dashboard_link(self):
        return self._engine().dashboard_link

    def scale(self, workers):
        self._engine().scale(_checks.count("LocalCluster.scale: workers", workers, 1, 4096))

    def wait_for_workers(self, workers, timeout=30.0):
        return self._engine().wait_for_workers(
            _checks.count("wait_for_workers: workers", workers, 1, 4096),
            _checks.seconds("wait_for_workers: timeout", timeout))

    def status(self):
        """The scheduler's counters and each worker's memory, as `tessera status --json` gives them."""
        return json.loads(self._engine().status_json())

    def close(self):
        """Lets the cluster go; it stops once its clients (and their futures and streams) are gone too."""
        self._cluster = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._cluster is None:
            return "<tessera.LocalCluster closed>"
        return f"<tessera.LocalCluster workers={self.workers} threads_per_worker={self.threads_per_worker}>"


def _client_config(path):
    """The address and CURVE keys of a client config TOML ([client] scheduler; [security]
    public_key_file, secret_key_file, scheduler_public_key: a key or a file), as `tessera slurm` writes
    it; key paths are relative to the file."""
    import tomllib

    path = os.fspath(path)
    try:
        with open(path, "rb") as file:
            config = tomllib.load(file)
    except OSError as error:
        raise ValueError(f"Client: config: cannot read {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"Client: config: {path}: {error}") from None
    base = os.path.dirname(os.path.abspath(path))

    def text(table, key):
        value = config.get(table, {}).get(key, "")
        if not isinstance(value, str):
            raise ValueError(f"Client: config: {path}: {table}.{key} must be a string")
        return value

    def key_file(value, what):
        file = value if os.path.isabs(value) else os.path.join(base, value)
        try:
            with open(file, encoding="ascii", errors="replace") as handle:
                key = handle.read(256).strip()
        except OSError as error:
            raise ValueError(f"Client: config: {path}: security.{what}: cannot read {file}: "
                             f"{error.strerror}") from None
        if len(key) != 40:
            raise ValueError(f"Client: config: {path}: security.{what}: {file} does not hold a CURVE key")
        return key

    address = text("client", "scheduler")
    if not address:
        raise ValueError(f"Client: config: {path} has no [client] scheduler")
    keys = {}
    if text("security", "secret_key_file") or text("security", "public_key_file"):
        keys["public_key"] = key_file(text("security", "public_key_file"), "public_key_file")
        keys["secret_key"] = key_file(text("security", "secret_key_file"), "secret_key_file")
        scheduler = text("security", "scheduler_public_key")
        is_key = len(scheduler) == 40 and not os.path.exists(os.path.join(base, scheduler))
        keys["scheduler_public_key"] = scheduler if is_key else key_file(scheduler, "scheduler_public_key")
    return address, keys


class Client:
    """Submits work to a LocalCluster, or to a scheduler node at "tcp://host:port" (with CURVE keys
    when the node has them), or to the one a client config names (config=, as `tessera slurm` writes
    it; inside `tessera slurm -- COMMAND`, TESSERA_CLIENT_CONFIG names it). With none of these, starts a
    LocalCluster of its own (Dask's Client(n_workers=, threads_per_worker=, python=) sizes it).

    Functions are Python callables, or names: of this process's registry (plugins=), or the cluster's."""

    def __init__(self, address=None, *, name="python-client", public_key="", secret_key="",
                 scheduler_public_key="", heartbeat_timeout=3.0, reconnect_timeout=30.0, plugins=(),
                 config=None, n_workers=None, threads_per_worker=0, python=()):
        if config is None and address is None and os.environ.get("TESSERA_CLIENT_CONFIG"):
            config = os.environ["TESSERA_CLIENT_CONFIG"]
        if config is not None:
            if address is not None:
                raise ValueError("Client: give an address or config=, not both")
            address, keys = _client_config(config)
            public_key = public_key or keys.get("public_key", "")
            secret_key = secret_key or keys.get("secret_key", "")
            scheduler_public_key = scheduler_public_key or keys.get("scheduler_public_key", "")
        if isinstance(plugins, (str, bytes, os.PathLike)):
            plugins = [plugins]
        for plugin in plugins:
            _tessera.load_plugin(os.fspath(plugin))
        self._own_cluster = None
        if address is None:
            self._own_cluster = address = LocalCluster(
                workers=1 if n_workers is None else n_workers, threads_per_worker=threads_per_worker,
                python=python)
        elif n_workers is not None or threads_per_worker or python:
            raise ValueError("Client: n_workers, threads_per_worker and python size a cluster of the client's "
                             "own; give them to LocalCluster (or the node's config) instead")
        self.cluster = address if isinstance(address, LocalCluster) else None
        if isinstance(address, LocalCluster):
            self._state = _tessera._Client(address._engine())
            self.address = "local"
        else:
            _checks.text("Client: address", address)
            self._state = _tessera._Client(
                address, _checks.text("Client: name", name), _checks.text("Client: public_key", public_key),
                _checks.text("Client: secret_key", secret_key),
                _checks.text("Client: scheduler_public_key", scheduler_public_key),
                _checks.seconds("Client: heartbeat_timeout", heartbeat_timeout, 3600.0),
                _checks.seconds("Client: reconnect_timeout", reconnect_timeout, 30 * 24 * 3600.0))
            self.address = address
        _current.client = self
        _last[0] = self

    def _open(self):
        if self._state is None:
            raise RuntimeError("this Client is closed")
        return self._state

    # --- futures ---
    def submit(self, function, *args):
        """Runs `function` on `args` (values or futures); a Future. `function` is the name of a task
        function the cluster has, or a Python callable (pickled with cloudpickle, run by the workers)."""
        if _client_code.is_code(function):
            name = _client_code.task_name(len(args), "submit")
            return self._open().submit(name, _client_code.task_header(function, "submit"), *args)
        return self._open().submit(_checks.text("submit: function", function), *args)

    def map(self, function, *iterables):
        """One task per element of the iterables (zipped); a list of Futures. `function` as for submit:
        a callable is pickled once for all of them."""
        if _client_code.is_code(function):
            name = _client_code.task_name(len(iterables), "map")
            return self._open().map(name, *iterables, leading=[_client_code.task_header(function, "map")])
        return self._open().map(_checks.text("map: function", function), *iterables)

    def status(self):
        """What the scheduler is doing, as `tessera status --json` says it: a dict (name, workers, clients,
        tasks by state, checkpoints, each worker's memory)."""
        return json.loads(self._open().status_json())

    def workers(self):
        """The scheduler's workers, as `tessera workers --json` lists them: a list of dicts."""
        return json.loads(self._open().workers_json())

    def functions(self):
        """The task functions the cluster can run, as its scheduler has them: a list of dicts (name,
        argument_types, result_type, identity). `submit` and `map` call any of them by name."""
        return self._open().functions()

    def simulations(self):
        """The simulations streams may name: a list of dicts (name, program, parameters, outputs, arity,
        parameter_type, result_type, cores, gpus, command, identity)."""
        return self._open().simulations()

    def gather(self, futures, timeout=None):
        """The results of futures, in the shape they come in, as dask.distributed's gather gives them: a
        Future's result, a list's (or tuple's) results in a list (tuple), a dict's by its keys, nested as
        deep as they go; anything else is returned as it is. The first failure, in order, is raised."""
        def results_of(x):
            if isinstance(x, _tessera.Future):
                return x.result(timeout)
            if isinstance(x, dict):
                return {key: results_of(value) for key, value in x.items()}
            if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple
                return type(x)(*(results_of(item) for item in x))
            if isinstance(x, (list, tuple)):
                return type(x)(results_of(item) for item in x)
            # Sets, generators and dict views: their results in a list, in their order.
            if isinstance(x, (set, frozenset, collections.abc.Iterator, collections.abc.KeysView,
                              collections.abc.ValuesView)):
                return [results_of(item) for item in x]
            return x
        return results_of(futures)

    def cancel(self, futures):
        if isinstance(futures, _tessera.Future):
            futures = [futures]
        self._open().cancel(list(futures))

    # --- streams ---
    def stream(self, simulation, max_in_flight=4096, *, pool_size=0, config=None, isolation=None, timeout=0.0,
               retries=0, parameter_names=None):
        """Opens a stream of parameter sets on `simulation`: the name of one the cluster has, or a Python
        class (pickled with cloudpickle; built per simulation instance with `config`, run(p) per set; its
        `parameters` and `outputs` attributes name the columns)."""
        if isinstance(simulation, type):
            simulation, config, parameter_names = _client_code.simulation_class(simulation, config, parameter_names)
        return _tessera._open_stream(
            self._open(), _checks.text("stream: simulation", simulation),
            _checks.count("stream: max_in_flight", max_in_flight, 1, 2**40),
            _checks.count("stream: pool_size", pool_size, 0, 1024), config, isolation,
            _checks.seconds("stream: timeout", timeout), _checks.count("stream: retries", retries, 0, 100),
            list(parameter_names or []))

    def ensemble(self, generator, simulation, budget, *, generator_config=None, max_in_flight=4096, pool_size=0,
                 config=None, isolation=None, timeout=0.0, retries=0):
        """An adaptive ensemble: `generator` proposes the sets of a stream of `simulation`. Either may be a
        registered name; `generator` may be a gest-api generator object (pickled with its state) and
        `simulation` a Python class, as for stream()."""
        if isinstance(simulation, type):
            simulation, config, _ = _client_code.simulation_class(simulation, config, None)
        if not isinstance(generator, str):
            generator, generator_config = _client_code.generator_object(generator, generator_config)
        return _tessera._open_ensemble(
            self._open(), _checks.text("ensemble: generator", generator),
            _checks.text("ensemble: simulation", simulation),
            _checks.count("ensemble: budget", budget, 1, 1_000_000_000), generator_config,
            _checks.count("ensemble: max_in_flight", max_in_flight, 1, 2**40),
            _checks.count("ensemble: pool_size", pool_size, 0, 1024), config, isolation,
            _checks.seconds("ensemble: timeout", timeout), _checks.count("ensemble: retries", retries, 0, 100))

    def results(self, stream):
        """A query over a stream's stored results (a Stream or its id)."""
        stream_id = stream.id if isinstance(stream, _tessera.Stream) else _checks.count(
            "results: stream", stream, 0, 2**64 - 1)
        return _tessera._results(self._open(), stream_id)

    def streams(self):
        """The streams the cluster's store holds, in id order: dicts of id, simulation, state ("open",
        "closing", "finished", or "incomplete": closed before its input ended, or its client lost, with
        "ended_early" saying why), pushed (sets accepted), stored, and input_sets (the sets its client
        said it would push; 0 when it did not say) (`tessera stream list`)."""
        return _tessera._streams(self._open())

    def drop_stream(self, stream):
        """Deletes a finished stream (a Stream or its id): its stored results, its records and the disk
        space they took (`tessera stream drop`). An unknown or unfinished stream raises QueryError."""
        stream_id = stream.id if isinstance(stream, _tessera.Stream) else _checks.count(
            "drop_stream: stream", stream, 1, 2**64 - 1)
        _tessera._drop_stream(self._open(), stream_id)

    # --- arrays ---
    def compute(self, *values):
        """Results of arrays and delayed values (tessera.compute)."""
        return compute(*values, client=self)

    def get(self, graph, keys):
        """Dask's low-level graphs: `graph` maps keys to tasks, (registered function name, *arguments), where
        an argument that is a key is that task's result; the results of `keys` (one key: its result)."""
        single = not isinstance(keys, list)
        wanted = [keys] if single else keys
        values = compute(*_delayed.from_graph(graph, wanted), client=self)
        if len(wanted) == 1:
            values = (values,)
        return values[0] if single else list(values)

    def persist(self, *values):
        """Delayed values whose tasks run from now on (tessera.persist)."""
        return persist(*values, client=self)

    def close(self):
        if _last[0] is self:
            _last[0] = None
        if getattr(_current, "client", None) is self:
            _current.client = None
        self._state = None
        if self._own_cluster is not None:
            self._own_cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<tessera.Client {self.address}{' closed' if self._state is None else ''}>"


def as_completed(futures, timeout=None):
    """Yields the futures as their tasks end (successfully or not)."""
    if timeout is not None:
        timeout = _checks.seconds("as_completed: timeout", timeout, float("inf"))
    return _tessera._AsCompleted(list(futures), timeout)


# --- arrays ---
def _client_state(client):
    return (client or current_client())._open()


def compute(*values, client=None):
    """Computes arrays (in one graph; NumPy arrays, floats for 0-d) and delayed values (each call once, all
    sent together; their results); anything else is returned as it is. One result per argument."""
    arrays = [i for i, v in enumerate(values) if isinstance(v, _tessera.Array)]
    lazy = [i for i, v in enumerate(values) if isinstance(v, _delayed.Delayed)]
    results = list(values)
    if arrays:
        for i, r in zip(arrays, _tessera._compute_all([values[i] for i in arrays], _client_state(client))):
            results[i] = r
    if lazy:
        chosen = client or current_client()
        futures = _delayed.submit_all([values[i] for i in lazy], chosen)
        for i, r in zip(lazy, chosen.gather(futures)):
            results[i] = r
    return results[0] if len(results) == 1 else tuple(results)


def persist(*values, client=None):
    """Starts the delayed values' tasks now; the same values, each backed by its task's future (arrays:
    Array.persist)."""
    chosen = client or current_client()
    out = []
    for i, v in enumerate(values):
        if not isinstance(v, _delayed.Delayed):
            raise TypeError("persist: argument %d is a %s, not a delayed value" % (i, type(v).__name__))
    out = _delayed.persist(list(values), chosen)
    return out[0] if len(out) == 1 else tuple(out)


def _array_compute(self, client=None):
    return self._compute(_client_state(client))


def _array_persist(self, client=None, checkpoint=False):
    return self._persist(_client_state(client), checkpoint)


_tessera.Array.compute = _array_compute
_tessera.Array.persist = _array_persist
_tessera.Array.__array__ = lambda self, dtype=None: (
    self.compute() if dtype is None else self.compute().astype(dtype))


def to_npy(array, path, client=None):
    _tessera._to_npy(array, os.fspath(path), _client_state(client))


def _shape(shape):
    if isinstance(shape, int):
        shape = (shape,)
    return [_checks.count("shape", s, 0, 2**62) for s in shape]


def _chunks(chunks):
    if chunks is None:
        return []
    if isinstance(chunks, int):
        chunks = (chunks,)
    return [_checks.count("chunks", c, 0, 2**62) for c in chunks]


def random(shape, chunks=None, *, backend="cpu", dtype="float64", seed=0, distribution="uniform", low=0.0,
           high=1.0, density=0.01):
    return _tessera._random(_shape(shape), _chunks(chunks), backend, dtype,
                            _checks.count("random: seed", seed, 0, 2**64 - 1), distribution, low, high, density)


def full(shape, value, chunks=None, *, backend="cpu", dtype="float64"):
    return _tessera._full(_shape(shape), float(value), _chunks(chunks), backend, dtype)


def zeros(shape, chunks=None, **options):
    return full(shape, 0.0, chunks, **options)


def ones(shape, chunks=None, **options):
    return full(shape, 1.0, chunks, **options)
