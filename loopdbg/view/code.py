"""A loop's pseudo-code as the rows a face shows: a big body's statements folded by the groups
its picture has (``▸ blocks.4 { 52 lines }``), each fold opened in place, names shortened.

    code = CodeView(spec, started, groups)      # groups: a GroupedBody, or None (no folds)
    rows = code.rows()                          # Row per line shown, with what it stands for
    code.open(k); code.close_at(k)              # a fold at row k opened; the group row k is in closed
    code.row_of_step(s)                         # the row showing body step s (its fold when closed)

A row says which body step's value ends it (``step``); a face fetches and writes that value only
for the rows in view, so a stop costs what the screen shows, not the length of the body. No UI
toolkit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from loopdbg.layout.graph import fit_middle, shared_prefix
from loopdbg.teach.pseudocode import pseudocode

Scope = tuple[str, ...]
NAME_WIDTH = 40          # a name longer than this is cut in its middle in the pseudo-code
_INDENT = "    "
_TOKEN = re.compile(r"[^\s,;()]+")     # a name in a line of code


@dataclass(frozen=True)
class Row:
    """One row of the pseudo-code shown."""

    text: str                      # as written (names from the model: a face escapes them)
    phase: str                     # the loop phase it belongs to (teach.pseudocode)
    step: int | None = None        # the body step whose value ends the row
    steps: tuple[int, ...] = ()    # the body steps it stands for (a closed group's: all)
    fold: Scope | None = None      # a closed group's row: the group
    head: Scope | None = None      # an open group's first row: the group
    scope: Scope = ()              # the innermost open group the row is in


class Names:
    """Names as the pseudo-code and tables show them: without the prefix the loop's own name
    already says (``functional_1/lstm_1/while/add`` in loop ``functional_1/lstm_1/while``: ``add``,
    as often as it is repeated) or every body name shares, cut in the middle when long."""

    def __init__(self, spec):
        # the loop's path, its own name, and the scope it sits in (its outer values' names)
        path = spec.path
        self.loop = tuple(p + "/" for p in dict.fromkeys(
            (path, path.rsplit("/", 1)[-1], path.rsplit("/", 1)[0] if "/" in path else ""))
            if p)
        names = [self._unlooped(step.layer.name) for step in spec.body.steps] + \
            [self._unlooped(n) for n in spec.param_names]
        self.prefix = shared_prefix(names)

    def _unlooped(self, name: str) -> str:
        cut = True
        while cut:
            cut = False
            for p in self.loop:
                if name.startswith(p) and len(name) > len(p):
                    name, cut = name[len(p):], True
        return name

    def in_text(self, text: str) -> str:
        """``text`` (a line about the loop) with the names in it shortened."""
        return _TOKEN.sub(lambda m: self.short(m.group(0)), text)

    def short(self, name: str, width: int = NAME_WIDTH) -> str:
        name = self._unlooped(name)
        if self.prefix and name.startswith(self.prefix) and len(name) > len(self.prefix):
            name = name[len(self.prefix):]
        return fit_middle(name, width)


_NAMES: dict[int, tuple[object, Names]] = {}


def names_of(spec) -> Names:
    """The Names of ``spec``'s body (made once per loop)."""
    hit = _NAMES.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = _NAMES[id(spec)] = (spec, Names(spec))
    return hit[1]


class CodeView:
    """The pseudo-code of ``spec`` with ``groups`` (a GroupedBody or None) folding its body."""

    def __init__(self, spec, started=None, groups=None):
        self.spec = spec
        self.names = names_of(spec)
        self.lines = pseudocode(spec, started=started, detail=True, by_mode=True,
                                rename=self.names.short)
        self.opened: frozenset[Scope] = frozenset()
        self.note: str | None = None     # a first row saying why the code shows no values
        self._rows: tuple[tuple, list[Row]] | None = None
        self.set_groups(groups)

    def set_groups(self, groups) -> None:
        """Fold by ``groups`` (a GroupedBody found later, or None)."""
        self.groups, self._rows, self._leaving_steps = groups, None, None
        self._shown_order: list[int] | None = None
        self._parts: dict[Scope, int] = {}
        self._places: dict = {}             # group → _place's answer, for one set of open groups
        self._chains: dict[Scope, list[Scope]] = {}
        # body step → the group box it sits in (a folded weight Convert: its reader's)
        self._scope: dict[int, Scope] = {}
        if groups is not None:
            for k, step in enumerate(self.spec.body.steps):
                lid = groups.folded.get(step.layer.id, step.layer.id)
                self._scope[k] = groups.group_of(lid)

    # -- rows ------------------------------------------------------------------------------------
    def rows(self) -> list[Row]:
        """The rows shown with ``opened`` open (made once per set of open groups)."""
        if self._rows is not None and self._rows[0] == (self.opened, self.note):
            return self._rows[1]
        out: list[Row] = [Row(self.note, "note")] if self.note else []
        body = [line for line in self.lines if line.phase == "body"]
        for line in self.lines:
            if line.phase != "body":
                out.append(Row(self.names.in_text(line.render()), line.phase))
            elif line is body[0]:
                grown: dict[int, list[int]] = {}       # a fold's row → the steps it stands for
                for step in self._order():
                    self._add_body_row(out, body[step], step, grown)
                out = [r if k not in grown else _sized(r, grown[k], self._parts[r.fold])
                       for k, r in enumerate(out)]
        self._rows = ((self.opened, self.note), out)
        return out

    def _order(self) -> list[int]:
        """The body steps in the order shown: each group's steps together (one fold, however
        the body interleaves them with other groups' plumbing), in execution order within it;
        a group stands among the lines and groups around it where its middle step runs."""
        if self._shown_order is None:
            steps = range(len(self.spec.body.steps))
            if self.groups is None:
                self._shown_order = list(steps)
                return self._shown_order
            members: dict[Scope, list[int]] = {}
            for k in steps:
                for p in self._chain(k):
                    members.setdefault(p, []).append(k)
            middle = {p: ks[len(ks) // 2] for p, ks in members.items()}
            # in how many runs of consecutive steps each group's steps execute
            self._parts = {p: 1 + sum(1 for a, b in zip(ks, ks[1:]) if b != a + 1)
                           for p, ks in members.items()}
            self._shown_order = sorted(
                steps, key=lambda k: tuple(middle[p] for p in self._chain(k)) + (k,))
        return self._shown_order

    def _add_body_row(self, out: list[Row], line, step: int, grown: dict) -> None:
        shown, closed, scope = self._place(self._scope.get(step, ()))
        prev = out[-1] if out else None
        if closed is not None and prev is not None and prev.fold == closed:
            grown[len(out) - 1].append(step)            # the fold goes on (the usual case)
            if step in self._leaving(closed):           # its value: the last one leaving it
                out[-1] = replace(prev, step=step)
            return
        if closed is None and prev is not None and prev.fold is None and prev.head is None and \
                prev.step is not None and prev.scope == scope and step > prev.step + 1:
            # lines shown elsewhere (another group's) run between these two
            out.append(Row(self._indent(line, scope) + self._between(prev.step, step), "body",
                           scope=scope))
            prev = out[-1]
        # the open groups entered here get a head row each (the way back out of them)
        entered = [p for p in shown if prev is None or not _within(prev, p)]
        for p in entered:
            out.append(Row(self._indent(line, p[:-1]) + "▾ " + self._label(p, p[:-1]), "body",
                           head=p, scope=p))
        if closed is not None:
            leaving = self._leaving(closed)
            text = self._indent(line, scope) + "▸ " + self._label(closed, scope)
            grown[len(out)] = [step]
            out.append(Row(text, "body", step=step if step in leaving else None, steps=(step,),
                           fold=closed, scope=scope))
            return
        out.append(Row(self._indent(line, scope) + line.text, "body", step=step, steps=(step,),
                       scope=scope))

    def _place(self, group: Scope) -> tuple[list[Scope], Scope | None, Scope]:
        """Where a step of group ``group`` goes with ``opened`` open: (the open groups it is
        shown in, the outermost closed one holding it or None, the innermost open one)."""
        if self._places.get(None) is not self.opened:       # made for another set: anew
            self._places = {None: self.opened}
        key = group
        hit = self._places.get(key)
        if hit is None:
            chain = self._chain_of(group)
            closed = next((p for p in chain if p not in self.opened), None)
            shown = chain[:chain.index(closed)] if closed is not None else chain
            hit = self._places[key] = (shown, closed, shown[-1] if shown else ())
        return hit

    def _between(self, a: int, b: int) -> str:
        """The note between lines of steps ``a`` and ``b``: what runs between them."""
        where = list(dict.fromkeys(self._label(c[0], ()) if c else "top level"
                                   for c in (self._chain(k) for k in range(a + 1, b))))
        more = f" +{len(where) - 2}" if len(where) > 2 else ""
        n = b - a - 1
        return f"┄ {n} line{'s' if n != 1 else ''} shown elsewhere run here " \
               f"({', '.join(where[:2])}{more})"

    def _chain(self, step: int) -> list[Scope]:
        return self._chain_of(self._scope.get(step, ()))

    def _indent(self, line, scope: Scope) -> str:
        return _INDENT * line.indent + "  " * len(self._chain_of(scope))

    def _chain_of(self, scope: Scope) -> list[Scope]:
        """The groups holding ``scope``, outermost first (kept per scope)."""
        if self.groups is None or not scope:
            return []
        hit = self._chains.get(scope)
        if hit is None:
            hit = self._chains[scope] = self.groups.chain(scope)
        return hit

    def _label(self, path: Scope, within: Scope) -> str:
        """A group's name, without that of the open group it is shown in (``fc1`` inside
        ``blocks.4``)."""
        name = self.groups.groups[path].name
        outer = self.groups.groups.get(within)
        if outer is not None and name.startswith(outer.name + "/"):
            name = name[len(outer.name) + 1:]
        return name

    _leaving_steps: dict | None = None
    _step_of: dict[int, int] | None = None       # body layer id → its step

    def _leaving(self, path: Scope) -> set[int]:
        """The body steps of group ``path`` whose values are read outside it."""
        if self._leaving_steps is None:
            self._leaving_steps = {}
        hit = self._leaving_steps.get(path)
        if hit is None:
            step_of = self._steps_by_layer()
            hit = {step_of[i] for i in self.groups.leaving(path) if i in step_of}
            self._leaving_steps[path] = hit
        return hit

    # -- finding rows ----------------------------------------------------------------------------
    def row_of_step(self, step: int) -> int | None:
        """The row showing body step ``step`` (the closed group's that holds it)."""
        for k, row in enumerate(self.rows()):
            if step in row.steps:
                return k
        return None

    # -- opening and closing ---------------------------------------------------------------------
    def open(self, k: int) -> int | None:
        """Open the closed group of row ``k``; the row its first line is on now (None: row
        ``k`` is no closed group)."""
        rows = self.rows()
        if not 0 <= k < len(rows) or rows[k].fold is None:
            return None
        row = rows[k]
        self.opened = self.opened | set(self._chain_of(row.fold))
        return self.row_of_step(row.steps[0]) if row.steps else k

    def close_at(self, k: int) -> int | None:
        """Close the innermost open group row ``k`` is in; the row that group folds to (None:
        row ``k`` is in no open group)."""
        rows = self.rows()
        if not 0 <= k < len(rows):
            return None
        row = rows[k]
        scope = row.head if row.head is not None else row.scope
        if not scope:
            return None
        first = next((r.steps[0] for r in rows[k:] if r.steps), None)
        self.opened = frozenset(p for p in self.opened if p[:len(scope)] != scope)
        if first is None:
            return None
        return self.row_of_step(first)

    def follow(self, opened) -> None:
        """Open the groups ``opened`` (another face's: the picture's) and close the rest."""
        if self.groups is not None:
            self.opened = frozenset(p for p in opened if p in self.groups.groups)

    def row_of(self, box_id: int) -> int | None:
        """The row showing body layer ``box_id`` (its statement, or the closed group holding
        it; a folded weight Convert: its reader's), or group box ``box_id`` (its line)."""
        if box_id < 0:
            group = self.groups.by_id.get(box_id) if self.groups is not None else None
            if group is None:
                return None
            return next((k for k, r in enumerate(self.rows()) if group.path in (r.fold, r.head)),
                        None)
        step = self._steps_by_layer().get(box_id)
        if step is None and self.groups is not None:
            step = self._steps_by_layer().get(self.groups.folded.get(box_id, box_id))
        return self.row_of_step(step) if step is not None else None

    def _steps_by_layer(self) -> dict[int, int]:
        if self._step_of is None:
            self._step_of = {step.layer.id: k for k, step in enumerate(self.spec.body.steps)}
        return self._step_of

    def reveal(self, step: int) -> bool:
        """Open the groups holding body step ``step``; whether any was closed."""
        way = set(self._chain(step))
        if way <= self.opened:
            return False
        self.opened = self.opened | way
        return True


def _within(row: Row, path: Scope) -> bool:
    """Whether ``row`` is inside open group ``path`` (its head, or a row of it)."""
    return row.scope[:len(path)] == path


def _sized(row: Row, steps: list[int], parts: int = 1) -> Row:
    """A closed group's row standing for ``steps``, with its size: ``▸ blocks.4 { 52 lines }``,
    and ``, run in 3 parts`` when other lines run between its own."""
    n = len(steps)
    runs = f", run in {parts} parts" if parts > 1 else ""
    return replace(row, text=f"{row.text} {{ {n} line{'s' if n != 1 else ''}{runs} }}",
                   steps=tuple(steps))
