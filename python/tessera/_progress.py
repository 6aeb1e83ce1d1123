"""tessera.progress: how far futures or a stream are, as dask.distributed's progress shows it. In a
terminal one line is redrawn in place; in Jupyter a bar updates in its cell; anywhere else (a log, a pipe)
a plain line is printed at each tenth and at most every five seconds. Each ends with the totals.

    squares [##############--------------]  48%  4,800/10,000  2 erred  1,550/s  3.1 s, about 3 s left
    squares: 4,800/10,000 done (48%), 2 erred, 1,550/s, 3.1 s, about 3 s left
"""

import html
import sys
import time

from . import _tessera

_WIDTH = 30  # characters of a terminal's bar
_RATE_WINDOW = 10.0  # seconds the rate is measured over


def _grouped(n):
    return f"{n:,}"


def _duration(seconds):
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole // 60 % 60:02d} min"


def _rate_text(per_second):
    if per_second >= 100:
        return f"{int(round(per_second)):,}/s"
    return f"{per_second:.1f}/s" if per_second >= 1 else f"{per_second:.2f}/s"


def _futures_in(work):
    """The futures of a Future or a list, tuple, set or dict of them (nested as deep as they come)."""
    if isinstance(work, _tessera.Future):
        return [work]
    if isinstance(work, dict):
        work = work.values()
    if isinstance(work, (list, tuple, set, frozenset, type({}.values()))):
        found = []
        for item in work:
            found.extend(_futures_in(item))
        return found
    raise TypeError(f"progress: {type(work).__name__} is neither a Stream nor futures (a Future, or a "
                    f"list, tuple, set or dict of them)")


class _Counts:
    """What has ended of how many, and how fast (over the last ten seconds)."""

    def __init__(self, label, total):
        self.label, self.total = label, total
        self.done = self.erred = self.cancelled = 0
        self.started = time.monotonic()
        self._samples = []  # (when, ended)

    @property
    def ended(self):
        return self.done + self.erred + self.cancelled

    def figures(self, last):
        now = time.monotonic()
        elapsed = now - self.started
        self._samples.append((now, self.ended))
        while len(self._samples) > 2 and now - self._samples[1][0] >= _RATE_WINDOW:
            self._samples.pop(0)
        since, before = self._samples[0]
        if last or now - since < 0.5:
            rate = self.ended / elapsed if elapsed >= 0.5 else None
        else:
            rate = (self.ended - before) / (now - since)
        left = None
        if not last and rate and self.total > self.ended:
            left = (self.total - self.ended) / rate
        fraction = min(1.0, self.ended / self.total) if self.total else 1.0
        return fraction, rate, elapsed, left

    def parts(self, rate, elapsed, left):
        extra = []
        if self.erred:
            extra.append(f"{_grouped(self.erred)} erred")
        if self.cancelled:
            extra.append(f"{_grouped(self.cancelled)} cancelled")
        if rate:
            extra.append(_rate_text(rate))
        extra.append(f"{elapsed:.1f} s" + (f", about {_duration(left)} left" if left is not None else ""))
        return extra


class _TerminalBar:
    def __init__(self, out):
        self.out, self.every, self._drawn, self._width = out, 0.1, 0.0, 0

    def due(self, counts):
        return time.monotonic() - self._drawn >= self.every

    def draw(self, counts, last):
        self._drawn = time.monotonic()
        fraction, rate, elapsed, left = counts.figures(last)
        filled = int(fraction * _WIDTH)
        line = (f"{counts.label + ' ' if counts.label else ''}[{'#' * filled}{'-' * (_WIDTH - filled)}] "
                f"{int(fraction * 100):3d}%  {_grouped(counts.ended)}/{_grouped(counts.total)}  "
                + "  ".join(counts.parts(rate, elapsed, left)))
        padding = " " * max(0, self._width - len(line))  # over what a longer line left
        self._width = len(line)
        self.out.write("\r" + line + padding + ("\n" if last else ""))
        self.out.flush()


class _PlainLines:
    def __init__(self, out):
        self.out, self.every, self._drawn, self._tenths = out, 5.0, time.monotonic(), 0

    def due(self, counts):
        tenths = min(10, counts.ended * 10 // counts.total) if counts.total else 0
        return tenths > self._tenths or time.monotonic() - self._drawn >= self.every

    def draw(self, counts, last):
        self._drawn = time.monotonic()
        if counts.total:
            self._tenths = min(10, counts.ended * 10 // counts.total)
        fraction, rate, elapsed, left = counts.figures(last)
        line = (f"{counts.label + ': ' if counts.label else ''}{_grouped(counts.ended)}/"
                f"{_grouped(counts.total)} done ({int(fraction * 100)}%)")
        self.out.write(", ".join([line] + counts.parts(rate, elapsed, left)) + "\n")
        self.out.flush()


class _JupyterBar:
    """An HTML progress element in the cell's output, replaced in place as it advances."""

    def __init__(self):
        from IPython.display import display  # only where IPython runs this
        self.every, self._drawn = 0.2, 0.0
        self._handle = display(_Html(""), display_id=True)

    def due(self, counts):
        return time.monotonic() - self._drawn >= self.every

    def draw(self, counts, last):
        self._drawn = time.monotonic()
        fraction, rate, elapsed, left = counts.figures(last)
        text = (f"{int(fraction * 100)}%  {_grouped(counts.ended)}/{_grouped(counts.total)}  "
                + "  ".join(counts.parts(rate, elapsed, left)))
        label = f"<b>{html.escape(counts.label)}</b> " if counts.label else ""
        bar = f'<progress value="{counts.ended}" max="{max(counts.total, 1)}" style="width:30em"></progress>'
        plain = f"{counts.label + ': ' if counts.label else ''}{text}"
        self._handle.update(_Html(f"<div>{label}{bar} {html.escape(text)}</div>", plain))


class _Html:
    def __init__(self, markup, plain=""):
        self.markup, self.plain = markup, plain

    def _repr_html_(self):
        return self.markup

    def __repr__(self):
        return self.plain


def _in_jupyter():
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ipython = shell.get_ipython()
    return ipython is not None and "IPKernelApp" in getattr(ipython, "config", {})


def progress(work, label="", out=None, display=None):
    """Waits until every future has ended (a Future, or a list, tuple, set or dict of them, nested as deep
    as they come), or until a Stream has finished (closed, every set answered: close it first, or push
    from another thread), showing how far it is: the ended of the total, the percentage, failures, the
    rate and the time left. `display`: "terminal" (one line redrawn), "jupyter" (a bar in the cell) or
    "plain" (a line at each tenth); None chooses by where it runs and what `out` (default sys.stdout) is.
    It only watches: the futures and the stream are left as they were. Returns `work`."""
    out = sys.stdout if out is None else out
    if display is None:
        display = ("jupyter" if _in_jupyter() else
                   "terminal" if getattr(out, "isatty", lambda: False)() else "plain")
    if display not in ("terminal", "jupyter", "plain"):
        raise ValueError(f"progress: display {display!r} is not 'terminal', 'jupyter' or 'plain'")
    if isinstance(work, _tessera.Stream):
        counts = _Counts(label or f"stream {work.id}", work.pushed)
    else:
        futures = _futures_in(work)
        counts = _Counts(label or (futures[0].function if futures else ""), len(futures))
    drawing = {"terminal": lambda: _TerminalBar(out), "jupyter": _JupyterBar,
               "plain": lambda: _PlainLines(out)}[display]()
    if isinstance(work, _tessera.Stream):
        while True:
            finished = work.wait(0.1)
            counts.total = max(work.pushed, work.completed)
            counts.done = work.completed
            if finished:
                break
            if drawing.due(counts):
                drawing.draw(counts, False)
    else:
        pending = futures
        while pending:
            pending[0].wait(0.1)
            still = []
            for future in pending:
                if not future.done():
                    still.append(future)
                    continue
                state = future.status
                if state == "erred":
                    counts.erred += 1
                elif state == "cancelled":
                    counts.cancelled += 1
                else:
                    counts.done += 1
            pending = still
            if pending and drawing.due(counts):
                drawing.draw(counts, False)
    drawing.draw(counts, True)
    return work
