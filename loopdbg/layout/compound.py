"""A big body's picture built group by group: each open group laid out alone and put in place.

    target = OpenGroups(gb, opened)            # gb: a GroupedBody; opened: the open groups
    layout = layout_body(target)               # = target.lay_out(value_width, cached_only)

The top level (``GroupedBody.level(())``: the Parameters, the Results, one box per group) is laid
out alone; so is every open group (its nodes, its inner groups as boxes, two stubs for what it
reads from outside and what leaves it), and its picture goes inside a frame that takes the place
of its box in the picture of the group around it. Each piece is one ``dot`` call of its own
boxes only, cached by the group and which groups inside it are open: opening a group lays out
that group and the pieces around it whose boxes grew; the rest comes from the cache. Edges
between a group's inside and its outside end at its frame (and start, inside, at its stubs).
Nothing here imports a UI toolkit.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace

from loopdbg.layout import dot
from loopdbg.layout.boxes import Box, EdgePath, Layout, box_size
from loopdbg.layout.grouped import GroupedBody
from loopdbg.layout.groups import Group

# GroupedBody -> {(group path, the open groups inside it, value width): its composed picture}
_PIECES: "weakref.WeakKeyDictionary[GroupedBody, dict[tuple, Layout]]" = \
    weakref.WeakKeyDictionary()
dot.also_clear(_PIECES.clear)


@dataclass(frozen=True, eq=False)
class OpenGroups:
    """What a grouped body's picture shows: ``groups`` with ``opened`` open."""

    groups: GroupedBody
    opened: frozenset

    @property
    def name(self) -> str:
        return self.groups.full.name

    @property
    def nodes(self):
        """Every box shown, across the pieces (frames and stubs not counted)."""
        return self.groups.view(self.opened).nodes

    def closed(self) -> "OpenGroups":
        """The same body with every group closed."""
        return OpenGroups(self.groups, frozenset())

    def lay_out(self, value_width: int, cached_only: bool = False) -> Layout | None:
        """The composed picture (None with ``cached_only`` when a piece is not laid out yet)."""
        return _piece(self.groups, self.groups.root, self.opened, value_width, cached_only)


def _piece(gb: GroupedBody, group: Group, opened: frozenset, value_width: int,
           cached_only: bool) -> Layout | None:
    """Group ``group`` laid out with the groups of ``opened`` inside it open."""
    path = group.path
    inside = frozenset(p for p in opened if len(p) > len(path) and p[:len(path)] == path)
    key = (path, inside, value_width)
    pieces = _PIECES.setdefault(gb, {})
    hit = pieces.get(key)
    if hit is not None:
        return hit
    inner: dict[int, Layout] = {}
    for child in group.children:
        if child.path in opened:
            lay = _piece(gb, child, opened, value_width, cached_only)
            if lay is None:
                return None
            inner[gb.ids[child.path]] = lay
    bg = gb.level(path)
    sizes = {n.id: box_size(n, value_width) for n in bg.nodes}
    for gid, lay in inner.items():
        sizes[gid] = (lay.width + FRAME_W, lay.height + FRAME_H)
    base = dot.layout_graph(bg, sizes, value_width, cached_only=cached_only, quantum=QUANTUM,
                            splines="polyline")
    if base is None:
        return None
    out = pieces[key] = _framed(base, inner, gb) if inner else base
    return out


QUANTUM = 4              # dot is told box widths rounded up to this (dot.layout_dot_source)
FRAME_W = 2              # a frame's columns besides its picture: its two sides
FRAME_H = 3              # ... and rows: its top (with the name), a blank, its bottom


def _framed(base: Layout, inner: dict[int, Layout], gb: GroupedBody) -> Layout:
    """``base`` with the box of each group of ``inner`` turned into a frame around its picture."""
    boxes = [b for b in base.boxes if b.id not in inner]
    frames = list(base.frames)
    edges = list(base.edges)
    for gid, lay in inner.items():
        b = base.box(gid)
        group = gb.by_id[gid]
        frames.append(replace(b, kind="frame", lines=(), title=f"▾ {group.name} · "
                                                                f"{group.size} nodes"))
        dx, dy = b.x + 1, b.y + 2
        frames += [_moved(f, dx, dy) for f in lay.frames]
        boxes += [_moved(x, dx, dy) for x in lay.boxes]
        edges += [EdgePath(e.src, e.dst, tuple((x + dx, y + dy) for x, y in e.points),
                           e.direction, e.back, e.src_port, e.dst_port) for e in lay.edges]
    boxes.sort(key=lambda b: (b.y, b.x))
    return Layout(base.name, base.width, base.height, tuple(boxes), tuple(edges),
                  base.value_width, tuple(frames))


def _moved(b: Box, dx: int, dy: int) -> Box:
    return replace(b, x=b.x + dx, y=b.y + dy)
