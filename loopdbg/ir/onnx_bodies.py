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

from pathlib import Path
from typing import Sequence

import numpy as np


def read_bodies(path: str):
    """The file's ModelProto and its Loop/Scan nodes by (op type, output names), which ONNX
    makes unique in a model; ValueError (one sentence) when it cannot be read."""
    import onnx

    try:
        proto = onnx.load(path, load_external_data=False)   # the weights stay in their files
    except Exception as exc:     # noqa: BLE001 - it was read once already
        raise ValueError(f"{path} cannot be read again ({type(exc).__name__})") from None
    inline_body_tensors(proto, path)
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


def inline_body_tensors(proto, path: str) -> None:
    """The tensors of the subgraphs (bodies, branches) whose data is in an external file, filled
    in from loopdbg's mapping of it (``ir.onnx_external``: inside the model's folder, regular
    files, each region once): a body copied out runs from another folder. The top graph's
    initializers, the weights, are never read: a copied body takes the outer values it reads
    as inputs."""
    from loopdbg.errors import ModelError
    from loopdbg.ir import elements
    from loopdbg.ir.onnx_external import ExternalData
    from loopdbg.ir.onnx_names import ONNX_TYPES

    external = ExternalData(Path(path).parent, f"{path}: ")
    for t in _subgraph_tensors(proto.graph):
        if t.data_location != t.EXTERNAL:
            continue
        try:
            value = external.array(t, f"tensor '{t.name}'")
        except ModelError as exc:
            raise ValueError(str(exc).rstrip(".")) from None
        et = ONNX_TYPES.get(t.data_type)
        if elements.bit_width(et) != value.dtype.itemsize * 8:      # packed: int4, uint2 ...
            raise ValueError(f"tensor '{t.name}' holds packed {et} values in an external file, "
                         f"which loopdbg does not copy into a body")
        t.raw_data = value.tobytes()            # a little-endian view of the file's bytes
        del t.external_data[:]
        t.data_location = t.DEFAULT


def _subgraph_tensors(graph, depth: int = 0):
    """The TensorProtos of the graphs nested in ``graph`` (initializers and node attributes)."""
    if depth:
        yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if depth and a.type == a.TENSOR:
                yield a.t
            elif depth and a.type == a.TENSORS:
                yield from a.tensors
            for sub in ([a.g] if a.type == a.GRAPH else list(a.graphs) if a.type == a.GRAPHS
                        else []):
                yield from _subgraph_tensors(sub, depth + 1)
