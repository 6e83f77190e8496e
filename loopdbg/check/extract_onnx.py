"""A Loop/Scan body of an ONNX model as a standalone ONNX model, to run one iteration at a time.

The body graph is copied from the .onnx file as it is (nested Loop/Scan/If nodes stay inside it,
run by the runtime itself), with three changes:

* its inputs are loopdbg's body Parameters in order: the body's own inputs, then every value it
  reads from an enclosing graph (``outer-scope`` names, which loopdbg's ONNX reader makes
  Parameters of the body), each typed by the value loopdbg fed it with dims of unknown size, so
  one model serves every iteration of the same ranks (``extract.signature``);
* its outputs are one ``Identity`` per ``Target`` (``extract.body_targets``): the body's outputs
  in order, then with ``all_nodes`` every output of every node loopdbg runs; typed as ONNX's
  shape inference types them from the inputs (the body's declared types are not kept: one that
  a dynamic value contradicts would make the copy invalid);
* the model keeps the file's opset imports, IR version and local functions.

The body is found by its node's op type and output tensor names, which ONNX makes unique in a
model (a Scan-8's batch loop is loopdbg's own wrapper: its body is the Scan node's).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from loopdbg.check.extract import NODE, Target, body_targets
from loopdbg.engine.loopspec import LoopSpec

SCAN8 = "onnx_scan8_batch"


class NoBody(ValueError):
    """The loop has no ONNX body of its own to extract (one sentence why)."""


def is_batch_loop(spec: LoopSpec) -> bool:
    """Whether ``spec`` is the batch loop loopdbg's ONNX reader wraps around a Scan-8."""
    return str(spec.layer.data.get(SCAN8, "")).lower() == "true"


def body_key(spec: LoopSpec, parent: LoopSpec | None) -> tuple[str, tuple[str, ...]]:
    """(op type, output tensor names) of the node whose body ``spec`` runs."""
    layer = spec.layer
    if is_batch_loop(spec):
        raise NoBody("it is the batch loop loopdbg wraps around a Scan-8, which has no ONNX body "
                     "of its own (the Scan inside it is checked)")
    op = str(layer.data.get("onnx_op") or layer.ir_type or layer.type)
    source = layer
    if parent is not None and is_batch_loop(parent):
        source = parent.layer                 # the Scan-8 node's outputs are the batch loop's
    names = tuple(p.names[0] if p.names else "" for p in source.outputs)
    return op, names


def index_bodies(graph, found: dict | None = None) -> dict:
    """Every Loop/Scan node of ``graph`` and its subgraphs by (op type, output names)."""
    found = {} if found is None else found
    for node in graph.node:
        if node.domain in ("", "ai.onnx") and node.op_type in ("Loop", "Scan"):
            found[(node.op_type, tuple(node.output))] = node
        for a in node.attribute:
            for g in ([a.g] if a.type == a.GRAPH else list(a.graphs) if a.type == a.GRAPHS
                      else []):
                index_bodies(g, found)
    return found


def standalone_onnx_body(proto, node, spec: LoopSpec, values: Sequence, *,
                         all_nodes: bool = False) -> tuple[bytes, list[Target]]:
    """The body of ONNX ``node`` (in ModelProto ``proto``) as a serialized model for ``spec``.

    ``values`` are loopdbg's body inputs of one iteration (they give the inputs' types).
    """
    from onnx import GraphProto, helper

    body = next((a.g for a in node.attribute if a.name == "body" and a.type == a.GRAPH), None)
    if body is None:
        raise NoBody(f"its {node.op_type} node has no body graph")
    plan = spec.body
    g = GraphProto()
    g.CopyFrom(body)
    g.name = f"{spec.path} body"
    del g.input[:]
    for name, value in zip(plan.param_names, values):
        value = np.asarray(value)
        try:
            elem = helper.np_dtype_to_tensor_dtype(value.dtype)
        except (KeyError, TypeError, ValueError):
            raise NoBody(f"its input '{name}' has dtype {value.dtype}, which ONNX cannot "
                         f"type") from None
        g.input.append(helper.make_tensor_value_info(name, elem, [None] * value.ndim))
    targets = [t for t in body_targets(plan, all_nodes) if _tensor(t, body) is not None]
    del g.output[:]
    taken = _names(g)
    for k, t in enumerate(targets):
        out = _fresh(f"loopdbg_check_{k}", taken)
        g.node.append(helper.make_node("Identity", [_tensor(t, body)], [out],
                                       name=_fresh(f"loopdbg_check_node_{k}", taken)))
        g.output.append(helper.make_empty_tensor_value_info(out))
    model = helper.make_model(g, opset_imports=list(proto.opset_import),
                              ir_version=proto.ir_version)
    model.functions.extend(proto.functions)
    _type_outputs(model)
    return model.SerializeToString(), targets


def _type_outputs(model) -> None:
    """Give each output the type ONNX's shape inference finds for it (the copy is then a valid
    model; its dims follow from the inputs', of unknown size); an output it cannot type stays
    untyped, which the runtimes accept."""
    from onnx import shape_inference

    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception:                    # noqa: BLE001 - inference is optional here
        return
    g = inferred.graph
    types = {v.name: v.type for v in list(g.value_info) + list(g.output)
             if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type}
    for out in model.graph.output:
        t = types.get(out.name)
        if t is not None:
            out.type.CopyFrom(t)


def _tensor(t: Target, body) -> str | None:
    """The ONNX tensor name of a target: a body output's, or a node output's."""
    if t.kind != NODE:
        return body.output[t.index].name if t.index < len(body.output) else None
    ports = t.layer.outputs
    names = ports[t.port].names if t.port < len(ports) else ()
    return names[0] if names and names[0] else None


def _names(g, names: set[str] | None = None) -> set[str]:
    """Every name used in ``g`` and its subgraphs (values and nodes)."""
    names = set() if names is None else names
    names.update(v.name for v in list(g.input) + list(g.output) + list(g.value_info))
    names.update(t.name for t in g.initializer)
    for n in g.node:
        names.update(n.input)
        names.update(n.output)
        names.add(n.name)
        for a in n.attribute:
            for sub in ([a.g] if a.type == a.GRAPH else list(a.graphs) if a.type == a.GRAPHS
                        else []):
                _names(sub, names)
    return names


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name
