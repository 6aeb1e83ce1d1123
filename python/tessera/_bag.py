"""tessera.bag: a sequence split into partitions, mapped, filtered and folded by task functions (registered
names or Python callables), as dask.bag's are. Steps are recorded; compute() runs them: each mapped element
is one task (a delayed call), a filter's predicates run first and decide what goes on, and a fold is one
chain of calls per partition and a tree of `combine` calls over the partitions.

    b = tessera.bag.from_sequence(range(100), npartitions=10)
    b.map("square").filter("is_even").fold("add").compute()
    b.map(lambda x: x + 1).filter(lambda x: x % 3 == 0).fold(operator.add).compute()
"""

from . import _checks
from ._delayed import Delayed, delayed

_NO_INITIAL = object()


def from_sequence(seq, npartitions=None, partition_size=None):
    """A bag of the elements of `seq`, in `npartitions` partitions of about equal size (or of
    `partition_size` elements each); by default about 100 elements a partition, as dask.bag does."""
    elements = list(seq)
    if npartitions is not None and partition_size is not None:
        raise ValueError("from_sequence: give npartitions or partition_size, not both")
    if partition_size is not None:
        size = _checks.count("from_sequence: partition_size", partition_size, 1, 1 << 40)
    else:
        if npartitions is None:
            npartitions = max(1, (len(elements) + 99) // 100)
        parts = _checks.count("from_sequence: npartitions", npartitions, 1, 1 << 20)
        size = max(1, -(-len(elements) // parts))
    partitions = [elements[i:i + size] for i in range(0, len(elements), size)] or [[]]
    return Bag(partitions)


class Bag:
    """Partitions of elements and the steps (maps, filters) still to run on them, in order."""

    __slots__ = ("_partitions", "_steps")

    def __init__(self, partitions, steps=()):
        self._partitions = partitions
        self._steps = tuple(steps)  # ("map" | "filter", the registered function's delayed form)

    @property
    def npartitions(self):
        return len(self._partitions)

    def map(self, function):
        """Each element through `function` (a registered name or a Python callable)."""
        return Bag(self._partitions, self._steps + (("map", delayed(function)),))

    def filter(self, predicate):
        """The elements for which `predicate` (a registered name or a Python callable) is true."""
        return Bag(self._partitions, self._steps + (("filter", delayed(predicate)),))

    def fold(self, binop, combine=None, initial=_NO_INITIAL):
        """binop(binop(initial, a), b)... along each partition, then combine (binop when not given) over the
        partitions' results: one value, computed by compute()."""
        return _Fold(self, delayed(binop), delayed(combine if combine is not None else binop), initial)

    def compute(self, client=None):
        """The elements, in order, as a list."""
        return [x for part in self._resolved(client) for x in part]

    def _resolved(self, client):
        # Maps stay delayed calls; a filter needs values, so what comes before it runs first (the elements
        # and their predicates together), and the survivors go on as values.
        from ._cluster import current_client

        chosen = client or current_client()
        partitions = self._partitions
        for kind, call in self._steps:
            if kind == "map":
                partitions = [[call(x) for x in part] for part in partitions]
                continue
            flat = [x for part in partitions for x in part]
            values = _computed(flat + [call(x) for x in flat], chosen)
            verdicts = iter(values[len(flat):])
            survivors = iter(values[:len(flat)])
            partitions = [[v for v, ok in [(next(survivors), next(verdicts)) for _ in part] if ok]
                          for part in partitions]
        flat = iter(_computed([x for part in partitions for x in part], chosen))
        return [[next(flat) for _ in part] for part in partitions]

    def __repr__(self):
        return "tessera.Bag<npartitions=%d>" % self.npartitions


class _Fold:
    """A fold not run yet: compute() gives its value."""

    __slots__ = ("_bag", "_binop", "_combine", "_initial")

    def __init__(self, bag, binop, combine, initial):
        self._bag, self._binop, self._combine, self._initial = bag, binop, combine, initial

    def compute(self, client=None):
        from ._cluster import compute

        partitions = self._bag._resolved(client)
        reduced = []
        for part in partitions:
            items = list(part)
            if self._initial is not _NO_INITIAL:
                items.insert(0, self._initial)
            if not items:
                continue
            acc = items[0]
            for x in items[1:]:
                acc = self._binop(acc, x)
            reduced.append(acc)
        if not reduced:
            if self._initial is _NO_INITIAL:
                raise ValueError("fold of an empty bag without an initial value")
            return self._initial
        while len(reduced) > 1:  # a tree over the partitions
            pairs = [self._combine(reduced[i], reduced[i + 1]) for i in range(0, len(reduced) - 1, 2)]
            reduced = pairs + ([reduced[-1]] if len(reduced) % 2 else [])
        only = reduced[0]
        return compute(only, client=client) if isinstance(only, Delayed) else only

    def __repr__(self):
        return "tessera.bag fold"


def _computed(elements, client):
    """The elements' values, in order (delayed calls all sent at once)."""
    from ._cluster import compute

    if not elements:
        return []
    result = compute(*elements, client=client)
    return [result] if len(elements) == 1 else list(result)
