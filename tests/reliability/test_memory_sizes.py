"""Outputs sized by values, attributes or broadcasting are refused before they are allocated
(issue 26, class 5): a real ``loopdbg run`` child, its peak RSS measured, as in
test_memory_budget.py. Before ``ops.sizes`` covered them, each of these reached 0.5 to 4 GB
(onnx.reference's window functions, Resize by scales, CenterCropPad and the random generators
sized by their ``shape`` attribute, OpenVINO's Eye, and an outer sum of two vectors)."""

from __future__ import annotations

import numpy as np
import pytest

from test_memory_budget import assert_stopped, run_measured, save

from loopdbg.builder import GraphBuilder


def test_an_outer_sum_is_refused_before_it_allocates(tmp_path):
    b = GraphBuilder("outer")
    x = b.parameter("x", "f32", [12_000, 1])
    y = b.parameter("y", "f32", [1, 12_000])
    b.result(b.op("Add", [x, y], name="outer_sum"))
    xml, inputs = save(b, tmp_path, x=np.zeros((12_000, 1), np.float32),
                       y=np.zeros((1, 12_000), np.float32))
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "'outer_sum'", "would need", "--max-memory")


def _outer_in_a_loop(folder, op: str):
    """A loop of 3 iterations whose body computes ``op(x, x.T)`` of a 12,000-vector x."""
    b = GraphBuilder("outer_loop")
    x0 = b.parameter("x0", "f32", [12_000, 1])
    loop = b.loop("grow", trip=3)
    x = loop.invariant_input(x0, "x")
    xt = loop.body.op("Transpose", [x, np.array([1, 0], np.int64)], name="xt")
    y = loop.body.op(op, [x, xt], name="outer")
    b.result(loop.output_last(y, name="y"))
    return save(b, folder, x0=np.ones((12_000, 1), np.float32))


def test_an_outer_product_in_a_loop_body_is_refused(tmp_path):
    xml, inputs = _outer_in_a_loop(tmp_path, "Multiply")
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "loop 'grow', iteration 0", "'outer'", "would need")


def test_eye_of_a_huge_size_is_refused(tmp_path):
    b = GraphBuilder("eye")
    n = b.parameter("n", "i64", [])
    eye = b.op("Eye", [n, n, np.int64(0)], name="identity", output_type="f32")
    b.result(eye, name="e")
    xml, inputs = save(b, tmp_path, n=np.int64(30_000))
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "'identity'", "would need", "--max-memory")


def _onnx_model(path, node, inputs, **values):
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", 1, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    np.savez(path.with_suffix(".npz"), **values)
    return path, path.with_suffix(".npz")


def _cases():
    from onnx import TensorProto as T
    from onnx import helper

    vi = helper.make_tensor_value_info
    return {
        "HannWindow": (helper.make_node("HannWindow", ["n"], ["y"]), [vi("n", T.INT64, [])],
                       dict(n=np.int64(200_000_000))),
        "RandomNormal": (helper.make_node("RandomNormal", [], ["y"], shape=[30_000, 30_000],
                                          seed=1.0), [], {}),
        "Resize": (helper.make_node("Resize", ["x", "", "s"], ["y"]),
                   [vi("x", T.FLOAT, [1, 1, 10, 10]), vi("s", T.FLOAT, [4])],
                   dict(x=np.ones((1, 1, 10, 10), np.float32),
                        s=np.array([1, 1, 2000, 2000], np.float32))),
        "CenterCropPad": (helper.make_node("CenterCropPad", ["x", "shape"], ["y"]),
                          [vi("x", T.FLOAT, [1, 1]), vi("shape", T.INT64, [2])],
                          dict(x=np.ones((1, 1), np.float32),
                               shape=np.array([30_000, 30_000], np.int64))),
    }


@pytest.mark.parametrize("op", ["HannWindow", "RandomNormal", "Resize", "CenterCropPad"])
def test_an_onnx_output_sized_by_a_value_or_an_attribute(tmp_path, op):
    pytest.importorskip("onnx")
    node, inputs, values = _cases()[op]
    model, npz = _onnx_model(tmp_path / "m.onnx", node, inputs, **values)
    argv = ["run", model] + ([npz] if values else []) + ["--max-memory", "64M", "-q"]
    code, err, peak = run_measured(*argv)
    assert_stopped(code, err, peak, op, "would need", "--max-memory")


def test_explain_runs_under_the_same_budget(tmp_path):
    """explain runs the model on INPUTS to decide its loops' modes: --max-memory holds there
    too, and the refusal is a fact of the explanation (explain had no budget at all)."""
    xml, inputs = _outer_in_a_loop(tmp_path, "Add")
    code, err, peak = run_measured("explain", xml, inputs, "--max-memory", "64M",
                                   "--format", "json")
    assert code == 0 and "Traceback" not in err, err
    assert peak < 400 << 20, f"peak RSS {peak >> 20} MiB"


def test_a_big_interpreted_graph_checks_broadcasting_too(tmp_path, cli, monkeypatch):
    """Past COMPILE_LIMIT steps a plan is interpreted, not compiled: the same check holds (the
    limit lowered here: the real one is thousands of steps)."""
    from loopdbg.engine import loopcode, plan

    COMPILE_LIMIT = 40
    monkeypatch.setattr(plan, "COMPILE_LIMIT", COMPILE_LIMIT)
    monkeypatch.setattr(loopcode, "COMPILE_LIMIT", COMPILE_LIMIT)
    b = GraphBuilder("big")
    x = b.parameter("x", "f32", [12_000, 1])
    y = b.parameter("y", "f32", [1, 12_000])
    h = x
    for k in range(COMPILE_LIMIT + 1):
        h = b.op("Relu", [h], name=f"r{k}")
    b.result(b.op("Add", [h, y], name="outer_sum"))
    xml, inputs = save(b, tmp_path, x=np.zeros((12_000, 1), np.float32),
                       y=np.zeros((1, 12_000), np.float32))
    r = cli("run", xml, inputs, "--max-memory", "64M", "-q")
    assert r.code != 0 and "'outer_sum'" in r.err and "would need" in r.err, r.err


@pytest.mark.parametrize("where", ["initializer", "Constant attribute"])
def test_large_inline_tensors_of_an_onnx_model_count_against_the_budget(tmp_path, where):
    """A tensor written inside the .onnx (an initializer, a Constant's ``value``) is read with
    the model, and copied by protobuf, shape inference and numpy (about 5x its size): a model
    whose reading does not fit in --max-memory is refused before it is read."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    big = numpy_helper.from_array(np.ones(12 << 20, np.float32), "w")      # 48 MiB
    nodes = [helper.make_node("Shape", ["w"], ["y"])]
    inits = [big]
    if where != "initializer":
        nodes.insert(0, helper.make_node("Constant", [], ["w"], value=big))
        inits = []
    graph = helper.make_graph(nodes, "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [1])],
                              initializer=inits)
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    code, err, peak = run_measured("run", model, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "m.onnx", "inline tensors", "--max-memory")
    assert peak < (64 + 192) << 20, f"peak RSS {peak >> 20} MiB"
    code, err, _ = run_measured("run", model, "--max-memory", "1G", "-q")
    assert code == 0, err
