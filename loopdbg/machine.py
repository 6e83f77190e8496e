"""What the machine's CPUs are doing: the samples BLAS's thread choice (``loopdbg.ops.threads``)
compares, read from ``/proc/stat`` and ``os.times`` (no numpy: this module is imported with the
``loopdbg`` package, whose import takes the first sample, ``FIRST``, so that the window to the
first run covers the process's own start: its imports, the model read and planned).
"""

from __future__ import annotations

import os
import time


def cpus() -> list[int] | None:
    """The CPUs this process may run on (None where the system does not say)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def cores() -> int:
    """How many CPUs this process may run on."""
    found = cpus()
    return max(len(found), 1) if found else max(os.cpu_count() or 1, 1)


def load() -> float | None:
    """The 1-minute load average (None where the system has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


class Sample:
    """One look at the machine: when (``perf_counter``), the busy seconds of this process's
    CPUs, its own CPU seconds (every thread of it). (A plain class: a dataclass costs the
    package's import a millisecond.)"""

    __slots__ = ("wall", "busy", "own")

    def __init__(self, wall: float, busy: float, own: float):
        self.wall, self.busy, self.own = wall, busy, own

    def __repr__(self) -> str:
        return f"Sample(wall={self.wall!r}, busy={self.busy!r}, own={self.own!r})"


def _busy_seconds(which: set[int] | None) -> float | None:
    """The busy time of the CPUs ``which`` (every CPU: None) since boot, from ``/proc/stat``:
    all but idle and I/O wait (steal included: a hypervisor's other guests took it)."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        with open("/proc/stat", "rb") as f:
            for line in f:                      # the cpu lines come first; the rest is long
                if not line.startswith(b"cpu"):
                    break
                name, *fields = line.split()
                if name == b"cpu" or (which is not None and int(name[3:]) not in which):
                    continue
                user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
                total += user + nice + system + irq + softirq + steal
    except (OSError, ValueError, AttributeError):
        return None
    return total / tick if total and tick > 0 else None


def sample() -> Sample | None:
    """A look at the machine now (None where ``/proc/stat`` cannot be read)."""
    found = cpus()
    busy = _busy_seconds(set(found) if found else None)
    if busy is None:
        return None
    own = os.times()
    return Sample(time.perf_counter(), busy, own.user + own.system)


def running_others() -> int | None:
    """How many tasks (threads) of other processes are running or ready to run at this very
    moment: ``/proc/loadavg``'s count of them, less this process's own threads in state R (a
    snapshot: a process that keeps a core busy is nearly always counted). None where the
    system does not say."""
    try:
        with open("/proc/loadavg", "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
        own = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/stat", "rb") as f:
                stat = f.read()
            own += stat[stat.rindex(b")") + 2:][:1] == b"R"     # the state follows the name
    except (OSError, ValueError, IndexError):
        return None
    return max(running - own, 0)


FIRST = sample()        # the first look, as the package is imported
