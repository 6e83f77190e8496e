"""The types of an ONNX body's outputs for one execution: onnx's shape inference run on the body
with the shapes and types of the values that execution feeds it.

A Loop or Scan that runs no iteration still has scan outputs: empty stacks of the values its body
would have computed. Their element shape is the body output's, which the file may leave open
(``[?, ?]``, or no shape at all) while the run fixes it: the carried values, the slices of the
scanned inputs and the values read from enclosing graphs have shapes, and shape inference
(with data propagation) carries them through the body. The reader keeps the body
(``BODY_PROTO``) only on the layers whose scan outputs the file leaves open (``OPEN_OUTPUTS``).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from loopdbg.ir.onnx_names import ONNX_TYPES


def input_names(body: bytes) -> list[str]:
    """The names of the inputs of the body graph ``body``, in order."""
    import onnx

    graph = onnx.GraphProto()
    graph.ParseFromString(body)
    return [vi.name for vi in graph.input]


def output_types(body: bytes, opsets: Mapping[str, int], feeds: Mapping[str, tuple]
                 ) -> list[tuple[tuple[int, ...], str] | None]:
    """For each output of the body graph ``body``, its (shape, element type) once the inputs
    named in ``feeds`` are tensors of the given (shape, numpy dtype) — inputs of the body or
    values it reads from enclosing graphs — with -1 for a dim inference leaves open, or None
    where it leaves the rank (or the type) open."""
    import onnx
    from onnx import helper

    graph = onnx.GraphProto()
    graph.ParseFromString(body)
    typed = {}
    for name, (shape, dtype) in feeds.items():
        try:
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        except Exception:  # noqa: BLE001 - a dtype onnx does not name: left as declared
            continue
        typed[name] = helper.make_tensor_value_info(name, elem, list(shape))
    inputs = [typed.pop(vi.name, vi) for vi in graph.input]
    del graph.input[:]
    graph.input.extend(inputs + [typed[n] for n in typed
                                 if n not in {t.name for t in graph.initializer}])
    del graph.value_info[:]
    for out in graph.output:                 # what the file says of them is what is open
        out.type.tensor_type.ClearField("shape")
    imports = [helper.make_opsetid("" if d == "ai.onnx" else d, v) for d, v in opsets.items()]
    model = helper.make_model(graph, opset_imports=imports)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - inference that fails leaves every output open
        return [None] * len(graph.output)
    found: list[tuple[tuple[int, ...], str] | None] = []
    for out in inferred.graph.output:
        tt = out.type.tensor_type if out.type.HasField("tensor_type") else None
        et = ONNX_TYPES.get(tt.elem_type) if tt is not None else None
        if tt is None or et is None or not tt.HasField("shape"):
            found.append(None)
            continue
        found.append((tuple(int(d.dim_value) if d.HasField("dim_value") else -1
                            for d in tt.shape.dim), et))
    return found
