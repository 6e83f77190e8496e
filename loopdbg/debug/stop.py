"""Where a session stopped and why: ``Stop``, the one value every front end (report, UI) shows.

A ``Stop`` is frozen and built with keywords: whoever receives one can keep it, pass it on or
show it without another part of the program changing it underneath; a different stop is a new one
(``dataclasses.replace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopdbg.engine import events as ev
from loopdbg.errors import LoopdbgError

if TYPE_CHECKING:       # (a name in annotations: `loopdbg run`'s report needs no breakpoints)
    from loopdbg.debug.breakpoints import Hit

STEP, BREAKPOINT, NAN, END, ERROR, PAUSED, NODE, HISTORY, START = (
    "step", "breakpoint", "nan", "end", "error", "paused", "node", "history", "start")


@dataclass(frozen=True, kw_only=True)
class NodeStep:
    """Where node-by-node stepping stands inside an iteration."""

    event: ev.IterationDone
    index: int                     # 0-based index of the node just executed
    total: int
    layer: Any
    values: dict[str, Any] = field(default_factory=dict)   # every value computed so far


@dataclass(frozen=True, kw_only=True)
class Stop:
    """Where a command stopped and why. ``event`` is the iteration just finished (None at the end)."""

    kind: str
    reason: str
    event: ev.IterationDone | None = None
    hit: Hit | None = None
    loop_end: ev.LoopFinished | None = None
    finished: ev.RunFinished | None = None
    error: LoopdbgError | None = None
    node: NodeStep | None = None
    watches: tuple = ()            # (watch, value, error text) for every watch
    position: int = -1             # the ordinal of the event in the session's timeline
