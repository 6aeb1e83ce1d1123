"""Tessera from Python: clusters, futures, streams of parameter sets, result queries, chunked arrays
and GLMs, over Tessera's C++ client library.

    import tessera
    with tessera.LocalCluster(workers=2, plugins=["libmy_sims.so"]) as cluster:
        client = tessera.Client(cluster)
        futures = client.map("square", range(10))
        print(client.gather(futures))

Functions, simulations and generators are registered by name, in Python modules a node imports
(@tessera.task, @tessera.simulation, @tessera.generator; LocalCluster(python=[...])) or in C++ plugins
(tessera_add_plugin); this package submits them by name and converts arguments and results to and from
Python and NumPy.
"""

from . import _tessera
from ._tessera import (
    Array,
    ConnectionError,
    ConnectionLost,
    FitError,
    Future,
    KernelError,
    PluginError,
    QueryError,
    Record,
    ResultQuery,
    StoredResult,
    Stream,
    SubmissionError,
    TaskFailed,
    ValueTypeError,
    concatenate,
    curve_keypair,
    from_npy,
    from_numpy,
    functions,
    linalg,
    load_plugin,
    register_program,
    simulations,
    where,
)
from ._cluster import (
    Client,
    LocalCluster,
    as_completed,
    compute,
    current_client,
    full,
    persist,
    ones,
    random,
    to_npy,
    zeros,
)
from ._delayed import Delayed, delayed
from ._progress import progress
from ._registry import generator, simulation, task
from . import _bag as bag
from . import _glm as glm
from . import _frames  # noqa: F401  (adds to_numpy and to_pandas to ResultQuery, push_many to Stream)

__version__ = _tessera.__version__

__all__ = [
    "Array", "Client", "ConnectionError", "Delayed", "ConnectionLost", "FitError", "Future", "KernelError",
    "LocalCluster", "PluginError", "QueryError", "Record", "ResultQuery", "StoredResult", "Stream",
    "SubmissionError", "TaskFailed", "ValueTypeError", "as_completed", "bag", "compute", "concatenate",
    "current_client", "curve_keypair", "delayed", "from_npy", "from_numpy", "full", "functions", "glm", "linalg", "load_plugin",
    "generator", "ones", "persist", "progress", "random", "register_program", "simulation", "simulations", "task", "to_npy",
    "where", "zeros",
]
