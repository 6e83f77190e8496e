"""An expression of the breakpoint language over a loop's iterations: what ``loopdbg plot`` draws.

    s = collect(events, ["mean(h)", "norm(c)"], loop="ti")
    s.x, s.values["mean(h)"]           # one point per iteration of loop 'ti', in run order

Each expression must give one number per iteration (``mean(h)``, ``h[0, 3]``, ``i * 2``); one
that gives an array is refused with the hint to reduce it. The iterations come from a live run's
events or from a trace's timeline alike. A nested loop runs once per outer iteration: its points
follow in run order, and ``starts`` marks where each execution begins (``outer`` keeps one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from loopdbg.debug.breakpoints import EventLookup
from loopdbg.debug.expr import Expression, ExprError
from loopdbg.engine import events as ev
from loopdbg.engine.paths import matches_loop
from loopdbg.errors import LoopdbgError
from loopdbg.text import listing


@dataclass
class Series:
    """Expressions' values over a loop's iterations, every execution's points in a row."""

    loop: str                                      # the loop's path
    expressions: list[str]
    x: list[int] = field(default_factory=list)      # the iteration number of each point
    values: dict[str, list[float]] = field(default_factory=dict)
    starts: list[int] = field(default_factory=list)   # point index where each execution begins
    outers: list[tuple] = field(default_factory=list)  # the outer iterations of each execution

    @property
    def executions(self) -> int:
        return len(self.starts)


def choose_loop(paths: list[str], name: str | None, file: str) -> str:
    """The path of loop ``name`` (path, short name), or the only (outermost) loop."""
    if not paths:
        raise LoopdbgError(f"{file} has no Loop or TensorIterator to plot.")
    if name is None:
        if len(paths) == 1:
            return paths[0]
        raise LoopdbgError(f"{file} has {len(paths)} loops ({listing(paths)}); choose one "
                           f"with --loop.")
    exact = [p for p in paths if p == name]
    hits = exact or [p for p in paths if matches_loop(p, name)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise LoopdbgError(f"{file}: several loops are called '{name}' ({listing(hits)}); "
                           f"give the full path.")
    raise LoopdbgError(f"{file}: no loop named '{name}'; the loops are: {listing(paths)}.")


def collect(iterations: Iterable, texts: list[str], loop: str, outer: tuple | None = None,
            limit: int = 10_000_000) -> Series:
    """Evaluate ``texts`` at every iteration of ``loop`` (``outer``: that execution only).

    ``iterations`` yields the run's events (others than IterationDone are skipped). Stops with a
    LoopdbgError naming the expression and iteration where one fails or is not one number.
    """
    exprs = [Expression(t) for t in texts]
    series = Series(loop, list(texts), values={t: [] for t in texts})
    last: dict[tuple, ev.IterationDone] = {}
    lookup = EventLookup(previous=lambda e: last.get((e.path, tuple(e.outer))))
    for e in iterations:
        if type(e) is not ev.IterationDone or e.path != loop:
            continue
        key = tuple(e.outer)
        if outer is not None and key != tuple(outer):
            continue
        if e.iteration == 0 or not series.outers or series.outers[-1] != key:
            series.starts.append(len(series.x))
            series.outers.append(key)
        lookup.bind(e)
        for text, expr in zip(texts, exprs):
            series.values[text].append(_number(expr, lookup, e))
        last[(e.path, key)] = e
        series.x.append(e.iteration)
        if len(series.x) >= limit:
            break
    return series


def _number(expr: Expression, lookup: EventLookup, e) -> float:
    try:
        value = expr.evaluate(lookup)
    except ExprError as exc:
        raise LoopdbgError(f"'{expr.short}' at iteration {e.iteration} of loop '{e.path}': "
                           f"{str(exc).rstrip('.')}.") from None
    except Exception as exc:        # noqa: BLE001 - numpy's errors, said in the sentence
        raise LoopdbgError(f"'{expr.short}' failed at iteration {e.iteration} of loop "
                           f"'{e.path}': {type(exc).__name__}: {exc}.") from None
    a = np.asarray(value)
    if a.size != 1 or a.dtype.kind not in "biuf":
        what = f"shape {a.shape}" if a.dtype.kind in "biufc" else f"a {type(value).__name__}"
        raise LoopdbgError(f"'{expr.short}' gives {what} at iteration {e.iteration} of loop "
                           f"'{e.path}'; a plot needs one number per iteration (e.g. mean(...), "
                           f"norm(...) or an element like h[0, 3]).")
    return float(a.reshape(()))
