"""A loop body as a picture: which of its groups are open, what is laid out, where a node is.

    body = BodyView(spec)            # a big body is grouped (loopdbg.layout.grouped), else flat
    body.target()                    # what to lay out: the spec, or its open groups
    cursor = body.open(box_id)       # a group opened in place; the box the cursor goes to
    body.find("MatMul_9")            # any node, closed groups or not (then body.reveal(id))

No UI toolkit: a face (the terminal UI, a picture written by ``loopdbg graph``) asks this what to
draw and where the cursor goes, and draws.
"""

from __future__ import annotations

import re
from collections import Counter

from loopdbg.layout.compound import OpenGroups
from loopdbg.layout.grouped import GroupedBody, grouped_body, grouped_known
from loopdbg.layout.groups import MIN_GROUPED, natural_order as _natural
from loopdbg.view.fit import value_keys


_UNSET = object()
MAX_BOXES = 600          # opening more closes the groups not on the way to the one opened (each
                         # open group is laid out alone, in a few hundred boxes at most)


class BodyView:
    """One loop body shown: its groups (None for a small body) and which are open."""

    def __init__(self, spec):
        self.spec = spec
        self._groups: GroupedBody | None | object = _UNSET
        self.opened: frozenset = frozenset()
        self._ids_by_name: dict[str, int] | None = None
        self._order: dict[int, int] | None = None
        self._followed: frozenset = frozenset()     # the groups the other face last had open

    @property
    def groups(self) -> GroupedBody | None:
        """The body's groups (None for a small body); found on first use (a tenth of a second
        on a body of 3,000 layers: a face asks ``ready`` first and finds them off its UI
        thread)."""
        if self._groups is _UNSET:
            self._groups = grouped_body(self.spec)
        return self._groups            # type: ignore[return-value]

    @property
    def ready(self) -> bool:
        """Whether the groups are known (``target`` then costs no grouping)."""
        if self._groups is _UNSET and (grouped_known(self.spec) or
                                       len(self.spec.body.graph.layers) < MIN_GROUPED):
            self._groups = grouped_body(self.spec)      # known, or small: nothing to find
        return self._groups is not _UNSET

    @property
    def grouped(self) -> bool:
        return self.groups is not None

    def target(self, opened: frozenset | None = None):
        """What is laid out: the body itself, or its groups with ``opened`` open (each open
        group laid out alone, ``layout.compound``); ``opened``: another set than this one's."""
        if self.groups is None:
            return self.spec
        return OpenGroups(self.groups, self.opened if opened is None else opened)

    # -- what a box shows ------------------------------------------------------------------------
    def value_names(self, box_id: int) -> tuple[str, ...]:
        """The value names box ``box_id`` shows (a group's: those of the first value leaving
        it), the first one found wins."""
        if box_id >= 0:
            return value_keys(self.spec).get(box_id, ())
        gb = self.groups
        if gb is None or box_id not in gb.by_id:
            return ()
        out = gb.leaving(gb.by_id[box_id].path)
        return value_keys(self.spec).get(out[0], ()) if out else ()

    def layer_id(self, name: str) -> int | None:
        """The body layer whose value is called ``name``."""
        if self._ids_by_name is None:
            self._ids_by_name = {names[0]: lid for lid, names in value_keys(self.spec).items()
                                 if names}
        return self._ids_by_name.get(name)

    def box_of(self, layer_id: int) -> int:
        """The box that shows layer ``layer_id`` now: its own, or the closed group holding it."""
        return layer_id if self.groups is None else self.groups.box_of(layer_id, self.opened)

    def first_group(self, boxes) -> int | None:
        """Of the group boxes among ``boxes``, the one whose first node runs first (the
        embedding before the blocks, the blocks before the head): where the cursor starts."""
        gb = self.groups
        if gb is None:
            return None
        if self._order is None:
            self._order = {n.id: k for k, n in enumerate(gb.full.nodes)}
        ids = [b.id for b in boxes if b.id < 0 and b.id in gb.by_id]
        # a repeated family (blocks.0 … blocks.23) is what the body is made of: its first one
        families = Counter(_family(gb.by_id[g].name) for g in ids)
        repeated = [g for g in ids if families[_family(gb.by_id[g].name)] >= 3
                    and _family(gb.by_id[g].name) != gb.by_id[g].name]
        if repeated:
            return min(repeated, key=lambda g: _natural(gb.by_id[g].path))
        key = {g: min((self._order.get(i, 1 << 30) for i in gb.by_id[g].all_nodes()),
                      default=1 << 30) for g in ids}
        return min(ids, key=key.__getitem__) if ids else None

    def outside_of(self, box_id: int | None) -> int | None:
        """For an open group's ``from outside`` (``to outside``) box: the box now showing the
        first value it reads from (the first node reading what leaves), else None."""
        gb = self.groups
        nodes = gb.beyond.get(box_id) if gb is not None and box_id is not None else None
        return self.box_of(next(iter(nodes))) if nodes else None

    # -- opening and closing ---------------------------------------------------------------------
    def is_group(self, box_id: int | None) -> bool:
        return self.groups is not None and box_id is not None and box_id in self.groups.by_id

    def open(self, box_id: int) -> int | None:
        """Open group ``box_id`` in place; the box the cursor goes to (the first it holds)."""
        gb = self.groups
        if not self.is_group(box_id):
            return None
        group = gb.by_id[box_id]
        self._open_keeping(set(gb.chain(group.path)))
        inside = set(group.all_nodes())
        first = next((n.id for n in gb.full.nodes if n.id in inside), None)
        return gb.box_of(first, self.opened) if first is not None else None

    def close_at(self, box_id: int | None) -> int | None:
        """Close the innermost open group box ``box_id`` is in (and those inside it); the id of
        the closed group's box, or None when it is in no open group."""
        gb = self.groups
        if gb is None or not self.opened or box_id is None:
            return None
        path = gb.by_id[box_id].path[:-1] if self.is_group(box_id) else gb.group_of(box_id)
        chain = [p for p in gb.chain(path) if p in self.opened]
        if not chain:
            return None
        closing = chain[-1]
        self.opened = frozenset(p for p in self.opened if p[:len(closing)] != closing)
        return gb.ids[closing]

    def reveal(self, box_id: int) -> bool:
        """Open the groups on the way to ``box_id`` (a node or a group); whether any opened."""
        if self.groups is None:
            return False
        way = set(self.groups.way_to(box_id))
        if way <= self.opened:
            return False
        self._open_keeping(way)
        return True

    def follow(self, opened: frozenset, selected: int | None) -> int | None:
        """Open the groups ``opened`` (another face's open groups: the pseudo-code's) and close
        the rest; past MAX_BOXES boxes only the groups newly opened stay open (or none). The box that
        shows ``selected`` now (the closed group holding it)."""
        gb = self.groups
        if gb is None:
            return selected
        opened = frozenset(p for p in opened if p in gb.groups)
        # new: opened since the other face's last change (this one may hold fewer open)
        last, self._followed = self._followed, opened
        if opened != self.opened:
            new = frozenset(q for p in opened - (last | self.opened) for q in gb.chain(p))
            # too many boxes: only what was just opened; still too many: everything closed
            opened = next((o for o in (opened, new) if gb.box_count(o) <= MAX_BOXES),
                          frozenset())
        self.opened = opened
        if selected is None:
            return None
        for p in gb.way_to(selected):
            if p not in opened:
                return gb.ids[p]
        return selected

    def opening(self, box_id: int) -> frozenset | None:
        """The groups ``open(box_id)`` would leave open (None: ``box_id`` is no group), so that
        a face can lay that picture out ahead, while the cursor rests on the group."""
        if not self.is_group(box_id):
            return None
        return self._keeping(set(self.groups.chain(self.groups.by_id[box_id].path)))

    def _open_keeping(self, way: set) -> None:
        self.opened = self._keeping(way)

    def _keeping(self, way: set) -> frozenset:
        """The open groups plus those of ``way``; when that would show more than MAX_BOXES
        boxes, only ``way`` (the other open groups close)."""
        opened = self.opened | way
        if self.groups.box_count(opened) > MAX_BOXES:
            opened = frozenset(way)
        return frozenset(opened)

    # -- finding ---------------------------------------------------------------------------------
    def findable(self, boxes=()) -> list[tuple[int, str, str]]:
        """``(id, name, type)`` of everything ``find`` reaches: in a grouped body every node and
        group, else the laid-out ``boxes``."""
        gb = self.groups
        if gb is None:
            return [(b.id, b.name, b.type) for b in boxes]
        items = [(n.id, n.name, n.type) for n in gb.full.nodes]
        return items + [(gb.ids[p], g.name, "group") for p, g in gb.groups.items()]

    def find(self, needle: str, after: int | None, boxes=()) -> tuple[int, str] | None:
        """The next item after ``after`` whose name (else type) holds ``needle`` (lower case)."""
        items = self.findable(boxes)
        start = next((k for k, it in enumerate(items) if it[0] == after), -1)
        order = items[start + 1:] + items[:start + 1]
        exact = next((it for it in order if it[2] == "group" and it[1].lower() == needle), None)
        if exact is not None:           # "blocks.5" is the group, not a weight named after it
            return exact[0], exact[1]
        for field in (1, 2):
            for it in order:
                if needle in it[field].lower():
                    return it[0], it[1]
        return None


def _family(name: str) -> str:
    """``blocks.4`` → ``blocks``: the name without its trailing number."""
    return re.sub(r"[._]?\d+$", "", name)
