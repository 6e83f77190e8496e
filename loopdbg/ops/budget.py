"""The run's memory budget, as kernels and loops see it: what the process may still grow by.

``--max-memory`` bounds how much a run may add to the process: the resident set size (RSS) it had
when the run started is the baseline, and the run may grow it by at most the budget. Three
mechanisms enforce it, each where it is cheap:

* **before an allocation** (``reserve``): the kernels whose output size depends on the *values*
  of their inputs or on their attributes rather than their inputs' sizes, and the broadcasting
  steps whose inputs differ in shape, are checked first (``ops.sizes``): an output that does not
  fit in what is left of the budget is refused before numpy allocates a byte;
* **between iterations** (the loops' checkpoints, ``loopdbg.engine.iteration_checks.checkpoint``): the RSS,
  read every few milliseconds of run time (every iteration when iterations are slow), catches
  what grows by sizes (a back edge that doubles, a history, scan pieces), with ``SLACK`` for
  what the interpreter itself moves by;
* **when numpy itself runs out** (``MemoryError``): the run ends with the same one sentence.

Outputs that are a small multiple of their inputs (elementwise ops of one shape, MatMul of what
fits ...) are caught by the checkpoints. The budget is process-wide: one run is checked at a time.
"""

from __future__ import annotations

import os

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
