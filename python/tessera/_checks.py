"""Argument checks with errors that name the argument, before anything reaches C++."""

import math
import numbers
import re


def count(name, value, low, high):
    """An int in [low, high] (bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return int(value)


def seconds(name, value, high=30 * 24 * 3600.0):
    """A finite number of seconds in [0, high]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or not 0 <= value <= high:
        raise ValueError(f"{name} must be a finite number of seconds in [0, {high:g}], got {value}")
    return value


def fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not (math.isfinite(value) and 0 < value <= 1):
        raise ValueError(f"{name} must be in (0, 1], got {value}")
    return value


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def memory(name, value):
    """Bytes, as an int or as Dask writes them ("4GB", "512 MiB"); None or 0: no limit."""
    if value is None:
        return 0
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([a-zA-Z]*)\s*", value)
        if not match or match.group(2).lower() not in _UNITS:
            raise ValueError(f"{name} must be a number of bytes or a size such as \"4GB\" or \"512MiB\", got {value!r}")
        value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of bytes or a size string, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or value >= 2**63:
        raise ValueError(f"{name} must be a finite number of bytes in [0, 2**63), got {value}")
    return int(value)


def text(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")
    return value
