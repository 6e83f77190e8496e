"""How many threads numpy's BLAS runs, chosen for the machine the run is on, and kept so.

OpenBLAS starts one thread per core and spins them on every matrix product. On a machine whose
cores are busy with other work (a shared 2-core box, a test runner beside a build), a product of
the sizes loop bodies hold (a few hundred rows) then waits for a descheduled thread: the same
run takes 3-10x longer than with one thread. On a quiet machine the second thread makes a
decoder's products 1.2x-1.3x faster. So loopdbg gives BLAS the cores the *other* processes
leave free, measured over the last moments, not the last minute:

    threads = clamp(cores - ceil(others - 0.3), 1, cores)

where ``cores`` are the CPUs this process may run on and ``others`` how many of them the rest
of the machine kept busy, in cores: the busy time of those CPUs (``/proc/stat``) less this
process's own CPU time (``os.times``), over the window since the last look. A core counts as
taken when others used a third of it or more. The first window starts when the ``loopdbg``
package is imported (``loopdbg.machine``: a ``loopdbg run`` imports numpy, reads and plans the
model in it); each run's start looks
(``settle``), and between iterations, at most every ``REVISIT`` seconds, the run looks again
(``revisit``) and moves the count when the machine changed: a build started beside it, or the
script run just before it, which a minute-long average would still count, has ended.

Where a window cannot be judged, a window too short (under ``MIN_WINDOW``: it grows into the
next look) keeps the count a measure chose moments ago; a window longer than ``MAX_WINDOW``
says more about the past than about now (the runtime's script that ran just before, in the
same notebook) and a snapshot decides instead: the other processes' tasks running at this
moment (``/proc/loadavg``'s count less this process's own threads), ``clamp(cores - running,
1, cores)``; the next look, ``REVISIT`` seconds into the run, measures again. Without
``/proc``, the 1-minute load average, counting this process: ``clamp(round(cores - load + 1),
1, cores)``; without that, every core.

The user's choice wins: when ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``,
``BLIS_NUM_THREADS`` or ``LOOPDBG_BLAS_THREADS`` is set, loopdbg leaves BLAS as the user set it
(``LOOPDBG_BLAS_THREADS=N`` sets N for loopdbg alone, and never moves it). The count is set
through threadpoolctl (an optional dependency); without it BLAS keeps its own count and
``state()`` says so.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import contextmanager

from loopdbg.ir.record import Record, set_field as _set
from loopdbg.machine import (FIRST, Sample, cores, load, running_others,  # noqa: F401 - here
                             sample)

USER_VARIABLES = ("LOOPDBG_BLAS_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
TAKEN = 0.3             # others' share of a core from which it counts as taken
MIN_WINDOW = 0.1        # seconds: shorter, the clock ticks behind /proc/stat are too coarse
MAX_WINDOW = 0.5        # seconds: longer says more about the past than about now
REVISIT = MIN_WINDOW    # seconds between two looks during a run


class Threads(Record):
    """The BLAS thread count of the run and why."""

    __slots__ = ("count", "reason")
    count: int | None           # None: unknown (no threadpoolctl, or no BLAS found)
    reason: str

    def __init__(self, count: int | None, reason: str):
        _set(self, "count", count)
        _set(self, "reason", reason)

    def describe(self) -> str:
        return f"{self.count if self.count is not None else '?'} BLAS threads ({self.reason})"


def others(before: Sample | None, after: Sample | None) -> tuple[float, float] | None:
    """(the cores other processes kept busy between two samples, the window in seconds), or
    None when the window is not one to judge by (see the module docstring)."""
    if before is None or after is None:
        return None
    window = after.wall - before.wall
    if not MIN_WINDOW <= window <= MAX_WINDOW:
        return None
    busy = (after.busy - before.busy) - (after.own - before.own)
    return max(busy, 0.0) / window, window


def choose(n_cores: int, load_1min: float | None, environ=os.environ,
           busy: tuple[float, float] | None = None, recent: tuple[int, str] | None = None,
           running: int | None = None) -> tuple[int | None, str]:
    """(threads, reason): the count to set, or None to leave BLAS as it is. What decides, the
    first given: ``busy`` (what ``others`` measured), ``recent`` (the count a measure chose
    moments ago), ``running`` (the other processes' tasks running now), the load average."""
    own = environ.get("LOOPDBG_BLAS_THREADS", "").strip()
    if own:
        try:
            n = int(own)
        except ValueError:
            n = 0
        if n >= 1:
            return n, "LOOPDBG_BLAS_THREADS"
    for name in USER_VARIABLES[1:]:
        if environ.get(name, "").strip():
            return None, f"{name} is set"
    if busy is not None:
        used, window = busy
        n = min(max(n_cores - math.ceil(used - TAKEN), 1), n_cores)
        return n, f"{n_cores} cores, others busy {used:.1f} of them over {window:.1f} s"
    if recent is not None:
        return recent
    if running is not None:
        n = min(max(n_cores - running, 1), n_cores)
        return n, f"{n_cores} cores, {running} other tasks running now"
    if load_1min is None:
        return n_cores, f"{n_cores} cores, load unknown"
    n = min(max(round(n_cores - load_1min + 1), 1), n_cores)
    return n, f"{n_cores} cores, load {load_1min:.1f}"


_STATE: dict[str, Threads] = {}
_LOOK: list = [FIRST, 0.0]     # the last sample, and when to look again during a run
_MOVABLE: list[bool] = [False]  # may a run's looks move the count (not the user's)?
_MEASURED: list = [None, 0.0]   # (count, reason) a measure chose last, and when
_BLAS: list = []                # [the BLAS libraries' controllers] once looked for (``_blas``)


def _blas() -> list | None:
    """threadpoolctl's controllers of the BLAS libraries numpy loaded, found once (listing the
    process's libraries takes milliseconds; setting a count through them, microseconds), or
    None without threadpoolctl."""
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _BLAS.append(None)
        else:
            _BLAS.append([lib for lib in ThreadpoolController().lib_controllers
                          if lib.user_api == "blas"])
    return _BLAS[0]


def _apply(n: int | None, reason: str) -> Threads:
    libraries = _blas()
    if libraries is None:
        _STATE["now"] = Threads(None, "threadpoolctl is not installed: BLAS's own count")
        return _STATE["now"]
    if n is None:               # the user's count, as BLAS says it
        _STATE["now"] = Threads(libraries[0].num_threads if libraries else None, reason)
        return _STATE["now"]
    for lib in libraries:           # (asked each time: a user's threadpoolctl may have moved it)
        if lib.num_threads != n:
            lib.set_num_threads(n)
    _STATE["now"] = Threads(n, reason)
    return _STATE["now"]


def _look() -> tuple[tuple[float, float] | None, bool]:
    """(``others`` over the window since the last look, whether that window was too short to
    judge). This look starts the next window, unless it was too short: it then grows into the
    next look."""
    now, before = sample(), _LOOK[0]
    busy = others(before, now)
    short = now is not None and before is not None and now.wall - before.wall < MIN_WINDOW
    if now is not None and not short:
        _LOOK[0] = now
    _LOOK[1] = time.perf_counter() + REVISIT
    return busy, short


def _decide(busy: tuple[float, float] | None, short: bool) -> tuple[int | None, str]:
    if busy is not None:
        n, reason = choose(cores(), None, busy=busy)
        if n is not None:
            _MEASURED[:] = [(n, reason), time.perf_counter()]
        return n, reason
    recent = _MEASURED[0] if short and time.perf_counter() - _MEASURED[1] <= MAX_WINDOW \
        else None
    running = None if recent else running_others()
    return choose(cores(), None if recent or running is not None else load(), recent=recent,
                  running=running)


def settle() -> Threads:
    """Set BLAS's thread count for the run about to start (see the module docstring)."""
    n, reason = _decide(*_look())
    _MOVABLE[:] = [n is not None and reason != "LOOPDBG_BLAS_THREADS"]
    return _apply(n, reason)


def revisit() -> int | None:
    """Between two iterations: look at the machine again when ``REVISIT`` seconds have passed
    since the last look, and move BLAS's count if the cores free changed; returns the new count
    when it moved, else None. Cheap otherwise (a clock read). A count the user set is never
    moved, and nothing moves on a window that could not be measured."""
    if time.perf_counter() < _LOOK[1]:
        return None
    last = _STATE.get("now")
    if last is None or last.count is None or not _MOVABLE[0]:
        _LOOK[1] = time.perf_counter() + MAX_WINDOW     # the user's count: nothing to revisit
        return None
    busy, _ = _look()
    if busy is None:
        return None
    now = _apply(*_decide(busy, False))
    return now.count if now.count != last.count else None


def current() -> int | None:
    """BLAS's thread count as the last ``settle`` or ``revisit`` left it (None: not known)."""
    now = _STATE.get("now")
    return now.count if now is not None else None


@contextmanager
def pinned(count: int | None):
    """BLAS runs ``count`` threads within (a recomputed iteration: the count it ran with, since
    a product's last bits depend on it), and after it the one it had, or the one a run in
    another thread chose meanwhile. None, or a count BLAS already has: nothing changes."""
    libraries = _blas()
    before = libraries[0].num_threads if libraries else None
    if count is None or before is None or count == before:
        yield
        return
    decided = _STATE.get("now")
    for lib in libraries:
        lib.set_num_threads(count)
    try:
        yield
    finally:
        now = _STATE.get("now")
        after = now.count if now is not decided and now.count is not None else before
        for lib in libraries:
            lib.set_num_threads(after)


def state() -> Threads | None:
    """What the last ``settle`` or ``revisit`` chose (None before any run)."""
    return _STATE.get("now")
