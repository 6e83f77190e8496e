"""Go to an iteration: what a person types at the UI's `:` prompt, read into a ``Target``.

    17                 iteration 17 of the current loop (at the current outer iterations)
    -1                 the last iteration of the current loop's execution (-2 the one before)
    inner 5            iteration 5 of loop ``inner`` (its path or short name)
    outer/inner 3 5    iteration 5 of ``outer/inner`` in outer iteration 3

Outer iterations not given are the current ones when the current iteration is inside that loop's
execution, else 0. ``Session.jump`` goes there (``go``): through the history when it holds the
iteration, by running the engine when the iteration lies ahead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from loopdbg.engine.events import IterationDone
from loopdbg.engine.paths import matches_loop
from loopdbg.errors import LoopdbgError
from loopdbg.text import listing

HINT = "17   ·   -1 (the last)   ·   inner 5   ·   outer/inner 3 5"


@dataclass(frozen=True)
class Target:
    """Where a jump goes: an iteration of a loop's execution at the given outer iterations."""

    path: str
    iteration: int                  # negative: from the end of the execution (-1 the last)
    outer: tuple[int, ...]

    def __str__(self) -> str:
        at = f" at outer iterations {list(self.outer)}" if self.outer else ""
        which = "the last iteration" if self.iteration == -1 else (
            f"iteration {self.iteration}" if self.iteration >= 0 else
            f"the iteration {-self.iteration - 1} before the last")
        return f"{which} of loop '{self.path}'{at}"


def _int(token: str, text: str) -> int:
    try:
        value = int(token)
    except ValueError:
        raise LoopdbgError(f"'{text[:60]}': {token[:30]!r} is not an iteration number; "
                           f"try {HINT}.") from None
    if abs(value) > 2**62:
        raise LoopdbgError(f"'{text[:60]}': {token[:30]} is out of range.")
    return value


def parse_target(text: str, loops: Sequence[str], current: IterationDone | None) -> Target:
    """Read ``text`` (see the module docstring) against the model's loop paths and the
    iteration the session stands at; a one-sentence LoopdbgError when it names nothing."""
    tokens = text.replace(",", " ").split()
    if not tokens:
        raise LoopdbgError(f"type an iteration: {HINT}.")
    if len(tokens) > 66:
        raise LoopdbgError("too many numbers: a loop is nested at most 64 deep.")
    path = None
    if not tokens[0].lstrip("+-")[:1].isdigit():      # a loop's name first
        name = tokens.pop(0)
        hits = [p for p in loops if matches_loop(p, name)]
        if not hits:
            raise LoopdbgError(f"no loop is named {name[:60]!r}; the loops: "
                               f"{listing(loops) or 'none'}.")
        if len(hits) > 1:
            raise LoopdbgError(f"{name[:60]!r} names several loops ({listing(hits)}); give "
                               f"the whole path.")
        path = hits[0]
    if path is None:
        if current is None:
            if not loops:
                raise LoopdbgError("this model has no loop to go into.")
            path = loops[0]
        else:
            path = current.path
    numbers = [_int(t, text) for t in tokens]
    if not numbers:
        raise LoopdbgError(f"which iteration of loop '{path}'? e.g. '{path} 3'.")
    depth = sum(1 for p in loops if path.startswith(p + "/"))
    *outer, iteration = numbers
    if len(outer) > depth:
        raise LoopdbgError(f"loop '{path}' is inside {depth} loop{'s' * (depth != 1)}: give at "
                           f"most {depth} outer iteration{'s' * (depth != 1)} before its own.")
    if any(k < 0 for k in outer):
        raise LoopdbgError("outer iterations are counted from 0.")
    full = tuple(outer) + current_outer(path, depth, current)[len(outer):]
    return Target(path, iteration, full + (0,) * (depth - len(full)))


def current_outer(path: str, depth: int, current: IterationDone | None) -> tuple[int, ...]:
    """The outer iterations of loop ``path`` that the current iteration implies (as many as
    it knows of, up to ``depth``)."""
    if current is None:
        return ()
    if current.path == path or current.path.startswith(path + "/"):   # there, or inside it
        return tuple(current.outer)[:depth]
    if path.startswith(current.path + "/"):                            # it runs in this one
        return (tuple(current.outer) + (current.iteration,))[:depth]
    return ()


def go(session, text: "str | Target"):
    """``session.jump(text)``: go to the iteration ``text`` names, through ``session``'s
    timeline when it holds it (``Session.show``), else forward by running (``Session.advance``);
    an iteration behind the history's window is a one-sentence LoopdbgError."""
    target = text if isinstance(text, Target) else \
        parse_target(text, list(session.engine.loops), session.current)
    path, outer, k = target.path, target.outer, target.iteration
    timeline = session.timeline
    if k < 0:                             # from the end of that execution
        held = timeline.iterations(path, outer)
        last = timeline.at(held[-1]) if held else None
        if last is None or last.continues:
            stop = session.advance(lambda e: e.path == path and e.outer == outer
                                   and not e.continues, f"go to {target}")
            if k == -1 or stop.event is None or stop.event.path != path or \
                    stop.event.continues:
                return stop
            last = stop.event
        k = last.iteration + 1 + k
        if k < 0:
            raise LoopdbgError(f"loop '{path}' ran {last.iteration + 1} iterations there; "
                               f"{target} does not exist.")
    n = timeline.find(path, k, outer)
    if n is not None:
        return session.show(n, f"go to {target}")
    held = timeline.iterations(path, outer)
    now = current_outer(path, len(outer), session.current)
    if (held and timeline.at(held[0]).iteration > k) or \
            (len(now) == len(outer) and outer < now):
        raise LoopdbgError(timeline.missing(path, k, outer).rstrip(".") +
                           " any more: the history keeps the newest iterations (record "
                           "the run with --trace to reach every one).")
    if held and not timeline.at(held[-1]).continues:
        raise LoopdbgError(f"loop '{path}' stopped after {timeline.at(held[-1]).iteration + 1}"
                           f" iterations there; it has no iteration {k}.")
    stop = session.advance(lambda e: e.path == path and e.outer == outer and
                           (e.iteration == k or not e.continues),
                           f"go to iteration {k} of loop '{path}'")
    e = stop.event
    if e is not None and e.path == path and e.outer == outer and e.iteration < k:
        # the loop ended first: stay at its last iteration and say why
        return replace(stop, reason=f"there is no iteration {k}: loop '{path}' ran "
                                    f"{e.iteration + 1} iterations (this is its last)")
    return stop
