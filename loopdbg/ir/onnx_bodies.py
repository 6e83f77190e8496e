"""The Loop and Scan bodies of an ONNX file, each written out as a standalone ONNX model.

``check --per-iteration`` on an .onnx runs each body in onnxruntime (or OpenVINO) one iteration
at a time. Reading the file again and writing ONNX are model-file work, done here with onnx's own
protos; what the copy's inputs and outputs are in loopdbg's terms (its body Parameters, the values
it compares) is ``loopdbg.check.extract_onnx``'s to say.

The body graph is copied as it is (nested Loop/Scan/If nodes stay inside it, run by the runtime
itself), with three changes: its inputs are the ones given, typed with dims of unknown size; its
outputs are one ``Identity`` per tensor asked for, typed as ONNX's shape inference types them from
the inputs (the body's declared types are not kept: one that a dynamic value contradicts would
make the copy invalid); and the model keeps the file's opset imports, IR version and local
functions.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def read_bodies(path: str):
    """The file's ModelProto and its Loop/Scan nodes by (op type, output names), which ONNX
    makes unique in a model; ValueError (one sentence) when it cannot be read."""
    import onnx

    try:
        proto = onnx.load(path)
    except Exception as exc:     # noqa: BLE001 - it was read once already
        raise ValueError(f"{path} cannot be read again ({type(exc).__name__})") from None
    return proto, index_bodies(proto.graph)


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


def body_graph(node):
    """The body graph of a Loop/Scan node; ValueError when it has none."""
    body = next((a.g for a in node.attribute if a.name == "body" and a.type == a.GRAPH), None)
    if body is None:
        raise ValueError(f"its {node.op_type} node has no body graph")
    return body


def body_outputs(node) -> list[str]:
    """The tensor names of the body's outputs, in order."""
    return [o.name for o in body_graph(node).output]


def standalone_body(proto, node, name: str, inputs: Sequence[tuple[str, np.ndarray]],
                    outputs: Sequence[str]) -> bytes:
    """The body of ``node`` (in ModelProto ``proto``) as a serialized model named ``name``: its
    inputs are ``inputs`` (name, a value giving the dtype and rank) in order, its outputs the
    body tensors ``outputs`` in order. ValueError (a phrase about the loop) when it cannot be."""
    from onnx import GraphProto, helper

    body = body_graph(node)
    g = GraphProto()
    g.CopyFrom(body)
    g.name = name
    del g.input[:]
    for input_name, value in inputs:
        value = np.asarray(value)
        try:
            elem = helper.np_dtype_to_tensor_dtype(value.dtype)
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"its input '{input_name}' has dtype {value.dtype}, which ONNX "
                             f"cannot type") from None
        g.input.append(helper.make_tensor_value_info(input_name, elem, [None] * value.ndim))
    del g.output[:]
    taken = _names(g)
    for k, tensor in enumerate(outputs):
        out = _fresh(f"loopdbg_check_{k}", taken)
        g.node.append(helper.make_node("Identity", [tensor], [out],
                                       name=_fresh(f"loopdbg_check_node_{k}", taken)))
        g.output.append(helper.make_empty_tensor_value_info(out))
    model = helper.make_model(g, opset_imports=list(proto.opset_import),
                              ir_version=proto.ir_version)
    model.functions.extend(proto.functions)
    _type_outputs(model)
    return model.SerializeToString()


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
