"""The run a session steps through: the engine's event stream, pulled one iteration at a time,
and what its other events say (loops started and finished, notices, the end or the error).

A ``Session`` makes one ``Run`` each time it starts (``Session.restart``) and reads what it says
through its own attributes (``finished``, ``error``, ``loop_started``, ``loop_ends``,
``notices``). A replay's run pulls nothing: its timeline holds every iteration already, and the
run says what the trace recorded.
"""

from __future__ import annotations

import sys
from typing import Iterator

from loopdbg.engine import events as ev
from loopdbg.errors import LoopdbgError


class Run:
    """One run of the engine as the session pulls it (see the module docstring)."""

    def __init__(self, events: Iterator | None, *, finished: ev.RunFinished | None = None,
                 notices=()):
        self.events = events            # the engine's events still to pull (None: no more)
        self.finished = finished
        self.error: LoopdbgError | None = None
        self.loop_started: dict[str, ev.LoopStarted] = {}
        self.loop_ends: dict[str, ev.LoopFinished] = {}
        self.notices: list[ev.Notice] = list(notices)

    def pull(self, timeline) -> ev.IterationDone | None:
        """The next iteration from the engine, appended to ``timeline``, recording the other
        events on the way; None at the end (or at an error, which ``error`` then holds)."""
        gen = self.events
        if gen is None:
            return None
        try:
            iteration_done = ev.IterationDone
            for event in gen:
                kind = type(event)
                if kind is iteration_done:
                    timeline.append(event)
                    return event
                self.note(event)
        except BaseException:
            self.failed()               # records a LoopdbgError, raises anything else
        self.events = None
        return None

    def note(self, event) -> None:
        """Keep what the events other than iterations say (loop starts and ends, notices, end)."""
        kind = type(event)
        if kind is ev.LoopFinished:
            self.loop_ends[event.path] = event
        elif kind is ev.LoopStarted:
            self.loop_started[event.path] = event
            self.loop_ends.pop(event.path, None)
        elif kind is ev.Notice:
            self.notices.append(event)
        elif kind is ev.RunFinished:
            self.finished = event

    def failed(self) -> None:
        """The engine raised while the session pulled (call it in the ``except``): record a
        LoopdbgError, re-raise others. Nothing more is pulled either way."""
        exc = sys.exc_info()[1]
        self.events = None
        if isinstance(exc, LoopdbgError):
            self.error = exc
            return None
        raise exc

    def loop_end_of(self, event) -> ev.LoopFinished | None:
        """How ``event``'s loop execution ended, when the run has said so."""
        end = self.loop_ends.get(event.path)
        return end if end is not None and end.outer == event.outer else None

    def peek_loop_end(self) -> None:
        """Read ahead to a loop's LoopFinished (it follows its last iteration directly)."""
        gen = self.events
        try:
            while True:
                nxt = next(gen)
                kind = type(nxt)
                if kind is ev.Notice:
                    self.notices.append(nxt)
                    continue
                if kind is ev.LoopFinished:
                    self.loop_ends[nxt.path] = nxt
                    return
                # Anything else belongs to later: push it back by chaining.
                self.events = _prepend(nxt, gen)
                return
        except StopIteration:
            self.events = None
        except LoopdbgError as exc:
            self.error = exc
            self.events = None


def _prepend(first, gen):
    yield first
    yield from gen
