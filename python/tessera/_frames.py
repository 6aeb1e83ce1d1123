"""NumPy and pandas at the edges of streams and result queries: push_many from an array or DataFrame,
iteration over a stream's results, and stored results as arrays and frames."""

import numpy as np

from . import _tessera


# --- streams ---
def _push_many(self, data, priority=0.0):
    """Pushes every row of a 2-D array or DataFrame (one number per set for 1-D) as a parameter set;
    returns the range of their ids."""
    if hasattr(data, "to_numpy") and hasattr(data, "columns"):  # a pandas DataFrame
        data = data.to_numpy(dtype=np.float64)
    rows = np.asarray(data)
    if rows.dtype.kind not in "fiub":
        raise _tessera.ValueTypeError(f"push_many({self.simulation!r}): rows must be numbers, got dtype {rows.dtype}")
    first = self._push_rows(rows, float(priority))
    return range(first, first + len(rows))


def _stream_iter(self):
    return self


def _stream_next(self):
    record = self.next()
    if record is None:
        raise StopIteration
    return record


def _stream_exit(self, *exc):
    self.close()


_tessera.Stream.push_many = _push_many
_tessera.Stream.__iter__ = _stream_iter
_tessera.Stream.__next__ = _stream_next
_tessera.Stream.__enter__ = lambda self: self
_tessera.Stream.__exit__ = _stream_exit


# --- result queries ---
def _to_numpy(self, field="result"):
    """Stored results in id order: "result" (NaN for failed sets), "parameters" or "id" as an array;
    (n,) for one number per set, (n, k) for k."""
    if field not in ("result", "parameters", "id"):
        raise ValueError(f"to_numpy: field must be \"result\", \"parameters\" or \"id\", got {field!r}")
    columns = self._columns(parameters=(field == "parameters"))
    out = columns[field]
    if out is None:
        raise _tessera.ValueTypeError(
            f"to_numpy: the {field}s of stream {self.stream} are not numbers (or not all of one length): "
            "use to_pandas() for an object column")
    return out


def _to_pandas(self):
    """Stored results in id order as a DataFrame: id, the parameters and the result's elements (by the
    stream's names for them: a pushed CSV's header, a program's `parameters` and `outputs`; else
    parameters[i] and result[j]), failed, error, and a program's exit_status."""
    import json

    import pandas as pd

    summary = json.loads(self.to_text("names"))  # the stream's record alone, no scan
    columns = self._columns(parameters=True)
    frame = {"id": columns["id"]}

    def spread(name, values, names):
        if values is None:
            return False
        width = 1 if values.ndim == 1 else values.shape[1]
        labels = names if len(names) == width else (
            [name] if values.ndim == 1 else [f"{name}[{j}]" for j in range(width)])
        for j, label in enumerate(labels):
            frame[label] = values if values.ndim == 1 else values[:, j]
        return True

    spread("parameters", columns["parameters"], summary.get("parameter_names") or [])
    if not spread("result", columns["result"], summary.get("result_names") or []):
        frame["result"] = self._columns(parameters=False, objects=True)["objects"]
    frame["failed"] = columns["failed"]
    frame["error"] = columns["error"]
    if "exit_status" in columns:
        frame["exit_status"] = columns["exit_status"]
    return pd.DataFrame(frame)


_tessera.ResultQuery.to_numpy = _to_numpy
_tessera.ResultQuery.to_pandas = _to_pandas
_tessera.ResultQuery.to_csv = lambda self: self.to_text("csv")
_tessera.ResultQuery.to_json = lambda self: self.to_text("json")
_tessera.ResultQuery.__len__ = lambda self: self.count()
