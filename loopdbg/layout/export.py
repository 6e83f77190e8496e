"""A loop drawn for people: its body, port map and back edges as DOT (``loopdbg graph``).

The DOT is rendered by Graphviz (``dot -Tsvg``, ``-Tpng``) or saved as it is; this module only
writes the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopdbg.layout.dot import node_ref, quote
from loopdbg.layout.graph import BodyGraph, body_graph
from loopdbg.text import safe

if TYPE_CHECKING:
    from loopdbg.engine.loopspec import LoopSpec

_ROLE_COLOR = {"current_iteration": "#fde68a", "condition": "#fecaca", "sliced": "#bfdbfe",
               "merged": "#bbf7d0", "invariant": "#e5e7eb", "concatenated": "#bfdbfe",
               "last value": "#bbf7d0", "execution condition": "#fecaca"}


def graph_to_dot(spec: "LoopSpec", *, consts: str = "show", values=None, changed=(),
                 title: str = "", graph: "BodyGraph | None" = None) -> str:
    """DOT source of a loop: its body, the port map (loop inputs/outputs) and the back edges.

    For ``loopdbg graph -o file.svg|png|dot``: render with ``dot -Tsvg``. Constants are boxes
    by default (``consts="fold"`` folds them into their consumers as for the terminal view).
    ``values``: a line of text per body layer id (its value at some iteration), added to its
    box; the ids in ``changed`` are drawn with a thick red border; ``title`` is added to the
    graph's label (which iteration). ``graph``: the BodyGraph to draw instead of the whole body
    (a grouped body's view, whose closed groups are 3-D boxes).
    """
    values = values or {}
    bg = graph if graph is not None else body_graph(spec, consts=consts)
    layer = spec.layer
    out = [f"digraph {quote(spec.path or layer.name)} {{",
           '  graph [rankdir=TB, fontname="Helvetica", fontsize=11, newrank=true, '
           f"label={quote(f'{layer.type} {layer.name!r} ({spec.path}){title}')}, labelloc=t];",
           '  node [fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=9];']
    ext_names = _loop_input_names(spec)
    for m in sorted(spec.sub.inputs, key=lambda m: m.external_port_id):
        if m.external_port_id < 0:
            continue
        name = ext_names.get(m.external_port_id)
        label = f"{name}\n(input {m.external_port_id})" if name else f"input {m.external_port_id}"
        out.append(f"  {quote(f'in{m.external_port_id}')} [shape=cds, style=filled, "
                   f"fillcolor=\"#f3f4f6\", label={quote(label)}];")
    out.append('  subgraph "cluster_body" { label="body"; style="rounded,dashed"; '
               'color="#6b7280";')
    for n in bg.nodes:
        label = "\\n".join(_esc(s) for s in n.lines)
        if n.id in values:
            label += "\\n= " + _esc(values[n.id])
        if n.role_text:
            label = f"{_esc(n.role_text)}\\n{label}"
        if n.kind == "parameter":
            attrs = "shape=invhouse, style=filled"
        elif n.kind == "result":
            attrs = "shape=house, style=filled"
        elif n.kind == "group":
            attrs = 'shape=box3d, style="filled", fillcolor="#eef2ff"'
        elif n.kind == "const":
            attrs = 'shape=box, style="rounded,filled", fillcolor="#f9fafb", fontsize=9'
        else:
            attrs = 'shape=box, style="rounded,filled", fillcolor="#ffffff"'
        if n.roles:
            attrs += f", fillcolor={quote(_ROLE_COLOR.get(n.roles[0], '#ffffff'))}"
        elif n.kind in ("parameter", "result"):
            attrs += ', fillcolor="#ffffff"'
        if n.id in changed:
            attrs += ', color="#dc2626", penwidth=2.5'
        out.append(f'    {node_ref(n.id)} [{attrs}, label="{label}"];')
    out.append("  }")
    for m in sorted(spec.sub.inputs, key=lambda m: m.external_port_id):
        if m.external_port_id < 0 or m.internal_layer_id not in {n.id for n in bg.nodes}:
            continue
        role = spec.roles.get(spec.body.param_ids.index(m.internal_layer_id), "")
        label = role + (f" axis={m.axis}" if m.axis is not None else "")
        if m.axis is not None and (m.stride != 1 or m.part_size != 1 or m.start or m.end != -1):
            label += f"\nstart={m.start} end={m.end} stride={m.stride} part={m.part_size}"
        out.append(f"  {quote(f'in{m.external_port_id}')} -> {node_ref(m.internal_layer_id)} "
                   f"[style=bold, color=\"#2563eb\", label={quote(label)}];")
    if spec.current_iteration is not None:
        out.append('  "iter" [shape=plaintext, label="iteration number"];')
        out.append(f'  "iter" -> {node_ref(spec.body.param_ids[spec.current_iteration])} '
                   f'[style=dashed, color="#2563eb"];')
    for form in spec.outputs:
        rid = spec.body.result_ids[form.result_pos]
        label = f"output {form.index}\n{form.name}"
        out.append(f"  {quote(f'out{form.index}')} [shape=cds, style=filled, "
                   f"fillcolor=\"#f3f4f6\", label={quote(label)}];")
        joined = "stack new axis=" if getattr(spec, "onnx", False) else "concat axis="
        how = ("last value" if form.kind != "concat" else
               f"{joined}{form.axis}" + (f" stride={form.stride}" if form.stride != 1 else ""))
        out.append(f"  {node_ref(rid)} -> {quote(f'out{form.index}')} [style=bold, "
                   f"color=\"#2563eb\", label={quote(how)}];")
    if spec.cond_result is not None:
        rid = spec.body.result_ids[spec.cond_result]
        out.append('  "cond" [shape=diamond, style=filled, fillcolor="#fecaca", '
                   'label="continue?"];')
        out.append(f'  {node_ref(rid)} -> "cond" [style=bold, color="#dc2626", '
                   f'label="body condition"];')
    ext_in = [quote(f"in{m.external_port_id}") for m in spec.sub.inputs if m.external_port_id >= 0]
    if spec.current_iteration is not None:
        ext_in.append('"iter"')
    ext_out = [quote(f"out{f.index}") for f in spec.outputs]
    if spec.cond_result is not None:
        ext_out.append('"cond"')
    params = [node_ref(n.id) for n in bg.nodes if n.kind == "parameter"]
    results = [node_ref(n.id) for n in bg.nodes if n.kind == "result"]
    for rank, ids in (("min", ext_in), ("same", params), ("same", results), ("max", ext_out)):
        if ids:
            out.append(f"  {{rank={rank}; {' '.join(dict.fromkeys(ids))};}}")
    n_in: dict[int, int] = {}
    for e in bg.edges:
        if not e.back:
            n_in[e.dst] = n_in.get(e.dst, 0) + 1
    for e in bg.edges:
        if e.back:
            out.append(f"  {node_ref(e.src)} -> {node_ref(e.dst)} [style=dashed, "
                       f"color=\"#dc2626\", constraint=false, label=\"next iteration\", "
                       f"fontcolor=\"#dc2626\"];")
        else:
            labels = []
            if _n_outputs(spec, e.src) > 1:
                labels.append(f'taillabel="{e.src_port}"')
            if n_in.get(e.dst, 0) > 1 or e.dst_port:
                labels.append(f'headlabel="{e.dst_port}"')
            # port numbers beside the line, clear of the arrowhead
            attrs = ", ".join(labels + ['labelfontcolor="#6b7280"', "labeldistance=2.2",
                                        "labelangle=35"])
            out.append(f"  {node_ref(e.src)} -> {node_ref(e.dst)} [{attrs}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _n_outputs(spec: "LoopSpec", layer_id: int) -> int:
    layer = spec.body.graph.layers.get(layer_id)
    return len(layer.outputs) if layer is not None else 1


def _loop_input_names(spec: "LoopSpec") -> dict[int, str]:
    """For each input of the loop layer, the name of what feeds it (its tensor name, else the
    producing layer's name, as the pseudo-code writes it)."""
    names = {}
    graph = getattr(spec, "parent_graph", None)
    for k, port in enumerate(spec.layer.inputs):
        src = graph.producer(spec.layer.id, k) if graph is not None else None
        if src is not None and src[0] in graph.layers:
            layer = graph.layers[src[0]]
            out = layer.outputs[src[1]] if src[1] < len(layer.outputs) else None
            names[k] = out.names[0] if out is not None and out.names else (
                layer.name if src[1] == 0 else f"{layer.name}:{src[1]}")
        elif port.names:
            names[k] = port.names[0]
    return {k: safe(v) for k, v in names.items()}
