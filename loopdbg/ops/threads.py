"""How many threads numpy's BLAS runs, chosen for the machine the run is on.

OpenBLAS starts one thread per core and spins them on every matrix product. On a machine whose
cores are busy with other work (a shared 2-core box, a test runner beside a build), a product of
the sizes loop bodies hold (a few hundred rows) then waits for a descheduled thread: the same
run takes 3-10x longer than with one thread. So at the start of each run loopdbg sets BLAS's
thread count to the cores that are free, counting its own:

    threads = clamp(round(cores - load + 1), 1, cores)

where ``cores`` are the CPUs this process may run on and ``load`` the 1-minute load average
(which counts this process while it runs). A quiet machine keeps every core; a busy one gets one
thread.

The user's choice wins: when ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``,
``BLIS_NUM_THREADS`` or ``LOOPDBG_BLAS_THREADS`` is set, loopdbg leaves BLAS as the user set it
(``LOOPDBG_BLAS_THREADS=N`` sets N for loopdbg alone). The count is set through threadpoolctl
(an optional dependency); without it BLAS keeps its own count and ``state()`` says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

USER_VARIABLES = ("LOOPDBG_BLAS_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


@dataclass(frozen=True)
class Threads:
    """The BLAS thread count of the run and why."""

    count: int | None           # None: unknown (no threadpoolctl, or no BLAS found)
    reason: str

    def describe(self) -> str:
        return f"{self.count if self.count is not None else '?'} BLAS threads ({self.reason})"


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def load() -> float | None:
    """The 1-minute load average (None where the system has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def choose(n_cores: int, load_1min: float | None, environ=os.environ) -> tuple[int | None, str]:
    """(threads, reason): the count to set, or None to leave BLAS as it is."""
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
    if load_1min is None:
        return n_cores, f"{n_cores} cores, load unknown"
    n = min(max(round(n_cores - load_1min + 1), 1), n_cores)
    return n, f"{n_cores} cores, load {load_1min:.1f}"


_STATE: dict[str, Threads] = {}
_SET: list[int] = []          # the count loopdbg set last (to set it again only when it moves)


def settle() -> Threads:
    """Set BLAS's thread count for the run about to start (see the module docstring)."""
    n, reason = choose(cores(), load())
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        _STATE["now"] = Threads(None, "threadpoolctl is not installed: BLAS's own count")
        return _STATE["now"]
    if n is None:               # the user's count: read once (listing the libraries takes ms)
        last = _STATE.get("now")
        if last is None or last.reason != reason:
            found = [p.get("num_threads") for p in threadpool_info()
                     if p.get("user_api") == "blas"]
            _STATE["now"] = Threads(found[0] if found else None, reason)
        return _STATE["now"]
    if not _SET or _SET[-1] != n:
        threadpool_limits(limits=n, user_api="blas")
        _SET[:] = [n]
    _STATE["now"] = Threads(n, reason)
    return _STATE["now"]


def state() -> Threads | None:
    """What the last ``settle`` chose (None before any run)."""
    return _STATE.get("now")
