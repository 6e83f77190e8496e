"""ONNX files whose tensors, node arity or Scan attributes lie: one sentence each, naming the
node (issue 15: only initializers used to be checked; the rest gave tracebacks or, for a
num_scan_inputs of 2^31, exhausted memory)."""

from __future__ import annotations

import pytest

from relhelpers import assert_refused

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper  # noqa: E402

vi = helper.make_tensor_value_info


def raw_tensor(name, dtype, dims, raw: bytes):
    t = onnx.TensorProto()
    t.name, t.data_type, t.raw_data = name, dtype, raw
    t.dims.extend(dims)
    return t


def save(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _body():
    return helper.make_graph([helper.make_node("Identity", ["s"], ["o"])], "b",
                             [vi("s", T.FLOAT, [1])], [vi("o", T.FLOAT, [1])])


CASES = {
    "constant with short raw data": (
        lambda: ([helper.make_node("Constant", [], ["c"],
                                   value=raw_tensor("c", T.FLOAT, [100], b"\0" * 8))],
                 [], [vi("c", T.FLOAT, [100])]),
        ("Constant node 'c'", "cannot be read")),
    "tensor attribute with a broken buffer": (
        lambda: ([helper.make_node("ConstantOfShape", ["s"], ["y"],
                                   value=raw_tensor("v", T.FLOAT, [1], b"\0"))],
                 [vi("s", T.INT64, [1])], [vi("y", T.FLOAT, None)]),
        ("attribute 'value'", "ConstantOfShape", "cannot be read")),
    "constant with no output": (
        lambda: ([helper.make_node("Constant", [], [],
                                   value=helper.make_tensor("c", T.FLOAT, [1], [1.0]))],
                 [vi("x", T.FLOAT, [1])], [vi("x", T.FLOAT, [1])]),
        ("(Constant)", "0 outputs", "takes 1")),
    "if with no inputs": (
        lambda: ([helper.make_node("If", [], ["y"], then_branch=_then(), else_branch=_then())],
                 [vi("x", T.FLOAT, [1])], [vi("y", T.FLOAT, [1])]),
        ("(If)", "0 inputs", "takes 1")),
    "add with one input": (
        lambda: ([helper.make_node("Add", ["x"], ["y"])], [vi("x", T.FLOAT, [3])],
                 [vi("y", T.FLOAT, [3])]),
        ("(Add)", "1 input;", "takes 2")),
    "scan with num_scan_inputs 2^31-1": (
        lambda: ([helper.make_node("Scan", ["x"], ["y"], body=_body(),
                                   num_scan_inputs=2**31 - 1)],
                 [vi("x", T.FLOAT, [3, 1])], [vi("y", T.FLOAT, [3, 1])]),
        ("Scan node", "num_scan_inputs=2147483647", "1 input to scan")),
    "scan with more scan inputs than inputs": (
        lambda: ([helper.make_node("Scan", ["x"], ["y"], body=_body(), num_scan_inputs=5)],
                 [vi("x", T.FLOAT, [3, 1])], [vi("y", T.FLOAT, [3, 1])]),
        ("num_scan_inputs=5",)),
}


def _then():
    return helper.make_graph([helper.make_node("Identity", ["x"], ["y1"])], "t", [],
                             [vi("y1", T.FLOAT, [1])])


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_lying_onnx_file_is_one_sentence(case, tmp_path, cli):
    build, fragments = CASES[case]
    nodes, inputs, outputs = build()
    path = save(tmp_path / "m.onnx", nodes, inputs, outputs)
    for command in ("run", "explain"):
        assert_refused(cli(command, path), str(path), *fragments)


def test_an_initializer_of_terabytes_without_data_is_one_sentence(tmp_path, cli):
    t = onnx.TensorProto()
    t.name, t.data_type = "w", T.FLOAT
    t.dims.extend([2**40, 2**40])
    path = save(tmp_path / "m.onnx", [helper.make_node("Identity", ["w"], ["y"])], [],
                [vi("y", T.FLOAT, None)], [t])
    assert_refused(cli("run", path), "initializer 'w'", "cannot be read")
