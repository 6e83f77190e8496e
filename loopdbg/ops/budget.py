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
* **when numpy itself runs out** (``MemoryError``): the run ends with the same one sentence;
* **at the process's edge** (``backstop``, Linux, every command that runs model code, under its
  budget given or default; not a library caller's process, such as a notebook's kernel): each
  run's start caps the process's data size (``RLIMIT_DATA``: the heap and every
  private writable mapping, where numpy's arrays live; not the files mapped read-only, such as
  ONNX external data) at what it is then plus the budget plus ``MARGIN``. An allocation past the
  cap fails in the allocator, whatever kernel asks for it (an outer-product MatMul, a
  ConvTranspose to a given ``output_shape``, MaxUnpool, Col2Im ...), so no list of kernels
  has to be complete: the engine names the layer whose kernel got the ``MemoryError``.

Outputs that are a small multiple of their inputs (elementwise ops of one shape, MatMul of what
fits ...) are caught by the checkpoints, and by the backstop where one allocation is too big. The
budget is process-wide: one run is checked at a time.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from loopdbg import programs
from loopdbg.text import byte_size as size

# Allocations smaller than this are not checked one by one (the checkpoints see them).
SMALL = 1 << 20
# What the process's size moves by on its own (the allocator's arenas, modules a kernel imports
# on first use): the RSS checks allow this much over the budget, so a small budget does not fail
# on the interpreter's own noise. Kernel outputs and scan pieces are counted without it.
SLACK = 32 << 20
# What the backstop's cap allows past the budget: the checks above allow SLACK over it, and the
# data size counts address space a run reserves without touching all of it (thread stacks, the
# allocator's arenas, an array numpy makes and a kernel fills in part).
MARGIN = 96 << 20
# What the debugger's cap allows past MARGIN: its UI runs in the same process as the engine and
# grows after a run's start (Textual's first frame: 24 MiB on a demo, 30 MiB on a 24-block GPT
# body, measured; a MiB or so more over stepping), and must never be the one refused.
UI_MARGIN = 64 << 20


class BudgetExceeded(MemoryError):
    """An allocation would take the run past its memory budget (the engine names the layer)."""


class _Budget:
    limit: int | None = None         # bytes the run may add to the process; None: no budget
    baseline: int = 0                # RSS when the run started
    hard: tuple | None = None        # under a ``backstop``: RLIMIT_DATA's (soft, hard) before it
    capped: int | None = None        # the cap (bytes of data) set by the last run's start
    warm: bool = False               # BLAS has made its buffers (``_warm_blas``)
    margin: int = MARGIN             # what the backstop's cap allows past the budget


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
    """A run begins: ``limit`` bytes of growth from now on (None: no budget); under a
    ``backstop``, the process's data size is capped at its size now plus ``limit`` + MARGIN."""
    BUDGET.limit = limit
    BUDGET.baseline = rss() if limit is not None else 0
    if BUDGET.hard is not None and limit is not None:
        _cap(limit, *BUDGET.hard)


def data_size() -> int | None:
    """The process's data size in bytes (VmData: what RLIMIT_DATA counts), None if unknown."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _limits():
    """(the resource module, RLIMIT_DATA's soft and hard limits), or None where the data size
    cannot be capped or read (not Linux)."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return (resource, soft, hard) if data_size() is not None else None


@contextlib.contextmanager
def backstop(margin: int = MARGIN):
    """While it lasts, every run's start also caps the data size (``RLIMIT_DATA``) at the run's
    budget past what the process holds then (plus ``margin``: MARGIN, and UI_MARGIN more where a
    UI shares the process): an allocation no check foresaw fails
    with MemoryError instead of taking the machine's memory. The caps never raise a lower limit
    the user set (``ulimit -d``), which is what it restores at its end and what a Python child
    starts with (``programs.python_argv``: a runtime's own memory is watched on its own)."""
    found = _limits()
    if found is None:
        yield
        return
    resource, soft, hard = found
    BUDGET.hard, BUDGET.margin = (soft, hard), margin
    programs.set_child_data_limit(soft)
    try:
        yield
    finally:
        BUDGET.hard, BUDGET.capped, BUDGET.margin = None, None, MARGIN
        programs.set_child_data_limit(None)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _cap(limit: int, soft: int, hard: int) -> None:
    """RLIMIT_DATA's soft limit: the data size now plus ``limit`` and the backstop's margin,
    never past ``soft``
    and ``hard``, the limits the process had before the backstop."""
    import resource

    _warm_blas()
    now = data_size()
    if now is None:
        return
    cap = now + limit + BUDGET.margin
    for user in (soft, hard):
        if user != resource.RLIM_INFINITY:
            cap = min(cap, user)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
        BUDGET.capped = cap


def _warm_blas() -> None:
    """A first matrix product, before a cap is measured: OpenBLAS maps its work buffers (32 MiB
    and more) at its first call, and ends the process when it cannot."""
    if not BUDGET.warm:
        a = np.ones((256, 256))
        a @ a
        np.ones((256, 256), np.float32) @ np.ones((256, 256), np.float32)
        BUDGET.warm = True


def out_of_memory(reason: str) -> str:
    """What a MemoryError the budget's checks did not raise says: the allocator refused, under
    the backstop's cap or the machine's own limits."""
    if BUDGET.limit is not None and BUDGET.capped is not None:
        return (f"out of memory ({reason}): the run's memory budget is {size(BUDGET.limit)} "
                f"(--max-memory)")
    return f"out of memory ({reason})"


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
