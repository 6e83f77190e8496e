"""What a body picture decides besides drawing: how wide the boxes are, which value goes in which
box, where the cursor moves, and what a nested body opened from its box shows.
"""

from __future__ import annotations

from loopdbg.layout import Layout, layout_body

DETAIL_MODES = ("fit", "wide", "compact")
COMPACT = 12            # characters of value a box holds at least
WIDE = 40               # ... and at most
STEP = 4                # widths in between go by this step (each width is one `dot` run, cached)


def choose_layout(spec, mode: str, pane_width: int, cached_only: bool = False) -> Layout | None:
    """The layout of ``spec``'s body with boxes as wide as ``mode`` says.

    ``compact`` and ``wide`` are fixed; ``fit`` widens the boxes until the picture fills
    ``pane_width`` columns (the widest rank decides), so values are read in full where there is
    room and the picture stays whole where there is not; a big body with groups open keeps the
    width its closed picture got (an open group is laid out once). ``cached_only``: None when
    that needs a ``dot`` run not made yet (the panel then runs it in the background).
    """
    if mode in ("compact", "wide"):
        width = COMPACT if mode == "compact" else WIDE
        return layout_body(spec, value_width=width, cached_only=cached_only)
    if getattr(spec, "opened", None):
        # a big body with groups open: boxes as wide as in its closed picture (laid out
        # already), so that opening a group lays out that group once, not once per width
        closed = choose_layout(spec.closed(), mode, pane_width, cached_only)
        return None if closed is None else \
            layout_body(spec, value_width=closed.value_width, cached_only=cached_only)
    base = layout_body(spec, value_width=COMPACT, cached_only=cached_only)
    if base is None:
        return None
    room = pane_width - 1 - base.width          # one column for the scroll bar
    per_rank = _widest_rank(base)
    if room < STEP * per_rank:
        return base
    width = min(WIDE, COMPACT + (room // per_rank) // STEP * STEP)
    while width > COMPACT:
        layout = layout_body(spec, value_width=width, cached_only=cached_only)
        if layout is None:
            return None
        if layout.width <= pane_width - 1:
            return layout
        width -= STEP
    return base


def _widest_rank(layout: Layout) -> int:
    rows: dict[int, int] = {}
    for b in layout.boxes:
        rows[b.y] = rows.get(b.y, 0) + 1
    return max(rows.values(), default=1)


_KEYS: dict[int, tuple[object, dict[int, tuple[str, ...]]]] = {}


def value_keys(spec) -> dict[int, tuple[str, ...]]:
    """For every body layer id, the value names its box shows, the first one found wins.

    A Parameter shows its value by Parameter name, an operation by layer name, a Result by Result
    name or else (while stepping node by node, before the Results exist) by what feeds it.
    """
    hit = _KEYS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    graph = spec.body.graph
    keys: dict[int, tuple[str, ...]] = {lid: (layer.name,) for lid, layer in graph.layers.items()}
    for pos, lid in enumerate(spec.body.param_ids):
        keys[lid] = (spec.param_names[pos],)
    for pos, lid in enumerate(spec.body.result_ids):
        names = [spec.result_names[pos]]
        src = graph.producer(lid, 0)
        if src is not None:
            layer = graph.layers[src[0]]
            names.append(layer.name if src[1] == 0 else f"{layer.name}:{src[1]}")
            if src[0] in spec.body.param_ids:
                names.append(spec.param_names[spec.body.param_ids.index(src[0])])
        keys[lid] = tuple(dict.fromkeys(names))
    _KEYS[id(spec)] = (spec, keys)
    return keys


def nested_values(view, spec) -> dict:
    """The values of the latest iteration of nested loop ``spec`` run within the stop's
    iteration of its parent loop (empty when it has not run there, or nothing has run)."""
    e = view.event
    if e is None or not spec.path.startswith(e.path + "/"):
        return {}
    try:
        timeline = view.session.timeline
        pos = view.stop.position
        outer = tuple(e.outer) + (e.iteration,)
        ordinals = [n for n in timeline.iterations(spec.path, outer) if pos < 0 or n <= pos]
        if not ordinals:
            return {}
        return view.values(timeline.at(ordinals[-1]))
    except Exception:  # noqa: BLE001 - values are decoration: the body still draws
        return {}


def nearest_box(layout: Layout, here, direction: str, visible):
    """The box the cursor goes to from box ``here`` in ``direction`` (up/down/left/right); with
    no cursor yet, the top-left box in view (else the first box)."""
    boxes = layout.boxes
    if here is None:
        seen = [b for b in boxes if visible.contains(b.x, b.y)] or list(boxes)
        return min(seen, key=lambda b: (b.y, b.x)) if seen else None
    cx, cy = here.x + here.w / 2, here.y + here.h / 2
    best, best_score = None, None
    for b in boxes:
        if b.id == here.id:
            continue
        bx, by = b.x + b.w / 2, b.y + b.h / 2
        dx, dy = bx - cx, by - cy
        along, across = {"down": (dy, dx), "up": (-dy, dx), "right": (dx, dy),
                         "left": (-dx, dy)}[direction]
        if along <= 0.5:
            continue
        # rows are ~2 columns tall: weigh distances alike, and straying sideways double
        scale = 2.0 if direction in ("up", "down") else 1.0
        score = along * scale + abs(across) * (4.0 if direction in ("up", "down") else 2.0)
        if best_score is None or score < best_score:
            best, best_score = b, score
    return best
