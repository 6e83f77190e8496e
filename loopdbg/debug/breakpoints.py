"""Breakpoints and watches: conditions on iterations, with hit and ignore counts (as in bdb).

Whether to stop for a breakpoint is separate from stepping: the session asks ``check(event)`` after
every iteration it passes, and stepping commands only decide where a step ends.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from loopdbg.debug.expr import RESERVED, Expression, ExprError, Lookup, _truth
from loopdbg.debug.values import is_sequence, numbers
from loopdbg.engine.paths import matches_loop
from loopdbg.ir.model import LAST_VALUE
from loopdbg.text import listing


class EventLookup(Lookup):
    """Names of one iteration: the reserved ones, then body Parameters, Results and nodes."""

    __slots__ = ("event", "_nodes", "_nodes_of", "_previous", "_extra")

    def __init__(self, event=None, previous=None, extra=None):
        self.event = event              # set it (or ``bind``) to look at another iteration
        self._nodes = None
        self._nodes_of = None           # the event whose node values ``_nodes`` holds
        self._previous = previous      # event -> the previous iteration of its loop execution
        self._extra = extra            # names known besides the iteration's (a loop's outputs)

    def bind(self, event) -> "EventLookup":
        self.event = event
        return self

    def previous(self) -> "EventLookup | None":
        prev = self._previous(self.event) if self._previous and self.event is not None else None
        return EventLookup(prev, self._previous) if prev is not None else None

    def name(self, name: str) -> Any:
        e = self.event
        if name == "i" or name == "iteration":
            return e.iteration
        if name == "cond":
            return e.cond
        if name == "trip_count":
            return -1 if e.trip_count is None else e.trip_count
        if name == "loop":
            return e.path
        return self.value(name)

    def value(self, name: str) -> Any:
        """A value of the iteration (or a known output) by name; built-ins are not looked at."""
        e = self.event
        try:
            return e.value(name)
        except KeyError:
            pass
        if self._nodes_of is not e:
            from loopdbg.engine.recompute import node_values
            self._nodes, self._nodes_of = node_values(e), e
        try:
            return self._nodes[name]
        except KeyError:
            pass
        if self._extra is not None and name in self._extra:
            return self._extra[name]
        outputs = [o.name for o in e.spec.outputs]
        if name in outputs:
            raise ExprError(f"'{name}' is an output of loop '{e.path}': it has a value once the "
                            f"loop has ended.")
        raise ExprError(f"'{name}' is not a value of loop '{e.path}'.")


@dataclass
class Breakpoint:
    """A condition checked after every iteration of the loops it applies to.

    ``loop`` restricts it to one loop (its path, or the last part of the path); ``ignore`` skips
    that many hits; a ``temporary`` breakpoint is deleted when it stops the session.
    """

    number: int
    condition: Expression
    loop: str | None = None
    enabled: bool = True
    temporary: bool = False
    ignore: int = 0
    hits: int = 0
    paths: frozenset[str] | None = None   # without ``loop``: the loops that have all its names

    @property
    def text(self) -> str:
        return self.condition.text

    def applies_to(self, path: str) -> bool:
        if self.paths is not None and path not in self.paths:
            return False
        return self.loop is None or matches_loop(path, self.loop)

    def describe(self) -> str:
        parts = [f"breakpoint {self.number} ({self.text})"]
        if self.loop:
            parts.append(f"in loop {self.loop}")
        if not self.enabled:
            parts.append("disabled")
        if self.temporary:
            parts.append("temporary")
        if self.ignore:
            parts.append(f"ignore next {self.ignore}")
        parts.append(f"hit {self.hits} time{'s' if self.hits != 1 else ''}")
        return ", ".join(parts)


@dataclass
class Watch:
    """A watch: an expression shown at every stop (in ``loop`` only, when given), by number."""

    number: int
    expression: Expression
    loop: str | None = None

    @property
    def text(self) -> str:
        return self.expression.text


@dataclass
class Hit:
    """Why ``check`` wants the session to stop: a breakpoint hit, or a condition that raised."""

    breakpoint: Breakpoint
    error: str | None = None

    @property
    def reason(self) -> str:
        if self.error:
            return f"error in breakpoint {self.breakpoint.number} ({self.breakpoint.text}): {self.error}"
        return f"breakpoint {self.breakpoint.number} ({self.breakpoint.text})"


@dataclass
class Breakpoints:
    """The session's breakpoints and watches, numbered from 1 like a debugger's."""

    known_names: dict[str, set[str]] = field(default_factory=dict)   # loop path -> names
    items: dict[int, Breakpoint] = field(default_factory=dict)
    watches: dict[int, Watch] = field(default_factory=dict)
    _next: int = 1
    _next_watch: int = 1

    # -- defining -----------------------------------------------------------------------------
    def add(self, text: str, *, loop: str | None = None, temporary: bool = False,
            ignore: int = 0, enabled: bool = True) -> Breakpoint:
        """A breakpoint on ``text``; ``loop: text`` (a loop's path or name, a colon, the
        condition) scopes it to that loop as ``loop=`` does."""
        loop, text = split_scope(text, loop)
        expr = self.compile(text, loop)
        bp = Breakpoint(self._next, expr, loop, enabled, temporary, ignore,
                        paths=self._paths(expr, loop))
        self.items[bp.number] = bp
        self._next += 1
        return bp

    def watch(self, text: str, *, loop: str | None = None) -> Watch:
        loop, text = split_scope(text, loop)
        w = Watch(self._next_watch, self.compile(text, loop), loop)
        self.watches[w.number] = w
        self._next_watch += 1
        return w

    def edit(self, number: int, text: str) -> Breakpoint:
        bp = self.get(number)
        bp.condition = self.compile(text, bp.loop)
        bp.paths = self._paths(bp.condition, bp.loop)
        return bp

    def get(self, number: int) -> Breakpoint:
        try:
            return self.items[number]
        except KeyError:
            raise ExprError(f"there is no breakpoint {number}.") from None

    def delete(self, number: int) -> None:
        self.get(number)
        del self.items[number]

    def delete_watch(self, number: int) -> None:
        if number not in self.watches:
            raise ExprError(f"there is no watch {number}.")
        del self.watches[number]

    def compile(self, text: str, loop: str | None) -> Expression:
        """Parse and check ``text`` before any run: unknown names are refused here."""
        expr = Expression(text)
        if self.known_names:
            scopes = self._scopes(loop)
            known = set().union(*scopes.values()) if scopes else set()
            unknown = sorted(n for n in _model_names(expr) if n not in known)
            if unknown:
                where = f"loop '{loop}'" if loop else "any loop of the model"
                sample = ", ".join(sorted(known)[:12]) + (", ..." if len(known) > 12 else "")
                raise ExprError(f"'{text}': {listing(repr(n) for n in unknown)} is not a name in "
                                f"{where}; names there: {sample}.")
        return expr

    def shadowed(self, expr: Expression) -> dict[str, list[str]]:
        """The built-in names ``expr`` reads (``i``, ``cond``, ...) that are also the name of a
        model value, with the loops that have one: the built-in wins, the value is
        ``t["name"]``."""
        out: dict[str, list[str]] = {}
        for name in sorted(n for n in getattr(expr, "bare", expr.names) if n in RESERVED):
            loops = [p for p, names in self.known_names.items() if name in names]
            if loops:
                out[name] = loops
        return out

    def _paths(self, expr: Expression, loop: str | None) -> frozenset[str] | None:
        """An unscoped condition applies to the loops that have every name it reads: one that
        names a value of the inner loop only is not an error in every outer iteration."""
        if loop is not None or not self.known_names:
            return None
        wanted = _model_names(expr)
        return frozenset(p for p, names in self.known_names.items() if wanted <= names)

    def _scopes(self, loop: str | None) -> dict[str, set[str]]:
        if loop is None:
            return self.known_names
        scopes = {p: n for p, n in self.known_names.items()
                  if matches_loop(p, loop)}
        if not scopes:
            raise ExprError(f"the model has no loop '{loop}'; its loops are "
                            f"{listing(self.known_names) or 'none'}.")
        return scopes

    # -- checking -----------------------------------------------------------------------------
    def quick_conditions(self) -> list | None:
        """``(condition, loops it applies to or None, K or None)`` triples, when a plainly false
        result from each that applies means "no stop" (every breakpoint enabled and not scoped
        with ``loop``), else None and ``check`` decides every time. K: the condition is
        ``i == K`` (``Expression.iteration_equals``)."""
        items = list(self.items.values())
        if not items or any(not bp.enabled or bp.loop is not None for bp in items):
            return None
        return [(bp.condition.function, bp.paths, bp.condition.iteration_equals)
                for bp in items]

    def check(self, lookup: EventLookup, count: bool = True) -> Hit | None:
        """The first breakpoint that stops at this iteration, counting hits (bdb semantics)."""
        path = lookup.event.path
        for bp in tuple(self.items.values()):
            if not bp.enabled or (bp.loop is not None or bp.paths is not None) and not bp.applies_to(path):
                continue
            try:
                r = bp.condition.evaluate(lookup)
                hit = r if r is True or r is False else _truth(r)
            except Exception as exc:  # noqa: BLE001 - a failing condition stops and says why
                return Hit(bp, _error_text(exc))
            if not hit:
                continue
            if not count:
                return Hit(bp)
            bp.hits += 1
            if bp.ignore > 0:
                bp.ignore -= 1
                continue
            if bp.temporary:
                del self.items[bp.number]
            return Hit(bp)
        return None

    def evaluate_watches(self, lookup: EventLookup) -> list[tuple[Watch, Any, str | None]]:
        out = []
        for w in self.watches.values():
            if w.loop is not None and lookup.event is not None and not (
                    matches_loop(lookup.event.path, w.loop)):
                out.append((w, None, f"not in loop {w.loop}"))
                continue
            try:
                out.append((w, w.expression.evaluate(lookup), None))
            except Exception as exc:  # noqa: BLE001 - shown next to the watch
                out.append((w, None, _error_text(exc)))
        return out


def _model_names(expr: Expression) -> set[str]:
    """The model values ``expr`` reads: bare names that are not built-ins, and every t["..."]."""
    bare = getattr(expr, "bare", expr.names)
    return {n for n in bare if n not in RESERVED} | getattr(expr, "quoted", set())


_SCOPE = re.compile(r"\s*([A-Za-z_][\w./-]*)\s*:(?!=)\s*(\S.*)$", re.S)


def split_scope(text: str, loop: str | None = None) -> tuple[str | None, str]:
    """``("outer", "i == 2")`` from ``"outer: i == 2"``: a condition scoped to one loop.

    A colon after a leading name cannot start a valid expression (slices are inside brackets),
    so the form is unambiguous. An explicit ``loop`` and a prefix must agree.
    """
    m = _SCOPE.match(text)
    if m is None or keyword.iskeyword(m.group(1)):        # lambda: ... is refused as it is
        return loop, text
    prefix, rest = m.group(1), m.group(2).strip()
    if loop is not None and loop != prefix:
        raise ExprError(f"'{text}' names loop '{prefix}' but the breakpoint is for loop '{loop}'.")
    return prefix, rest


def _error_text(exc: Exception) -> str:
    text = str(exc).strip().rstrip(".")
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, ExprError) else text


def non_finite(named: Iterable[tuple[str, str, Any]]) -> tuple[str, str, int, int] | None:
    """The first (kind, name, nan count, inf count) among float values holding NaN or Inf."""
    for kind, name, value in named:
        if value is None:                      # an empty optional
            continue
        if is_sequence(value):                 # an ONNX sequence: its tensors, by position
            found = non_finite((kind, f"{name}[{k}]", v) for k, v in enumerate(value))
            if found is not None:
                return found
            continue
        a = numbers(np.asarray(value))         # bfloat16 and float8 too
        if a is not None and a.dtype.kind in "fc" and not np.isfinite(a).all():
            return kind, name, int(np.isnan(a).sum()), int(np.isinf(a).sum())
    return None


def non_finite_carried(event) -> str | None:
    """What ``on_nan`` stops for in an iteration: the first back edge, scan output slice or
    last-value output holding NaN or Inf ("NaN and Inf in back edge 'h'"), else None."""
    bad = non_finite([("back edge", n, v) for n, v in event.back_edges.items()] +
                     [("scan output", n, v) for n, v in event.scan_slices.items()] +
                     [("output", o.name, event.body_out[o.result_pos])
                      for o in event.spec.outputs if o.kind == LAST_VALUE])
    if bad is None:
        return None
    kind, name, nans, infs = bad
    what = " and ".join(t for t, c in (("NaN", nans), ("Inf", infs)) if c)
    return f"{what} in {kind} '{name}'"


def loop_names(loops) -> dict[str, set[str]]:
    """The names a condition may use in each loop (path -> names): body Parameters, Results,
    nodes and their extra outputs ("cell:1")."""
    names = {}
    for path, spec in loops.items():
        known = set(spec.param_names) | set(spec.result_names)
        known |= {s.layer.name for s in spec.body.steps}
        known |= set(spec.body.all_value_names)
        names[path] = known
    return names
