"""A loop body as a picture of one iteration: each node's value then, and which changed.

What ``loopdbg graph --iteration K`` draws and what a notebook shows beside a session's state:
the body by its groups (closed, for a big body) with a line of value per box, the boxes whose
value differs from the iteration before marked. The DOT source is ``layout.export``'s and the
SVG Graphviz's (``layout.dot.render``).
"""

from __future__ import annotations

import numpy as np

from loopdbg.debug.report import fmt_value
from loopdbg.layout.dot import render
from loopdbg.layout.export import graph_to_dot
from loopdbg.layout.grouped import grouped_body

VALUE_WIDTH = 40        # characters of a value's line in a box


def body_values(session, event, spec, width: int = VALUE_WIDTH):
    """(a line of value per body layer id at ``event``, the ids whose value changed since the
    iteration before, whether there was one) for ``spec``'s body (``event`` is one of its
    iterations, ``session`` the debugging session that ran or replays it)."""
    now = session.values(event)
    prev_event = session.timeline.previous(event)
    before = session.values(prev_event) if prev_event is not None else None
    values, changed = {}, set()
    for layer_id, layer in spec.body.graph.layers.items():
        if layer.name not in now:
            continue
        value = now[layer.name]
        values[layer_id] = fmt_value(value, width=width)
        if before is not None and layer.name in before and layer.type != "Const" and \
                not same_value(before[layer.name], value):
            changed.add(layer_id)
    return values, changed, before is not None


def same_value(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    except (TypeError, ValueError):
        return a is b


def with_groups(spec, values: dict, changed: set, consts: str = "fold", opened=(), gb=None):
    """(the BodyGraph to draw, values, changed) of a big body by its groups (``gb``, else its
    own), ``opened`` open and the others closed, each closed group's box showing the first value
    that leaves it; the graph is None for a body small enough to be drawn whole."""
    gb = gb if gb is not None else grouped_body(spec, consts)
    if gb is None:
        return None, values, changed
    graph = gb.view(frozenset(opened))
    values, changed = dict(values), set(changed)
    for node in graph.nodes:
        if node.id < 0:
            out = gb.leaving(gb.by_id[node.id].path)
            if out and out[0] in values:
                values[node.id] = values[out[0]]
                if out[0] in changed:
                    changed.add(node.id)
    return graph, values, changed


def body_svg(session, event, spec, title: str = "") -> str:
    """The SVG of ``spec``'s body at ``event`` (groups closed), values in the boxes, the
    changed ones in red; before any iteration (``event`` None), the body alone."""
    values, changed = {}, set()
    if event is not None:
        values, changed, _ = body_values(session, event, spec)
    graph, values, changed = with_groups(spec, values, changed)
    source = graph_to_dot(spec, consts="fold", values=values, changed=changed, title=title,
                          graph=graph)
    return render(source, "svg").decode("utf-8", "replace")
