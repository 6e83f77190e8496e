"""A loop's life as strips of its iterations, with markers: what the UI's timeline (`t`) draws.

For the loop execution the session stands in, and each loop around it (outermost first), a
``Strip`` says, per cell of a given width, what its iterations hold, the strongest marker of the
cell winning: the current iteration, a breakpoint hit, the first NaN/Inf, the iteration whose
condition ended the loop, an iteration the history still holds, one it no longer holds. A long
loop is binned (several iterations a cell), so a strip of 100,000 iterations costs what its
width costs, plus one look for the first NaN/Inf in the iterations held (at most ``NAN_SCAN``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from loopdbg.debug.breakpoints import non_finite

# Markers, weakest first: a cell shows the strongest of its iterations'.
UNKNOWN, GONE, HELD, END, NAN, HIT, CURRENT = range(7)
NAN_SCAN = 5000              # iterations looked at for the first NaN/Inf of an execution


@dataclass(frozen=True)
class Strip:
    """One execution of a loop as a strip of cells, each for ``per_cell`` iterations."""

    path: str
    outer: tuple[int, ...]
    count: int                      # iterations of this execution known so far (max index + 1)
    per_cell: int                   # iterations a cell stands for
    cells: tuple[int, ...]          # a marker per cell
    current: int | None             # the iteration the session stands at in this loop
    first_nan: int | None           # the first iteration whose values hold NaN/Inf (if seen)
    ended: bool                     # the execution's last iteration is known

    def cell_of(self, iteration: int) -> int:
        return iteration // self.per_cell


def _nan_iteration(timeline, ordinals: Sequence[int]) -> int | None:
    for n in ordinals[:NAN_SCAN]:
        e = timeline.at(n)
        named = [("back edge", k, v) for k, v in e.back_edges.items()] + \
            [("scan slice", k, v) for k, v in e.scan_slices.items()]
        if non_finite(named) is not None:
            return e.iteration
    return None


def strip(session, path: str, outer: tuple[int, ...], width: int,
          current: int | None = None, _cache: dict | None = None) -> Strip:
    """The strip of loop ``path``'s execution at ``outer``, ``width`` cells wide."""
    timeline = session.timeline
    ordinals = timeline.iterations(path, outer)
    events = (timeline.at(ordinals[0]), timeline.at(ordinals[-1])) if ordinals else ()
    last = events[-1] if events else None
    count = max((last.iteration + 1) if last is not None else 0,
                (current + 1) if current is not None else 0)
    ended = last is not None and not last.continues
    width = max(width, 1)
    per_cell = max(-(-count // width), 1)
    n_cells = -(-count // per_cell) if count else 0
    cells = [UNKNOWN] * n_cells

    def mark(iteration: int, kind: int) -> None:
        c = iteration // per_cell
        if 0 <= c < n_cells and cells[c] < kind:
            cells[c] = kind

    if ordinals:
        first = events[0].iteration
        for c in range(min(first // per_cell, n_cells)):
            cells[c] = GONE
        for c in range(first // per_cell, min(last.iteration // per_cell + 1, n_cells)):
            cells[c] = max(cells[c], HELD)
    key = (path, outer, len(ordinals), ordinals[-1] if ordinals else None)
    first_nan = None
    if _cache is not None and key in _cache:
        first_nan = _cache[key]
    elif ordinals:
        first_nan = _nan_iteration(timeline, ordinals)
        if _cache is not None:
            _cache[key] = first_nan
    if ended:
        mark(last.iteration, END)
    if first_nan is not None:
        mark(first_nan, NAN)
    for n, kind in session.marks.items():
        try:
            e = timeline.at(n)
        except IndexError:
            continue
        if e.path == path and tuple(e.outer) == tuple(outer):
            mark(e.iteration, HIT)
    if current is not None:
        mark(current, CURRENT)
    return Strip(path, tuple(outer), count, per_cell, tuple(cells), current, first_nan, ended)


def strips(session, event, width: int, cache: dict | None = None) -> list[Strip]:
    """The strips of the loop execution ``event`` belongs to and of every loop around it,
    outermost first."""
    if event is None:
        return []
    loops = session.engine.loops
    chain = sorted((p for p in loops if event.path.startswith(p + "/")), key=len) + [event.path]
    out = []
    for depth, p in enumerate(chain):
        if p == event.path:
            out.append(strip(session, p, tuple(event.outer), width, event.iteration, cache))
        else:
            outer = tuple(event.outer)[:depth]
            here = event.outer[depth] if depth < len(event.outer) else None
            out.append(strip(session, p, outer, width, here, cache))
    return out
