"""The objects the ONNX reader makes for a model: one Port per distinct unnamed port (Ports are
immutable, and a decoder's loop body declares a few dozen for thousands of inputs), and Layers
that are the dataclass they always were though made with one update of their dict."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.ir import onnx_types  # noqa: E402
from loopdbg.ir.model import Layer, Port  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402


def _chain(n: int):
    """x -> Relu -> Relu ... (n nodes), every value declared f32 [2, 3]."""
    nodes = [helper.make_node("Relu", [f"v{k}" if k else "x"], [f"v{k + 1}"]) for k in range(n)]
    vis = [om.vi(f"v{k}", TensorProto.FLOAT, [2, 3]) for k in range(1, n)]
    m = om.model(nodes, [om.vi("x", TensorProto.FLOAT, [2, 3])],
                 [om.vi(f"v{n}", TensorProto.FLOAT, [2, 3])])
    m.graph.value_info.extend(vis)
    return m


def test_equal_unnamed_input_ports_are_one_object_and_named_outputs_keep_their_names():
    g = from_proto(_chain(6)).graph
    relus = [layer for layer in g.layers.values() if layer.type == "onnx.Relu"]
    assert len(relus) == 6
    first = relus[0].inputs[0]
    assert first == Port(0, 0, "FP32", (2, 3))
    assert all(layer.inputs[0] is first for layer in relus)       # fails when each is made anew
    assert [layer.outputs[0].names for layer in relus] == [(f"v{k}",) for k in range(1, 7)]
    assert len({id(layer.outputs[0]) for layer in relus}) == 6


def test_an_unconnected_optional_input_is_an_untyped_port_as_before():
    node = helper.make_node("Clip", ["x", "", "hi"], ["y"])
    m = om.model([node], [om.vi("x", TensorProto.FLOAT, [3])], [om.vi("y", TensorProto.FLOAT, [3])],
                 inits=[helper.make_tensor("hi", TensorProto.FLOAT, [], [1.0])])
    clip = next(la for la in from_proto(m).graph.layers.values() if la.type == "onnx.Clip")
    assert clip.inputs[1] == Port(1, 1)
    assert clip.inputs[2] == Port(2, 2, "FP32", ())


def test_the_shared_ports_are_bounded(monkeypatch):
    monkeypatch.setattr(onnx_types, "_PORTS", {})
    monkeypatch.setattr(onnx_types, "PORTS_KEPT", 4)
    made = [onnx_types.shared_port("f32", (k,), 0, 0) for k in range(10)]
    assert len(onnx_types._PORTS) <= 4
    assert [p.dims for p in made] == [(k,) for k in range(10)]
    assert onnx_types.shared_port("f32", (9,), 0, 0) is made[9]


def test_a_layer_is_still_a_frozen_dataclass_with_its_defaults():
    a = Layer(3, "h", "Add", "opset1")
    b = Layer(4, "g", "Add", "opset1")
    assert a.data == {} and a.data is not b.data                 # a fresh dict each
    assert (a.inputs, a.outputs, a.subgraphs, a.value, a.ir_type, a.line) == ((),) * 3 + (None,) * 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.name = "x"                                            # type: ignore[misc]
    c = dataclasses.replace(a, name="k", data={"axis": "1"})
    assert (c.id, c.name, c.type, c.data) == (3, "k", "Add", {"axis": "1"})
    assert a != Layer(3, "h", "Add", "opset1")                   # eq=False: identity
    kw = Layer(id=1, name="n", type="T", version="opset2", data={"k": "v"}, line=7)
    assert [f.name for f in dataclasses.fields(kw)][:4] == ["id", "name", "type", "version"]
    assert (kw.data, kw.line, repr(kw).startswith("Layer(id=1, name='n'")) == ({"k": "v"}, 7, True)
