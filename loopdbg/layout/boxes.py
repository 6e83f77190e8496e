"""What a laid-out body is made of: boxes and edge paths on a grid of terminal cells.

Cells are ~2:1 (tall), so x and y use separate scales when Graphviz's points are turned into
cells: one column is ``XS`` points, one row ``YS`` points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopdbg.layout.graph import Node

XS = 8.0                  # points per terminal column
YS = 16.0                 # points per terminal row
BOX_GAP = 3               # empty columns kept between two boxes of a rank
VALUE_WIDTH = 12          # room reserved in every box for the caller's value line


@dataclass(frozen=True)
class Box:
    """A node's box in cells: top-left ``(x, y)``, size ``w × h`` including the border.

    ``id`` is the body layer id (the key of ``values`` when rendering), ``name`` its layer name,
    ``title`` the text in its top border and ``lines`` the text inside (``box_text``).
    """

    id: int
    x: int
    y: int
    w: int
    h: int
    lines: tuple[str, ...]
    kind: str = "op"
    roles: tuple[str, ...] = ()
    role_text: str = ""
    name: str = ""
    title: str = ""
    type: str = ""

    @property
    def right(self) -> int:
        return self.x + self.w - 1

    @property
    def bottom(self) -> int:
        return self.y + self.h - 1

    @property
    def inner_width(self) -> int:
        """Characters of text a line inside the box can hold (one blank each side)."""
        return self.w - 4

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x <= self.right and self.y <= y <= self.bottom


@dataclass(frozen=True)
class EdgePath:
    """An edge as an orthogonal polyline of cells; ``points[-1]`` is the arrowhead's cell.

    Consecutive points share a row or a column. ``direction`` is where the arrowhead points
    (``down``, ``up``, ``left``, ``right``).
    """

    src: int
    dst: int
    points: tuple[tuple[int, int], ...]
    direction: str = "down"
    back: bool = False
    src_port: int = 0
    dst_port: int = 0

    @property
    def arrow(self) -> tuple[int, int]:
        return self.points[-1]


@dataclass(eq=False)
class Layout:
    """A laid-out body: a canvas of ``width × height`` cells, boxes and edge paths.

    ``frames`` are the borders of open groups drawn around what they hold (kind ``frame``):
    edges end at them as at a box, but the cursor and the values go to ``boxes`` only.
    """

    name: str
    width: int
    height: int
    boxes: tuple[Box, ...]
    edges: tuple[EdgePath, ...]
    value_width: int = VALUE_WIDTH
    frames: tuple[Box, ...] = ()
    _by_id: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._by_id = {b.id: b for b in self.frames + self.boxes}

    def box(self, node_id: int) -> Box:
        """The box (or the open group's frame) of ``node_id``."""
        return self._by_id[node_id]

    def box_at(self, x: int, y: int) -> Box | None:
        """The box covering cell ``(x, y)`` (for mouse clicks), or None."""
        for b in self.boxes:
            if b.contains(x, y):
                return b
        return None


def box_text(node: Node) -> tuple[str, tuple[str, ...]]:
    """What a node's box shows: the title in its top border and the lines inside.

    An operation's type goes in the border (``┌─ Add ──┐``) and its name inside, so that a box
    is one row shorter than the label's lines; a Parameter's or Result's border says what it is
    and its role in the loop (``param · merged``, ``result · last value``).
    """
    rest = tuple(node.lines[1:])
    if node.kind == "parameter":
        return (f"param · {node.role_text}" if node.role_text else "Parameter"), rest
    if node.kind == "result":
        return (f"result · {node.role_text}" if node.role_text else "Result"), rest
    return (node.lines[0] if node.lines else node.type), rest


def box_size(node: Node, value_width: int = VALUE_WIDTH) -> tuple[int, int]:
    """``(w, h)`` in cells: the inner lines, the value line, a blank each side, the border
    (whose title needs room too)."""
    title, lines = box_text(node)
    inner = max([len(s) for s in lines] + [value_width, len(title) + 2])
    return inner + 4, len(lines) + 1 + 2
