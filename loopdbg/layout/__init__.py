"""Loop bodies laid out for a terminal: Graphviz positions turned into boxes and paths of cells.

    from loopdbg.layout import layout_body, render, render_text
    layout = layout_body(engine.loops["loop"])          # runs `dot` once per body (cached)
    print(render_text(layout, {node_id: "= 3.0"}, changed={node_id}))

No UI toolkit is imported here: ``render`` returns characters and style tags that a widget paints.
"""

from loopdbg.layout.boxes import Box, EdgePath, Layout
from loopdbg.layout.canvas import Canvas, render, render_text
from loopdbg.layout.dot import LayoutUnavailable, clear_cache, dot_available, layout_body
from loopdbg.layout.export import graph_to_dot
from loopdbg.layout.graph import BodyEdge, BodyGraph, Node, body_graph, graph_from_parts

__all__ = ["BodyEdge", "BodyGraph", "Box", "Canvas", "EdgePath", "Layout", "LayoutUnavailable",
           "Node", "body_graph", "clear_cache", "dot_available", "graph_from_parts",
           "graph_to_dot", "layout_body", "render", "render_text"]
