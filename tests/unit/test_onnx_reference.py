"""The operators run by onnx.reference's implementations (loopdbg/ops/onnx_reference.py): the
table agrees with the installed onnx, the kernel is built once per layer from the node the reader
kept, and what cannot run says why in one sentence.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.errors import ModelError, UnsupportedOperation  # noqa: E402
from loopdbg.ir.model import Layer  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.ops import onnx_reference  # noqa: E402
from loopdbg.ops.registry import make_kernel, specs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
F = TensorProto.FLOAT


def test_the_table_is_what_the_tool_finds_in_the_installed_onnx():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import onnx_reference_ops
    finally:
        sys.path.pop(0)
    found = onnx_reference_ops.tables()
    assert found.pop("") == onnx_reference.REFERENCE_OPS, \
        "run tools/onnx_reference_ops.py and paste its tables into loopdbg/ops/onnx_reference.py"
    assert found == onnx_reference.DOMAIN_OPS


def test_no_operator_is_both_hand_written_and_left_to_the_reference():
    by_type: dict[str, set[str]] = {}
    for s in specs():
        by_type.setdefault(s.type, set()).add(s.factory.__module__)
    assert not [t for t, mods in by_type.items() if len(mods) > 1]


def _reference_model():
    """Det: one of the operators onnx.reference runs for loopdbg."""
    node = helper.make_node("Det", ["x"], ["y"])
    return om.model([node], [om.vi("x", F, [2, 3, 3])], [om.vi("y", F, None)])


def test_a_reference_kernel_gives_onnx_references_result_and_leaves_its_inputs_alone():
    m = _reference_model()
    x = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)
    before = x.copy()
    got = Engine(from_proto(m)).run_to_end({"x": x}).outputs["y"]
    np.testing.assert_array_equal(got, ReferenceEvaluator(m).run(None, {"x": x})[0])
    np.testing.assert_array_equal(x, before)


def test_inputs_reach_the_implementation_read_only():
    frozen = onnx_reference._frozen(np.zeros(3))
    with pytest.raises(ValueError, match="read-only"):
        frozen[0] = 1


def test_a_layer_that_did_not_come_from_an_onnx_file_is_refused_by_name():
    layer = Layer(3, "c", "onnx.Det", "opset17")
    with pytest.raises(UnsupportedOperation, match="layer 3 'c' \\(onnx.Det\\) carries no ONNX node"):
        make_kernel(layer)


def test_an_operator_onnx_defines_by_a_context_dependent_function_runs():
    """GroupNormalization-21 expands by its input types, which the reader's ports give."""
    x = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    m = om.model([node], [om.vi("x", F, [2, 4, 3])], [om.vi("y", F, None)], opset=21,
                 inits=[onnx.numpy_helper.from_array(np.ones(4, np.float32), "s"),
                        onnx.numpy_helper.from_array(np.zeros(4, np.float32), "b")])
    m.ir_version = 10
    got = Engine(from_proto(m)).run_to_end({"x": x}).outputs["y"]
    g = x.reshape(2, 2, 6)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(got, want.reshape(2, 4, 3), rtol=1e-4, atol=1e-5)


def test_ai_onnx_ml_operators_run_and_maps_are_refused_with_why():
    m = om.model([helper.make_node("Scaler", ["x"], ["y"], domain="ai.onnx.ml",
                                   offset=[1.0, 2.0], scale=[2.0, 0.5])],
                 [om.vi("x", F, [2, 2])], [om.vi("y", F, None)])
    m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
    x = np.array([[1, 2], [3, 4]], np.float32)
    got = Engine(from_proto(m)).run_to_end({"x": x}).outputs["y"]
    np.testing.assert_allclose(got, (x - [1, 2]) * [2, 0.5])
    z = om.model([helper.make_node("ZipMap", ["x"], ["y"], domain="ai.onnx.ml",
                                   classlabels_int64s=[0, 1])],
                 [om.vi("x", F, [2, 2])], [om.vi("y", F, None)])
    z.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
    with pytest.raises(UnsupportedOperation, match="its values are maps.*zipmap"):
        Engine(from_proto(z))


def test_a_graph_attribute_reading_an_outer_value_is_refused_when_read():
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    body = helper.make_graph([helper.make_node("Add", ["e", "outer"], ["o"])], "b",
                             [om.vi("e", F, None)], [om.vi("o", F, None)])
    node = helper.make_node("SequenceMap", ["s"], ["r"], body=body)
    m = om.model([helper.make_node("Identity", ["x"], ["outer"]), node],
                 [helper.make_value_info("s", seq), om.vi("x", F, [1])],
                 [helper.make_value_info("r", seq)])
    with pytest.raises(ModelError, match="graph attribute 'body' that reads 'outer' from the "
                                         "enclosing graph"):
        from_proto(m)


def test_sequence_map_runs_its_body_with_onnx_reference():
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    body = helper.make_graph([helper.make_node("Mul", ["e", "e"], ["o"])], "b",
                             [om.vi("e", F, None)], [om.vi("o", F, None)])
    m = om.model([helper.make_node("SequenceMap", ["s"], ["r"], body=body)],
                 [helper.make_value_info("s", seq)], [helper.make_value_info("r", seq)])
    s = [np.array([1.0, 2.0], np.float32), np.array([3.0], np.float32)]
    r = Engine(from_proto(m)).run_to_end({"s": s}).outputs["r"]
    assert [v.tolist() for v in r] == [[1.0, 4.0], [9.0]]


def test_a_node_onnx_reference_cannot_build_is_one_sentence_naming_the_layer():
    m = om.model([helper.make_node("DepthToSpace", ["x"], ["y"])], [om.vi("x", F, [1, 4, 2, 2])],
                 [om.vi("y", F, None)])
    with pytest.raises(UnsupportedOperation, match="m: layer 1 'y' \\(onnx.DepthToSpace\\) has "
                                                   "attributes loopdbg cannot use: onnx.reference "
                                                   "cannot build its DepthToSpace from the node: "
                                                   "Attribute 'blocksize' is expected"):
        Engine(from_proto(m))
