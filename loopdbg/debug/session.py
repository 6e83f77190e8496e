"""A debugging session: the engine's event stream turned into stops you can step between.

The session stands at one iteration of a ``Timeline`` (``loopdbg.engine.timeline``): a live one,
which it fills with the ``IterationDone`` events it pulls from ``Engine.run`` and which keeps the
most recent ones (``history``), or a complete one read from a trace (a replay). It steps forward
(``next``, ``step``, ``finish``, ``continue_``, ``run_to``), node by node inside an iteration
(``step_node``), back (``back``, ``reverse_continue``, ``first``) and straight to an iteration
(``goto``). Moving forward through the timeline replays it; past its newest iteration the session
pulls from the engine. Every move ends in a ``Stop`` that says where and why.

    s = Session.open("model.xml", "inputs.npz")
    s.breakpoints.add("i == 3")
    stop = s.continue_()
    print(format_stop(stop))
    s.back()
"""

from __future__ import annotations


import threading
from typing import Any, Callable, Mapping

from loopdbg.debug import frontier
from loopdbg.debug.breakpoints import (Breakpoints, EventLookup, Hit, loop_names,
                                      non_finite_carried)
from loopdbg.debug.jump import Target, go
from loopdbg.debug.kept import EVERY_LOOP, Kept
from loopdbg.debug.node_walk import NodeWalk
from loopdbg.debug.run import Run
from loopdbg.debug.stop import (BREAKPOINT, END, ERROR, HISTORY, NAN, NODE, PAUSED, START, STEP,
                                NodeStep, Stop)
from loopdbg.engine import events as ev
from loopdbg.engine.paths import matches_loop
from loopdbg.engine.recompute import node_values
from loopdbg.engine.runner import Engine
from loopdbg.engine.timeline import LiveTimeline, Timeline
from loopdbg.errors import LoopdbgError

__all__ = ["BREAKPOINT", "END", "ERROR", "HISTORY", "NAN", "NODE", "PAUSED", "START", "STEP",
           "NodeStep", "Session", "Stop"]

CANCELLED = "cancelled: the session is closing"


class Session:
    """A debugging session over one model and its inputs (see the module docstring)."""

    def __init__(self, engine: Engine, inputs: Mapping[str, Any], *, history: int = 1000,
                 timeline: Timeline | None = None,
                 max_iterations: int | None = None, max_memory: int | None = None,
                 on_nan: bool = False, source: str = "inputs",
                 record: Callable[[Any], Any] | None = None):
        """``timeline`` is where the session keeps the run: by default a ``LiveTimeline`` of the
        last ``history`` iterations; a complete one (a trace's) makes the session a replay that
        runs nothing.

        ``record`` wraps the engine's event stream on every (re)start, e.g. to write a trace:
        ``record=lambda events: recording(events, "run.ltrace", ...)``. When what it returns has a
        ``timeline(engine)`` method (a trace recording does), stepping back past the in-memory
        history reads that timeline."""
        if timeline is None:
            if history < 1:
                raise ValueError("history must hold at least one iteration")
            timeline = LiveTimeline(history)
        if timeline.complete and record is not None:
            raise ValueError("a complete timeline runs nothing, so there is nothing to record")
        self.engine = engine
        self.inputs = inputs
        self.timeline = timeline
        self.max_iterations = max_iterations
        self.max_memory = max_memory
        self.on_nan = on_nan
        self.source = source
        self.record = record
        self._recording = None
        self.breakpoints = Breakpoints(known_names=loop_names(engine.loops))
        self._lookup = EventLookup(previous=timeline.previous)
        self._pause = threading.Event()
        # moved by the frontier; its ``note`` is each run's (restart)
        self._cursor = frontier.Cursor(None, self._pause.is_set)
        self.cancelled = False
        self.restart()

    @classmethod
    def open(cls, model_path, inputs=None, **options) -> "Session":
        """Open a session on a model file; ``inputs`` is a path to an .npz, a dict, or None (random)."""
        from loopdbg.engine.inputs import load_npz, random_inputs
        from loopdbg.ir.load import read_model

        model = read_model(model_path, options.get("max_memory"))
        if inputs is None:
            inputs, source = random_inputs(model), "random inputs"
        elif isinstance(inputs, (str, bytes)) or hasattr(inputs, "__fspath__"):
            source = str(inputs)
            inputs = load_npz(inputs, model=model)
        else:
            source = "inputs"
        return cls(Engine(model), inputs, source=options.pop("source", source), **options)

    # -- state --------------------------------------------------------------------------------
    def restart(self) -> Stop:
        """Start the run again from the beginning (breakpoints and watches are kept)."""
        self.marks: dict[int, str] = {}        # ordinal -> the kind of stop made there (hits)
        timeline = self.timeline
        self._kept = Kept(None, timeline)      # a step's stop keeps its values (debug.kept)
        if timeline.complete:                  # a replay: the timeline is the whole run
            self.run = Run(None, finished=timeline.finished, notices=timeline.notices)
        else:
            ctx, gen = self.engine.start(self.inputs, max_iterations=self.max_iterations,
                                         max_memory=self.max_memory, source=self.source)
            if self.record is not None:
                self.close()
                self._recording = self.record(gen)
                gen = iter(self._recording)
            # What the session can show before its in-memory history: what it records (a trace).
            older = getattr(self._recording, "timeline", None)
            timeline.clear(older(self.engine) if older is not None else None)
            self._kept.ctx = ctx if self.record is None else None     # (a trace: as it was)
            self.run = Run(gen)
        self._cursor.note = self.run.note
        self._pos = -1                  # ordinal of the current stop (-1: before the start)
        self._node: NodeWalk | None = None    # stepping node by node (step_node)
        self.stop = Stop(kind=START,
                         reason="not started: step, next or continue to run the first iteration")
        return self.stop

    @property
    def _pos(self) -> int:
        return self._cursor.position

    @_pos.setter
    def _pos(self, pos: int) -> None:
        # The event is held here too: with a history of one, node stepping reads the next iteration
        # ahead, which pushes the current one out of the timeline while the session stands at it.
        self._cursor.position = pos
        self._cursor.current = self._at(pos) if pos >= 0 else None

    def close(self) -> None:
        """Finish what the session records (a trace is closed with what was computed)."""
        rec, self._recording = self._recording, None
        if rec is not None and hasattr(rec, "close"):
            rec.close()

    # What the run said besides its iterations (``loopdbg.debug.run``).
    @property
    def finished(self) -> ev.RunFinished | None:
        return self.run.finished

    @property
    def error(self) -> LoopdbgError | None:
        return self.run.error

    @property
    def loop_started(self) -> dict[str, ev.LoopStarted]:
        return self.run.loop_started

    @property
    def loop_ends(self) -> dict[str, ev.LoopFinished]:
        return self.run.loop_ends

    @property
    def notices(self) -> list[ev.Notice]:
        return self.run.notices

    @property
    def current(self) -> ev.IterationDone | None:
        """The iteration the session stands at (None before the first one)."""
        return self._cursor.current

    @property
    def done(self) -> bool:
        return (self.finished is not None or self.error is not None) and \
            self._pos >= len(self.timeline) - 1

    @property
    def oldest(self) -> int:
        """The first ordinal the session can step back to."""
        return self.timeline.oldest

    @property
    def newest(self) -> int:
        """The ordinal of the newest iteration run (or recorded) so far."""
        return len(self.timeline) - 1

    def _at(self, pos: int) -> ev.IterationDone:
        event = self.timeline.at(pos)
        if not event.continues:              # a trace knows how every loop execution ended
            end = self.timeline.loop_end(event.path, event.outer)
            if end is not None:
                self.loop_ends[event.path] = end
        return event

    def values(self, event: ev.IterationDone) -> dict[str, Any]:
        """Every value of ``event``'s iteration by name: body Parameters, each node's outputs
        (``name``, ``name:1``, ...) and the body Results. Recomputed when the run did not keep
        them (kernels are pure, so it gives the same values)."""
        return node_values(event) | event.outputs

    def request_pause(self) -> None:
        """Ask a running ``continue_`` (in another thread) to stop at the next iteration."""
        self._pause.set()

    def request_cancel(self) -> None:
        """Stop whatever runs (in another thread) between two iterations, and refuse to run
        again: for a face that is closing. Every later move forward ends at once in a PAUSED
        stop saying so; stepping back and jumping through what was recorded still work."""
        self.cancelled = True             # before the event: advance reads them in that order
        self._pause.set()

    def _cancelled_stop(self) -> Stop:
        return self._make_stop(PAUSED, CANCELLED, self.current)

    # -- pulling from the engine ----------------------------------------------------------------
    def _forward(self) -> ev.IterationDone | None:
        """Move one iteration forward (replaying history, else pulling); None at the end."""
        nxt = self._pos + 1
        if nxt < len(self.timeline):
            self._pos = nxt
            return self._cursor.current
        event = self.run.pull(self.timeline)
        if event is not None:                 # at the frontier: no index arithmetic needed
            self._cursor.position = len(self.timeline) - 1
            self._cursor.current = event
        return event

    def _peek(self) -> ev.IterationDone | None:
        nxt = self._pos + 1
        if nxt < len(self.timeline):
            return self._at(nxt)
        return self.run.pull(self.timeline)

    # -- moving forward -------------------------------------------------------------------------
    def advance(self, want: Callable[[ev.IterationDone], bool] | None, reason: str,
                keep: int = 0) -> Stop:
        """Forward to the first iteration ``want`` accepts (None: none), unless a breakpoint,
        a NaN (with on_nan), a pause or the end stops first; the stop says ``reason``. The
        iterations of loops nested fewer than ``keep`` deep keep every value (``debug.kept``)."""
        if keep:
            return self._kept.around(keep, lambda: self.advance(want, reason))
        self._node = None
        self._pause.clear()
        if self.cancelled:                # a cancel may have come just before the clear
            return self._cancelled_stop()
        on_nan = self.on_nan
        breakpoints = self.breakpoints if self.breakpoints.items else None
        lookup = self._lookup
        forward = self._forward
        timeline = self.timeline
        quick = breakpoints.quick_conditions() if breakpoints is not None else None
        fast = not on_nan and (breakpoints is None or quick is not None)
        count = 0
        gen = None                    # set once the timeline is replayed and the engine is pulled
        while True:
            if gen is not None and fast:
                # At the frontier, while every condition is plainly false: frontier.pull_quiet
                # (the per-iteration cost of a breakpoint is a target of the benchmark).
                try:
                    kind, event = frontier.pull_quiet(self._cursor, timeline, gen, quick or [],
                                                      want, lookup)
                except BaseException:
                    self.run.failed()         # records a LoopdbgError, raises anything else
                    return self._stop_at_end()
                if kind is frontier.END:
                    self.run.events = None
                    return self._stop_at_end()
                if kind is frontier.STOP:
                    return self._make_stop(STEP, reason, event)
                if kind is frontier.PAUSE:
                    return self._paused(event)
                hit = breakpoints.check(lookup)          # CHECK: a condition said more
                if hit is not None:
                    return self._make_stop(BREAKPOINT, hit.reason, event, hit=hit)
                if want is not None and want(event):
                    return self._make_stop(STEP, reason, event)
                continue
            if gen is not None:
                event = self.run.pull(timeline)
                if event is None:
                    return self._stop_at_end()
                self._cursor.position = len(timeline) - 1
                self._cursor.current = event
            elif self._pos + 1 < len(timeline) or self.run.events is None:
                event = forward()
                if event is None:
                    return self._stop_at_end()
            else:
                gen = self.run.events
                continue
            if on_nan:
                stop = self._check(event, lookup)
                if stop is not None:
                    return stop
            elif breakpoints is not None:
                lookup.event = event
                hit = breakpoints.check(lookup)
                if hit is not None:
                    return self._make_stop(BREAKPOINT, hit.reason, event, hit=hit)
            if want is not None and want(event):
                return self._make_stop(STEP, reason, event)
            count += 1
            if not count & 63 and self._pause.is_set():
                return self._paused(event)

    def _paused(self, event) -> Stop:
        """The pause (or cancel) asked for from another thread, seen between two iterations."""
        if self.cancelled:
            return self._make_stop(PAUSED, CANCELLED, event)
        self._pause.clear()
        return self._make_stop(PAUSED, "paused", event)

    def _check(self, event: ev.IterationDone, lookup: EventLookup) -> Stop | None:
        if self.on_nan:
            bad = non_finite_carried(event)
            if bad:
                return self._make_stop(NAN, bad, event)
        if self.breakpoints.items:
            hit = self.breakpoints.check(lookup.bind(event))
            if hit is not None:
                return self._make_stop(BREAKPOINT, hit.reason, event, hit=hit)
        return None

    def step(self) -> Stop:
        """To the next iteration of any loop (into a nested loop's iterations when one runs)."""
        return self.advance(lambda e: True, "step", EVERY_LOOP)

    def next(self) -> Stop:
        """To the next iteration of the current loop, running nested loops to their end
        (before any iteration: to the first iteration of an outermost loop)."""
        cur = self.current
        if cur is None:
            return self.advance(lambda e: not e.outer, "step", 1)
        depth = len(cur.outer)
        return self.advance(lambda e: len(e.outer) <= depth, "next", depth + 1)

    def finish(self) -> Stop:
        """To the last iteration of the current loop."""
        cur = self.current
        if cur is None:
            return self.step()
        if not cur.continues:
            return self.next()
        path, outer, depth = cur.path, cur.outer, len(cur.outer)
        return self.advance(
            lambda e: (e.path == path and e.outer == outer and not e.continues)
            or len(e.outer) < depth, "finish")

    def continue_(self) -> Stop:
        """To the next breakpoint (or NaN with on_nan), else to the end of the run."""
        return self.advance(None, "continue")

    def run_to(self, iteration: int, loop: str | None = None) -> Stop:
        """To iteration ``iteration`` of ``loop`` (default: the current loop, else any)."""
        cur = self.current
        target = loop if loop is not None else (cur.path if cur is not None else None)

        def want(e):
            return e.iteration == iteration and (
                target is None or matches_loop(e.path, target))
        return self.advance(want, f"run to iteration {iteration}")

    def step_node(self) -> Stop:
        """Execute the next body node of the coming iteration (of the current loop)."""
        if self.cancelled:
            return self._cancelled_stop()
        if self._node is None:
            cur = self.current
            target = self._peek()
            if target is None:
                return self._stop_at_end()
            if cur is not None and cur.continues and (target.path, target.outer) != (cur.path, cur.outer):
                return self.step()       # a nested loop comes first: step into it
            self._node = NodeWalk(target)
        node = self._node.next()
        if node is None:
            self._node = None
            return self.step()
        return self._make_stop(NODE, f"node {node.index + 1} of {node.total}: "
                               f"{node.layer.describe()}", self.current, node=node)

    # -- moving back and jumping -------------------------------------------------------------
    def back(self) -> Stop:
        """To the previous iteration of the current loop (else the previous one at its depth).
        In the middle of an iteration's nodes (``step_node``), back to where that iteration began."""
        walking, self._node = self._node, None
        cur = self.current
        if cur is None:
            return self.stop
        if walking is not None:
            return self._make_stop(STEP, f"back to iteration {cur.iteration}, before the next "
                                   f"iteration's nodes", cur)
        depth = len(cur.outer)
        pos = self._find_back(lambda e: (e.path, e.outer) == (cur.path, cur.outer))
        if pos is None:
            pos = self._find_back(lambda e: len(e.outer) <= depth)
        if pos is None:
            return self._history_edge()
        self._pos = pos
        return self._make_stop(STEP, "back", self._at(pos))

    def reverse_continue(self) -> Stop:
        """Back to the previous iteration where a breakpoint condition holds."""
        self._node = None
        lookup = self._lookup

        def hit(e):
            return self.breakpoints.check(lookup.bind(e), count=False) is not None
        pos = self._find_back(hit)
        if pos is None:
            if self.oldest <= 0 and self.newest >= 0:
                self._pos = self.oldest
                return self._make_stop(HISTORY, "no earlier breakpoint hit; at the first iteration",
                                       self._at(self._pos))
            return self._history_edge()
        self._pos = pos
        found = self.breakpoints.check(lookup.bind(self._at(pos)), count=False)
        return self._make_stop(BREAKPOINT, found.reason + " (reverse)", self._at(pos), hit=found)

    def first(self) -> Stop:
        """To the oldest iteration still in the history."""
        return self.show(self.oldest, "first recorded iteration")

    def last(self) -> Stop:
        """To the newest iteration run so far."""
        return self.show(self.newest, "last recorded iteration")

    def jump(self, text: "str | Target") -> Stop:
        """Go to the iteration ``text`` names (``loopdbg.debug.jump``: "17", "-1",
        "outer/inner 3 5", or a Target): through the history when it holds it, else forward by
        running; an iteration behind the history's window is a one-sentence LoopdbgError."""
        return go(self, text)

    def goto(self, path: str, iteration: int, outer: tuple = ()) -> Stop:
        """Straight to ``iteration`` of loop ``path`` at ``outer``, if the timeline holds it
        (O(1); on a replay, any recorded iteration). Raises a one-sentence LoopdbgError if not."""
        return self.show(self.timeline.index(path, iteration, tuple(outer)),
                          f"iteration {iteration} of loop {path}")

    def show(self, pos: int, reason: str) -> Stop:
        """Stand at the iteration at ordinal ``pos`` of the timeline (one it holds)."""
        if self.newest < self.oldest:
            return self.stop
        self._pos = pos
        self._node = None
        return self._make_stop(HISTORY, reason, self.current)

    def _find_back(self, pred) -> int | None:
        pos = self._pos - 1 if self._pos <= self.newest else self.newest
        while pos >= self.oldest:
            if pred(self._at(pos)):
                return pos
            pos -= 1
        return None

    def _history_edge(self) -> Stop:
        if self.oldest > 0:
            text = (f"the history holds only the last {self.timeline.capacity} iterations; "
                    f"record a trace to step back further")
        else:
            text = "at the first iteration: nothing to step back to"
        return self._make_stop(HISTORY, text, self.current)

    # -- stops --------------------------------------------------------------------------------
    def _make_stop(self, kind: str, reason: str, event, *, hit: Hit | None = None,
                   node: NodeStep | None = None) -> Stop:
        loop_end = None
        if event is not None and not event.continues:
            if self._pos >= self.newest and event.path not in self.loop_ends and \
                    self.run.events is not None:
                self.run.peek_loop_end()
            loop_end = self.run.loop_end_of(event)
        stop = Stop(kind=kind, reason=reason, event=event, hit=hit, loop_end=loop_end, node=node,
                    watches=self._watches(event), position=self._pos)
        if kind in (BREAKPOINT, NAN):
            self.marks[self._pos] = kind
        self.stop = stop
        return stop

    def _watches(self, event) -> tuple:
        if self.breakpoints.watches and event is not None:
            return tuple(self.breakpoints.evaluate_watches(self._lookup.bind(event)))
        return ()

    def _stop_at_end(self) -> Stop:
        self._pos = max(self._pos, self.newest)
        event = self.current
        if self.error is not None:
            kind, reason = ERROR, str(self.error)
        else:
            kind, reason = END, "the run finished"
        stop = Stop(kind=kind, reason=reason, event=event, error=self.error,
                    finished=self.finished if self.error is None else None,
                    loop_end=self.run.loop_end_of(event) if event is not None else None,
                    watches=self._watches(event),       # shown at every stop, this one too
                    position=self._pos)
        self.stop = stop
        return stop

