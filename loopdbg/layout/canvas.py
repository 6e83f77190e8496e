"""A Layout drawn into a grid of characters with a parallel grid of style tags.

The static part (edges, borders, labels, roles) is drawn once per Layout and kept; a render
copies it and writes the changing part: each box's value line and the highlight of changed and
current boxes. Style tags, one per cell (None for blank cells):

    "box"  "box:changed"  "box:current"     border and label text of a box
    "box:selected"                           ... of the box the keyboard's cursor is on
    "value"  "value:changed"                 the value line inside a box
    "role"                                   the title of a Parameter's / Result's box (its role)
    "title"                                  the title of an operation's box (its type)
    "edge"  "back"                           data edges, back edges (and their arrowheads)
    "frame"                                  the border of an open group around what it holds

``render_text`` gives the same picture as plain text (optionally pure ASCII) for tests, snapshots
and terminals without box-drawing glyphs.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Collection, Iterator, Mapping

from loopdbg.layout.boxes import Box, Layout

_U, _D, _L, _R = 1, 2, 4, 8
_SOLID = {_U | _D: "│", _L | _R: "─", _D | _R: "╭", _D | _L: "╮", _U | _R: "╰", _U | _L: "╯",
          _U | _D | _R: "├", _U | _D | _L: "┤", _L | _R | _D: "┬", _L | _R | _U: "┴",
          _U | _D | _L | _R: "┼", _U: "│", _D: "│", _L: "─", _R: "─"}
_DASHED = {**_SOLID, _U | _D: "┆", _U: "┆", _D: "┆", _L | _R: "┄", _L: "┄", _R: "┄"}
_ARROW = {"down": "▼", "up": "▲", "left": "◀", "right": "▶"}
_ASCII = str.maketrans({"┌": "+", "┐": "+", "└": "+", "┘": "+", "─": "-", "│": "|", "┆": ":",
                        "┏": "#", "┓": "#", "┯": "+", "▸": ">", "▾": "v", "→": ">", "┗": "#", "┛": "#", "━": "=", "┃": "#",
                        "┄": ".", "╭": "+", "╮": "+", "╰": "+", "╯": "+", "├": "+", "┤": "+",
                        "┬": "+", "┴": "+", "┼": "+", "▼": "v", "▲": "^", "◀": "<", "▶": ">",
                        "…": "~", "×": "x", "·": "/"})


@dataclass
class Canvas:
    """A rendered body: ``lines[y]`` is row ``y``; ``styles[y][x]`` the tag of that cell.

    Rows of ``styles`` may be shared with the layout's cached picture: read them, never write.
    """

    lines: list[str]
    styles: list[list[str | None]]
    width: int
    height: int

    def runs(self, y: int) -> Iterator[tuple[str, str | None]]:
        """Row ``y`` as ``(text, tag)`` runs of equal style, for a line-by-line widget."""
        line, tags = self.lines[y], self.styles[y]
        start = 0
        for x in range(1, len(line) + 1):
            if x == len(line) or tags[x] != tags[start]:
                yield line[start:x], tags[start]
                start = x

    def text(self) -> str:
        return "\n".join(s.rstrip() for s in self.lines)


# layout -> (chars, tags, lines): the part of its picture that never changes, drawn once
_STATIC: "weakref.WeakKeyDictionary[Layout, tuple]" = weakref.WeakKeyDictionary()


def _static(layout: Layout) -> tuple[list[list[str]], list[list[str | None]], list[str]]:
    """The part of the picture that never changes: its cells, their tags and its lines."""
    hit = _STATIC.get(layout)
    if hit is not None:
        return hit
    w, h = layout.width, layout.height
    chars = [[" "] * w for _ in range(h)]
    tags: list[list[str | None]] = [[None] * w for _ in range(h)]
    bits: dict[tuple[int, int], int] = {}
    solid: set[tuple[int, int]] = set()

    for f in layout.frames:                               # under everything they hold
        _draw_frame(chars, tags, f)

    def mark(x: int, y: int, b: int, back: bool) -> None:
        bits[(x, y)] = bits.get((x, y), 0) | b
        if not back:
            solid.add((x, y))

    for e in layout.edges:
        pts = e.points
        mark(pts[0][0], pts[0][1], _U, e.back)           # joins the source box's border
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if x0 == x1:
                step, b0, b1 = (1, _D, _U) if y1 > y0 else (-1, _U, _D)
                for y in range(y0, y1, step):
                    mark(x0, y, b0, e.back)
                    mark(x0, y + step, b1, e.back)
            else:
                step, b0, b1 = (1, _R, _L) if x1 > x0 else (-1, _L, _R)
                for x in range(x0, x1, step):
                    mark(x, y0, b0, e.back)
                    mark(x + step, y0, b1, e.back)
    for (x, y), b in bits.items():
        if 0 <= x < w and 0 <= y < h:
            is_solid = (x, y) in solid
            chars[y][x] = (_SOLID if is_solid else _DASHED)[b]
            tags[y][x] = "edge" if is_solid else "back"
    for e in layout.edges:
        x, y = e.arrow
        if 0 <= x < w and 0 <= y < h:
            chars[y][x] = _ARROW[e.direction]
            tags[y][x] = "back" if e.back else "edge"
    for b in layout.boxes:
        _draw_box(chars, tags, b)
    for e in layout.edges:                                # where an edge leaves a box: ┬
        x, y = e.points[0]
        src = layout.box(e.src)
        if src.contains(x, y - 1):
            chars[y - 1][x] = "┯" if src.kind == "frame" else "┬"
    hit = _STATIC[layout] = (chars, tags, ["".join(r) for r in chars])
    return hit


_THIN = "┌┐└┘─│"
_THICK = "┏┓┗┛━┃"


def _border(chars, tags, b: Box, glyphs: str, tag: str) -> None:
    """The border of box ``b`` in ``glyphs`` (corners, then horizontal and vertical lines),
    its cells tagged ``tag``."""
    x0, y0, x1, y1 = b.x, b.y, b.right, b.bottom
    chars[y0][x0], chars[y0][x1], chars[y1][x0], chars[y1][x1] = glyphs[:4]
    for x in range(x0, x1 + 1):
        if x0 < x < x1:
            chars[y0][x] = chars[y1][x] = glyphs[4]
        tags[y0][x] = tags[y1][x] = tag
    for y in range(y0 + 1, y1):
        chars[y][x0] = chars[y][x1] = glyphs[5]
        tags[y][x0] = tags[y][x1] = tag


def _title(chars, tags, b: Box, tag: str) -> None:
    text = f" {b.title} "[: b.w - 3]
    _put(chars, b.x + 2, b.y, text, len(text))
    for x in range(b.x + 2, b.x + 2 + len(text)):
        tags[b.y][x] = tag


def _draw_frame(chars, tags, b: Box) -> None:
    """An open group's border (its name in the top one), the inside left as it is."""
    _border(chars, tags, b, _THICK, "frame")
    _title(chars, tags, b, "title")


def _draw_box(chars, tags, b: Box) -> None:
    _border(chars, tags, b, _THIN, "box")
    for y in range(b.y + 1, b.bottom):
        for x in range(b.x + 1, b.right):
            chars[y][x] = " "
            tags[y][x] = "box"
    for k, line in enumerate(b.lines):
        _put(chars, b.x + 2, b.y + 1 + k, line, b.inner_width)
    if b.title:
        _title(chars, tags, b, "role" if b.kind in ("parameter", "result") else "title")


def _put(chars, x: int, y: int, text: str, width: int) -> None:
    if len(text) > width:
        text = text[: max(width - 1, 0)] + "…" if width > 0 else ""
    row = chars[y]
    for k, ch in enumerate(text):
        row[x + k] = ch


def render(layout: Layout, values: Mapping[int, str] | None = None, *,
           changed: Collection[int] = (), current: int | None = None,
           selected: int | None = None) -> Canvas:
    """Draw ``layout`` with each box's value line (``values[node_id]``, truncated to fit).

    Boxes in ``changed`` get the ``box:changed`` tag, the ``current`` box ``box:current`` and
    the ``selected`` one (the keyboard's cursor) ``box:selected``.
    """
    chars, tags, base = _static(layout)
    values = values or {}
    changed = set(changed)
    # Rows nobody writes to are shared with the cached picture (a large body has hundreds of
    # rows and only its value lines change): copy a row only when it is written.
    rows: dict[int, list[str]] = {}
    styles = list(tags)
    copied: set[int] = set()

    def row_of(y: int) -> tuple[list[str], list]:
        if y not in copied:
            copied.add(y)
            styles[y] = list(tags[y])
            rows[y] = list(chars[y])
        return rows[y], styles[y]

    for b in layout.boxes:
        hl = b.id == current or b.id in changed or b.id == selected
        if hl:
            tag = ("box:current" if b.id == current else "box:selected" if b.id == selected
                   else "box:changed")
            for y in range(b.y, b.bottom + 1):
                _, srow = row_of(y)
                for x in range(b.x, b.right + 1):
                    if srow[x] == "box":
                        srow[x] = tag
        text = values.get(b.id)
        if text:
            y = b.y + 1 + len(b.lines)
            width = b.inner_width
            text = text.replace("\n", " ")
            if len(text) > width:
                text = text[: width - 1] + "…"
            row, srow = row_of(y)
            vtag = "value:changed" if b.id in changed else "value"
            x0 = b.x + 2
            row[x0:x0 + len(text)] = text
            srow[x0:x0 + len(text)] = [vtag] * len(text)
    lines = list(base)
    for y, row in rows.items():
        lines[y] = "".join(row)
    return Canvas(lines, styles, layout.width, layout.height)


def render_text(layout: Layout, values: Mapping[int, str] | None = None, *,
                changed: Collection[int] = (), current: int | None = None,
                ascii: bool = False) -> str:
    """The picture as plain text (trailing blanks stripped); ``ascii=True`` uses only ASCII."""
    text = render(layout, values, changed=changed, current=current).text()
    return text.translate(_ASCII) if ascii else text
