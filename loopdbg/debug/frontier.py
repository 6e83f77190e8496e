"""The debugger's hot loop: pulling the engine's iterations while nothing asks to stop.

``Session.continue_`` over 100,000 iterations with a breakpoint ``i == 99999`` spends its time
here, so this loop does per iteration only what it must: hold the event in the history (the
timeline), bind the breakpoint lookup to it, run each breakpoint condition whose loops include
this one (a plainly false answer, ``False`` or ``np.False_``, means "no stop" and nothing else
is looked at; ``i == K`` is one comparison), ask ``want`` and, every 64 iterations, whether a
pause was asked for.

``pull_quiet`` returns at the first iteration that needs the session's attention, with what it
found; the engine's exceptions pass through to the session, which records them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from loopdbg.engine.events import IterationDone

CHECK = "check"         # a condition was not plainly false (or raised): breakpoints.check decides
STOP = "stop"           # ``want`` said yes
PAUSE = "pause"         # a pause or a cancel was asked for (from another thread)
END = "end"             # the run ended

_FALSE = np.False_


class Cursor:
    """Where a session stands, the part of it the frontier moves: ``position`` in its timeline
    and the iteration there (``current``); ``note`` takes every other event of the run and
    ``paused()`` says whether a pause or a cancel was asked for."""

    __slots__ = ("position", "current", "note", "paused")

    def __init__(self, note: Callable, paused: Callable[[], bool]):
        self.position = -1
        self.current = None
        self.note = note
        self.paused = paused


def pull_quiet(cursor: Cursor, timeline, gen, quick: list, want: Callable | None,
               lookup) -> tuple[str, object]:
    """Pull ``gen`` (the engine's events) into ``timeline``, moving ``cursor`` to each
    iteration, until one needs more than the quick conditions (``Breakpoints.quick_conditions``,
    [] for none) and ``want`` (None: never); return (CHECK/STOP/PAUSE, that iteration) or
    (END, None)."""
    append = timeline.append
    note = cursor.note
    paused = cursor.paused
    iteration_done = IterationDone
    count = 0
    last_run = path = None
    for event in gen:
        if type(event) is not iteration_done:
            note(event)
            continue
        cursor.position = append(event)
        cursor.current = event
        lookup.event = event                # (its node values are looked up for this event)
        run = event[0]                      # its LoopRun: one per loop execution
        if run is not last_run:
            last_run, path = run, run.path
        for fn, paths, k in quick:
            if paths is not None and path not in paths:
                continue
            if k is not None:                   # i == K: the iteration itself
                if event[1] != k:
                    continue
                return CHECK, event
            try:
                r = fn(lookup)
            except Exception:  # noqa: BLE001 - breakpoints.check reports it
                return CHECK, event
            if r is not False and r is not _FALSE:
                return CHECK, event
        if want is not None and want(event):
            return STOP, event
        count += 1
        if not count & 63 and paused():
            return PAUSE, event
    return END, None
