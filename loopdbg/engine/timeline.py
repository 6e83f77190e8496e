"""The history of a run: every ``IterationDone`` by its ordinal, the order the run produced them.

A debugging session stands at one ordinal of a ``Timeline`` and steps along it; a UI draws it as a
strip, jumps in it, or plots an expression over a loop's iterations. Two kinds exist:

* ``LiveTimeline`` (here): filled while the engine runs, holding only the newest ``capacity``
  iterations in memory. Given an ``older`` timeline (the trace being recorded), it reaches back
  past that window too.
* ``loopdbg.trace.timeline.TraceTimeline``: read from a trace file, the whole run, complete.

An iteration is also addressed by where it ran: its loop's ``path``, the iterations of the
enclosing loops (``outer``, outermost first; ``()`` at the top) and its ``iteration`` number.
``find`` turns that into an ordinal in O(1) (amortized), and ``iterations`` lists the ordinals of
one loop execution in iteration order; both answer only for what the timeline still holds::

    n = timeline.find("loop/inner", 3, outer=(2,))     # None when not held
    event = timeline.at(n)
    values = [event.value("h") for event in map(timeline.at, timeline.iterations("loop"))]
"""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Sequence

from loopdbg.engine.events import IterationDone, LoopFinished, Notice, RunFinished
from loopdbg.errors import LoopdbgError


class Timeline:
    """The iterations of one run by ordinal (see the module docstring); the interface of both kinds.

    ``len(timeline)`` is the number of iterations the run produced so far (ordinals ``0`` to
    ``len - 1``); ``oldest`` is the first ordinal ``at`` can still give.
    """

    complete = False                 # True: the run is over and nothing is left to run (a trace)
    capacity: int | None = None      # how many iterations are held (None: all of them)
    finished: RunFinished | None = None   # a complete timeline: the run's end, if it got there
    notices: Sequence[Notice] = ()        # a complete timeline: the notices of the run

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def oldest(self) -> int:
        return 0

    @property
    def newest(self) -> int:
        """The ordinal of the last iteration so far (-1 before the first)."""
        return len(self) - 1

    def at(self, n: int) -> IterationDone:
        """Iteration ``n`` (an ordinal); ``IndexError`` when the timeline does not hold it."""
        raise NotImplementedError

    def find(self, path: str, iteration: int, outer: tuple = ()) -> int | None:
        """The ordinal of ``iteration`` of loop ``path`` at ``outer``, or None if not held."""
        raise NotImplementedError

    def index(self, path: str, iteration: int, outer: tuple = ()) -> int:
        """Like ``find``, but a one-sentence ``LoopdbgError`` says why it is not there."""
        n = self.find(path, iteration, tuple(outer))
        if n is None:
            raise LoopdbgError(self.missing(path, iteration, tuple(outer)))
        return n

    def missing(self, path: str, iteration: int, outer: tuple) -> str:
        where = f" at outer iterations {list(outer)}" if outer else ""
        return f"iteration {iteration} of loop '{path}'{where} is not in the history."

    def iterations(self, path: str, outer: tuple = ()) -> list[int]:
        """The ordinals of one loop execution's held iterations, in iteration order."""
        raise NotImplementedError

    def previous(self, event: IterationDone) -> IterationDone | None:
        """The iteration before ``event`` in its loop execution, if held (for ``changed()``)."""
        if event.iteration == 0:
            return None
        n = self.find(event.path, event.iteration - 1, event.outer)
        return None if n is None else self.at(n)

    def loop_end(self, path: str, outer: tuple = ()) -> LoopFinished | None:
        """How that loop execution ended, when the timeline knows it (a trace does)."""
        return None


class LiveTimeline(Timeline):
    """The newest ``capacity`` iterations of a running engine, appended by the session.

    ``append`` is on the session's per-iteration path and does nothing else: the index behind
    ``find`` and ``iterations`` is brought up to date when they are asked, and rebuilt from what is
    held whenever it has grown to twice the capacity, so memory stays bounded however long the run.
    Ordinals below the window are answered by ``older`` when there is one (a trace being recorded).

    Not thread-safe: while a command runs, only the thread running it may use the timeline.
    """

    def __init__(self, capacity: int = 1000, older: Timeline | None = None):
        if capacity < 1:
            raise ValueError("a timeline must hold at least one iteration")
        self.capacity = capacity
        self.clear(older)

    def clear(self, older: Timeline | None = None) -> None:
        """Forget every iteration (a restarted run); ``older`` serves ordinals before the window."""
        self.older = older
        self._events: deque[IterationDone] = deque(maxlen=self.capacity)
        self._count = 0
        self._runs: dict[tuple, list] = {}   # (path, outer) -> [first iteration, ordinals...]
        self._indexed = 0                    # ordinals below this are in _runs
        self._entries = 0

    def append(self, event: IterationDone) -> int:
        """Add the run's next iteration; returns its ordinal."""
        self._events.append(event)
        n = self._count
        self._count = n + 1
        return n

    def replace(self, n: int, event: IterationDone) -> None:
        """Hold ``event`` at ordinal ``n`` (held in memory) instead: the same iteration with
        less kept (``debug.kept`` drops an old stop's every-node values so)."""
        self._events[n - self.held] = event

    def __len__(self) -> int:
        return self._count

    @property
    def oldest(self) -> int:
        return 0 if self.older is not None else self._count - len(self._events)

    @property
    def held(self) -> int:
        """The first ordinal held in memory (``oldest`` counts what ``older`` holds as well)."""
        return self._count - len(self._events)

    def at(self, n: int) -> IterationDone:
        if n < 0:
            raise IndexError(n)
        k = n - (self._count - len(self._events))
        if k >= 0:
            return self._events[k]
        if self.older is None:
            raise IndexError(n)
        return self.older.at(n)

    def previous(self, event: IterationDone) -> IterationDone | None:
        # In memory only: changed() asks this after every iteration, and reading a trace back
        # there would make a breakpoint cost a disk read per iteration.
        if event.iteration == 0:
            return None
        n = self._find_held(event.path, event.iteration - 1, event.outer)
        return None if n is None else self._events[n - self.held]

    def find(self, path: str, iteration: int, outer: tuple = ()) -> int | None:
        n = self._find_held(path, iteration, outer)
        if n is None and self.older is not None:
            n = self.older.find(path, iteration, outer)
        return n

    def iterations(self, path: str, outer: tuple = ()) -> list[int]:
        self._catch_up()
        run = self._runs.get((path, tuple(outer)))
        held = self.held
        mine = [] if run is None else [n for n in run[1:] if n >= held]
        first = None if run is None else run[0] + len(run) - 1 - len(mine)   # mine[0]'s iteration
        if self.older is None or first == 0:
            return mine
        return [n for n in self.older.iterations(path, outer) if n < held] + mine

    def _find_held(self, path: str, iteration: int, outer: tuple) -> int | None:
        self._catch_up()
        run = self._runs.get((path, tuple(outer)))
        if run is None:
            return None
        k = iteration - run[0] + 1
        if 1 <= k < len(run):
            n = run[k]
            if n >= self.held:
                return n
        return None

    def _catch_up(self) -> None:
        """Index the iterations appended since the last question (each one once)."""
        count = self._count
        if self._indexed == count:
            return
        held = count - len(self._events)
        if self._entries + count - self._indexed > 2 * self.capacity:
            self._runs, self._entries, self._indexed = {}, 0, held   # rebuild from what is held
        start = max(self._indexed, held)
        runs = self._runs
        for n, e in enumerate(islice(self._events, start - held, count - held), start):
            key = (e.path, e.outer)
            run = runs.get(key)
            if run is None or e.iteration != run[0] + len(run) - 1:
                runs[key] = [e.iteration, n]
            else:
                run.append(n)
        self._entries += count - start
        self._indexed = count
