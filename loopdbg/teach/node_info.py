"""What the Inspector says about a body node besides its value, as Netron shows a node: its
operation and version, its attributes, and each input (where it comes from) and output (its
declared port), the values' shapes at the current iteration."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from loopdbg.ir.onnx_names import BODY_PROTO, NODE_PROTO, OPEN_OUTPUTS, OPSETS
from loopdbg.teach.pseudocode import source_name

HIDDEN = (NODE_PROTO, OPSETS, BODY_PROTO, OPEN_OUTPUTS)
MAX_ATTR = 120               # characters of an attribute value shown


def _kind(value) -> str:
    if isinstance(value, list):
        return f"sequence of {len(value)}"
    dtype = getattr(value, "dtype", None)
    shape = "(" + ",".join(map(str, np.shape(value))) + ")" if dtype is not None else ""
    return f"{dtype} {shape}" if dtype is not None else type(value).__name__


def node_lines(spec, name: str, values: Mapping[str, Any]) -> list[str] | None:
    """Lines about body layer ``name`` of ``spec``'s loop (None when no layer has that name)."""
    g = spec.body.graph
    layer = next((lay for lay in g.layers.values() if lay.name == name), None)
    if layer is None:
        return None
    op = layer.ir_type or layer.type
    lines = [f"{op} ({layer.type} {layer.version}), layer {layer.id} '{layer.name}'"]
    attrs = [(k, v) for k, v in layer.data.items() if k not in HIDDEN]
    if attrs:
        lines.append("attributes:")
        for k, v in attrs:
            text = str(v)
            if len(text) > MAX_ATTR:
                text = text[:MAX_ATTR] + "…"
            lines.append(f"  {k} = {text}")
    for k in range(len(layer.inputs)):
        src = source_name(g, layer.id, k, inline_consts=True)
        shown = "(not connected)" if src is None else src
        value = values.get(src) if src is not None else None
        extra = f"  {_kind(value)}" if value is not None else ""
        lines.append(f"input {k}: {shown}{extra}")
    for j, port in enumerate(layer.outputs):
        key = layer.name if j == 0 else f"{layer.name}:{j}"
        value = values.get(key)
        declared = f"declared {port.precision or '?'} ({','.join(map(str, port.dims))})"
        now = f"; now {_kind(value)}" if value is not None else ""
        lines.append(f"output {j} ({key}): {declared}{now}")
    return lines
