"""Single-node ONNX models run through loopdbg and onnxruntime (the oracle, in its child
process), for the tests of the operators loopdbg once left to onnx.reference."""

from __future__ import annotations

import numpy as np
from onnx import TypeProto, helper, numpy_helper

from loopdbg.engine import Engine
from loopdbg.ir.onnx_reader import from_proto
from loopdbg.oracle import testing as ovt
from loopdbg.ops.registry import lookup


def single_node(op_type, inputs, outputs=("y",), opset=18, domain="", **attrs):
    """A model of one node and its feeds: ``inputs`` is [(name, value)], a name starting with
    ``c_`` an initializer, a value of None an input left out."""
    names, graph_in, inits, feeds = [], [], [], {}
    for name, value in inputs:
        names.append("" if value is None else name)
        if value is None:
            continue
        value = np.asarray(value)
        if name.startswith("c_"):
            inits.append(numpy_helper.from_array(value, name))
        else:
            graph_in.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape)))
            feeds[name] = value
    node = helper.make_node(op_type, names, list(outputs), domain=domain, **attrs)
    graph = helper.make_graph([node], "g", graph_in,
                              [helper.make_value_info(o, TypeProto()) for o in outputs],
                              initializer=inits)
    imports = [helper.make_opsetid("", opset)] + \
        ([helper.make_opsetid(domain, 3)] if domain else [])
    model = helper.make_model(graph, opset_imports=imports, ir_version=8)
    return model, feeds


def agree(tmp_path, op_type, inputs, outputs=("y",), opset=18, tol=1e-4, **attrs):
    """loopdbg's outputs are onnxruntime's for the node."""
    model, feeds = single_node(op_type, inputs, outputs, opset, **attrs)
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    want, _ = ovt.run_onnxruntime(path, feeds)
    got = Engine(from_proto(model)).run_to_end(feeds).outputs
    for name, w in zip(outputs, want):
        g, w = np.asarray(got[name]), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype), name
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def own_kernel(op_type: str, version: int) -> bool:
    return lookup(f"onnx.{op_type}", f"opset{version}").factory.__module__ != \
        "loopdbg.ops.onnx_reference"
