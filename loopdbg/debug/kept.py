"""Every node's value of the iteration a step stops at, computed by the run itself.

The engine's loops keep only what an event carries (a body's Parameters and Results); a stop's
other values were computed again from the iteration's inputs (``engine.recompute``), so a step
ran its iteration twice. While a step runs, the session sets the run's ``keep_nodes``
(``RunContext``) so that the iteration it will stop at is run by the body's ``run_all`` and its
event carries every value (``IterationDone.nodes``); ``continue`` and the other moves over many
iterations run as before. The values of the last ``HELD`` such stops stay on their events in the
timeline; older ones are dropped there (recomputed if asked for again), so a long walk of steps
holds no more than a continue would.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from loopdbg.engine import events as ev

HELD = 2                # stops whose every value stays in memory (this one and the one before)
EVERY_LOOP = 1 << 30    # ``keep``: an iteration of a loop at any depth


class Kept:
    """The ``keep_nodes`` of one run (``ctx``; None: a replay or a recorded run, which keep
    nothing extra) and the stops of ``timeline`` that hold every value."""

    def __init__(self, ctx, timeline):
        self.ctx = ctx
        self.timeline = timeline
        self._held: deque[int] = deque()

    def around(self, keep: int, move: Callable):
        """Run ``move`` (a forward move of the session, which returns its Stop) with the
        iterations of loops nested fewer than ``keep`` deep keeping every value."""
        ctx = self.ctx
        if ctx is None:
            return move()
        newest = len(self.timeline)
        ctx.keep_nodes = keep
        try:
            stop = move()
        finally:
            ctx.keep_nodes = 0
        event = stop.event
        if event is not None and event.nodes is not None and stop.position >= newest:
            self._held.append(stop.position)
            self._forget()
        return stop

    def _forget(self) -> None:
        held, timeline = self._held, self.timeline
        while len(held) > HELD:
            n = held.popleft()
            if n >= timeline.held:
                timeline.replace(n, without_nodes(timeline.at(n)))


def without_nodes(event: ev.IterationDone) -> ev.IterationDone:
    """The same iteration without its every-node values."""
    return ev.IterationDone(event[:6] + (None,) + event[7:])
