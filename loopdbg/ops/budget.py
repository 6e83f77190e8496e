"""The run's memory budget, as kernels and loops see it: what the process may still grow by.

``--max-memory`` bounds how much a run may add to the process: the resident set size (RSS) it had
when the run started is the baseline, and the run may grow it by at most the budget. Three
mechanisms enforce it, each where it is cheap:

* **before an allocation** (``reserve``): the kernels whose output size depends on the *values*
  of their inputs rather than their sizes (Broadcast to a target shape, Tile, Range,
  ConstantOfShape, Pad, OneHot, the random generators ...) are wrapped at plan time
  (``guarded``): the output's size is computed from the inputs first, and an output that does
  not fit in what is left of the budget is refused before numpy allocates a byte;
* **between iterations** (the loops' checkpoints, ``loopdbg.engine.iteration_checks.checkpoint``): the RSS,
  read every few milliseconds of run time (every iteration when iterations are slow), catches
  what grows by sizes (a back edge that doubles, a history, scan pieces), with ``SLACK`` for
  what the interpreter itself moves by;
* **when numpy itself runs out** (``MemoryError``): the run ends with the same one sentence.

Outputs that are a small multiple of their inputs (elementwise ops, MatMul of what fits ...) are
caught by the checkpoints. The budget is process-wide: one run is checked at a time.
"""

from __future__ import annotations

import math
import os
from typing import Callable

import numpy as np

from loopdbg.text import byte_size as size

# Allocations smaller than this are not checked one by one (the checkpoints see them).
SMALL = 1 << 20
# What the process's size moves by on its own (the allocator's arenas, modules a kernel imports
# on first use): the RSS checks allow this much over the budget, so a small budget does not fail
# on the interpreter's own noise. Kernel outputs and scan pieces are counted without it.
SLACK = 32 << 20


class BudgetExceeded(MemoryError):
    """An allocation would take the run past its memory budget (the engine names the layer)."""


class _Budget:
    limit: int | None = None         # bytes the run may add to the process; None: no budget
    baseline: int = 0                # RSS when the run started


BUDGET = _Budget()


def _page() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4096


_PAGE = _page()


def rss() -> int:
    """The process's resident set size in bytes (its peak where the current one is unknown)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        try:
            import resource
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return peak if os.uname().sysname == "Darwin" else peak * 1024
        except (ImportError, OSError):
            return 0


def start(limit: int | None) -> None:
    """A run begins: ``limit`` bytes of growth from now on (None: no budget)."""
    BUDGET.limit = limit
    BUDGET.baseline = rss() if limit is not None else 0


def used() -> int:
    """What the run has added to the process so far."""
    return max(rss() - BUDGET.baseline, 0)


def reserve(nbytes: float) -> None:
    """Refuse (BudgetExceeded) an allocation of ``nbytes`` that does not fit in what is left."""
    limit = BUDGET.limit
    if limit is None or nbytes < SMALL:
        return
    now = max(used() - SLACK, 0)
    if now + nbytes > limit:
        raise BudgetExceeded(
            f"its output would need {size(nbytes)}, and the run's memory budget of {size(limit)} "
            f"has {size(max(limit - now, 0))} left (--max-memory)")


def elements(shape) -> float:
    """The element count of ``shape`` (a float: a hostile shape may not fit in int64)."""
    n = 1.0
    for d in np.asarray(shape).reshape(-1).tolist():
        n *= max(float(d), 0.0)
    return n


# -- the output size of the kernels sized by their inputs' values, by op type ---------------------
def _item(a, default=0):
    a = np.asarray(a)
    return a.reshape(-1)[0].item() if a.size else default


def _broadcast(x, target, *rest) -> float:
    """Broadcast / Expand: at least the target's elements (the bigger of both per axis)."""
    shape = np.asarray(target).reshape(-1).tolist()
    xs = list(np.shape(x))
    n = max(len(shape), len(xs))
    shape = [1] * (n - len(shape)) + shape
    xs = [1] * (n - len(xs)) + xs
    return elements([max(a, b) for a, b in zip(shape, xs)]) * np.asarray(x).itemsize


def _tile(x, repeats, *rest) -> float:
    return np.asarray(x).nbytes * elements(repeats)


def _range(start, stop, step, *rest) -> float:
    a, b, s = (float(_item(v)) for v in (start, stop, step))
    if s == 0 or not all(map(math.isfinite, (a, b, s))):
        return 0.0            # the kernel says what is wrong
    return max(math.ceil((b - a) / s), 0) * 8.0


def _of_shape(shape, *rest) -> float:
    return elements(shape) * 8.0


def _pad(x, begin, end=None, *rest) -> float:
    xs = np.shape(x)
    b = np.asarray(begin).reshape(-1).tolist()
    e = np.asarray(end).reshape(-1).tolist() if end is not None and np.ndim(end) else []
    if e == [] and len(b) == 2 * len(xs):       # ONNX: one pads input, begins then ends
        b, e = b[:len(xs)], b[len(xs):]
    grown = [d + max(float(p), 0.0) + max(float(q), 0.0)
             for d, p, q in zip(xs, b + [0] * len(xs), e + [0] * len(xs))]
    return elements(grown) * np.asarray(x).itemsize


def _one_hot(indices, depth, *rest) -> float:
    return np.size(indices) * max(float(_item(depth)), 0.0) * 8.0


# Op type -> the bytes its output needs, from the kernel's inputs (before it runs).
SIZED_BY_VALUES: dict[str, Callable[..., float]] = {
    "Broadcast": _broadcast, "onnx.Expand": _broadcast,
    "Tile": _tile, "onnx.Tile": _tile,
    "Range": _range, "onnx.Range": _range,
    "onnx.ConstantOfShape": _of_shape, "RandomUniform": _of_shape,
    "Pad": _pad, "onnx.Pad": _pad,
    "OneHot": _one_hot, "onnx.OneHot": _one_hot,
}


def guarded(op_type: str, fn: Callable) -> Callable:
    """``fn``, checked against the budget before it runs when its op's output is sized by the
    values of its inputs; other kernels are returned as they are."""
    need = SIZED_BY_VALUES.get(op_type)
    if need is None:
        return fn

    skip = 1 if getattr(fn, "needs_context", False) else 0    # fn(ctx, *ins)

    def checked(*ins):
        if BUDGET.limit is not None:
            try:
                nbytes = need(*ins[skip:])
            except (TypeError, ValueError, IndexError, OverflowError):
                nbytes = 0.0                      # malformed inputs: the kernel says what
            reserve(nbytes)
        return fn(*ins)

    for attr in ("notice", "needs_context"):     # what the plan reads off a kernel
        if hasattr(fn, attr):
            setattr(checked, attr, getattr(fn, attr))
    return checked
