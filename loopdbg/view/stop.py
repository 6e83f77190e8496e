"""One stop as a face of loopdbg sees it: the Stop, the session it came from, and what is derived
from them on first use (the shown iteration, its loop's mode, the recent iterations, the outputs
known, every value of an iteration, the loop to show before any iteration ran).

No UI toolkit: the terminal UI hands a ``View`` to each of its panels after every stop; a browser
or a notebook face would read the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from loopdbg.debug.session import Session, Stop
from loopdbg.layout.graph import shared_prefix
from loopdbg.view.code import names_of

HISTORY_LIMIT = 48          # iterations of the current loop execution a panel can plot


@dataclass(frozen=True)
class View:
    """One stop as the panels see it. What is derived from the session is computed on first use.

    Panels must not change the session; read what the stop says, and ask the session only for
    values (``values``) and for the timeline of the run (``session.timeline``).
    """

    stop: Stop
    session: Session

    @cached_property
    def event(self):
        """The iteration shown: the stop's, or the one being run node by node."""
        stop = self.stop
        return stop.event or (stop.node.event if stop.node else None)

    @cached_property
    def started(self):
        """The ``LoopStarted`` of the shown iteration's loop (None without one, or in a replay)."""
        e = self.event
        return self.session.loop_started.get(e.path) if e is not None else None

    @cached_property
    def mode(self) -> str:
        """The loop's mode (for, while, do-while, ...) or "" before any iteration."""
        if self.event is None:
            return ""
        from loopdbg.teach.modes import loop_mode
        return loop_mode(self.event.spec, self.started).mode

    @cached_property
    def history(self) -> list:
        """The recent iterations of the shown loop execution up to the stop, oldest first."""
        e = self.event
        if e is None:
            return []
        session = self.session
        timeline = session.timeline
        pos = session.stop.position if session.stop.position >= 0 else session.newest
        recent = [n for n in timeline.iterations(e.path, e.outer) if n <= pos][-HISTORY_LIMIT:]
        return [timeline.at(n) for n in recent]

    @cached_property
    def outputs(self) -> dict[str, Any]:
        """Values known besides the iteration's: the shown loop's outputs when this stop is its
        last iteration (or, with no iteration, of every loop that ran none), and the model's
        outputs at the end of the run."""
        stop, session = self.stop, self.session
        out: dict[str, Any] = {}
        if self.event is None:
            for end in session.loop_ends.values():
                if end.iterations == 0:
                    out.update(end.outputs)
        elif stop.loop_end is not None:
            out.update(stop.loop_end.outputs)
        if stop.finished is not None:
            out.update(stop.finished.outputs)
        return out

    @property
    def breakpoints(self):
        return self.session.breakpoints

    def values(self, event) -> dict[str, Any]:
        """Every value of an iteration by name (body Parameters, nodes, Results); computed
        once per view and iteration (the panels that show node values share it)."""
        cache = self.__dict__.setdefault("_values", {})
        key = id(event)
        if key not in cache:
            cache[key] = (event, self.session.values(event))   # the event kept: ids stay unique
        return cache[key][1]

    def crumbs(self, path: str) -> str:
        """A loop path as breadcrumbs, ``outer › inner``: split only where an enclosing loop's
        path ends (a loop's own name may hold a "/")."""
        return " › ".join(self._crumb_parts(path))

    def _crumb_parts(self, path: str) -> list[str]:
        loops = self.session.engine.loops
        parts, start = [], 0
        for k, ch in enumerate(path):
            if ch == "/" and path[:k] in loops:
                parts.append(path[start:k])
                start = k + 1
        parts.append(path[start:])
        return parts

    def short_crumbs(self, path: str) -> str:
        """``crumbs`` with its names shortened as the pseudo-code shortens names: the outermost
        loop without the scope every outermost loop of the model shares
        (``forward_lstm_1/while`` of ``functional_1/bidirectional_1/forward_lstm_1/while`` beside
        ``…/backward_lstm_1/while``), an inner loop as its outer loop's code names it. The full
        path stays in ``crumbs`` (the graph's title)."""
        loops = self.session.engine.loops
        outermost = [p for p in loops
                     if not any(p.startswith(q + "/") for q in loops if q != p)]
        prefix = shared_prefix(outermost)
        out, at = [], 0
        for n, part in enumerate(self._crumb_parts(path)):
            if n == 0:
                short = part[len(prefix):] if prefix and part.startswith(prefix) else part
            else:
                short = names_of(loops[path[:at - 1]]).short(part, len(part))
            out.append(short or part)
            at += len(part) + 1
        return " › ".join(out)

    @cached_property
    def first_loop(self):
        """``(spec, ran_none)``: the loop to show before any iteration (the first that ran
        none, else the model's first outermost loop: the one a run enters first), and whether
        it ran none; None without loops."""
        session = self.session
        specs = outermost_first(session.engine.loops)
        if not specs:
            return None
        ended = {e.path for e in session.loop_ends.values() if e.iterations == 0}
        spec = next((s for s in specs if s.path in ended), specs[0])
        return spec, spec.path in ended

    def again(self, stop: Stop | None = None) -> "View":
        """The same stop shown again (breakpoints or watches changed; ``stop`` with new watches).

        What was read from the timeline is kept: the app may re-show while a command runs in
        the worker thread, which alone may use the timeline then.
        """
        view = View(stop if stop is not None else self.stop, self.session)
        for kept in ("history", "_values"):
            if kept in self.__dict__:
                view.__dict__[kept] = self.__dict__[kept]
        return view


def outermost_first(loops: dict) -> list:
    """The specs of ``loops`` (by loop path), the outer loops before those nested in them.

    The engine finds a nested loop while compiling its parent's body, so its dict holds the
    inner loops first; a face showing "the model's first loop" means the one a run enters."""
    specs = list(loops.values())
    return sorted(specs, key=lambda s: _depth(s.path, loops))


def _depth(path: str, loops: dict) -> int:
    """How many loops enclose loop ``path`` (a loop's own name may hold a "/")."""
    return sum(1 for k, ch in enumerate(path) if ch == "/" and path[:k] in loops)

