"""Tensors whose values sit in a TensorProto's typed fields (float_data, int32_data, int64_data,
double_data, uint64_data: what ``helper.make_tensor`` writes without ``raw=True``) read as
numpy_helper reads them, without importing the whole onnx package (its ``__init__`` costs ~80 ms
of opening a small model)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from loopdbg.ir.onnx_types import to_array  # noqa: E402

VALUES = {
    TensorProto.FLOAT: [0.0, -1.5, 3.25e38, float("inf"), float("nan"), 1e-45],
    TensorProto.DOUBLE: [0.0, -1.5, 1e308, float("-inf"), 5e-324, 2.0],
    TensorProto.FLOAT16: [0.0, -1.5, 65504.0, float("inf"), float("nan"), 6e-8],
    TensorProto.INT64: [0, -1, (1 << 63) - 1, -(1 << 63), 42, 7],
    TensorProto.INT32: [0, -1, (1 << 31) - 1, -(1 << 31), 42, 7],
    TensorProto.INT16: [0, -1, 32767, -32768, 42, 7],
    TensorProto.INT8: [0, -1, 127, -128, 42, 7],
    TensorProto.UINT8: [0, 1, 255, 128, 42, 7],
    TensorProto.UINT16: [0, 1, 65535, 32768, 42, 7],
    TensorProto.UINT32: [0, 1, (1 << 32) - 1, 1 << 31, 42, 7],
    TensorProto.UINT64: [0, 1, (1 << 64) - 1, 1 << 63, 42, 7],
    TensorProto.BOOL: [True, False, True, True, False, False],
}


@pytest.mark.parametrize("kind", list(VALUES), ids=lambda k: TensorProto.DataType.Name(k))
@pytest.mark.parametrize("dims", [[6], [2, 3], [3, 1, 2]])
def test_a_typed_field_tensor_is_numpy_helpers_array(kind, dims):
    t = helper.make_tensor("t", kind, dims, VALUES[kind])
    assert not t.HasField("raw_data")
    got, want = to_array(t), numpy_helper.to_array(t)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()                       # NaN payloads too


@pytest.mark.parametrize("kind", [TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL])
def test_empty_and_short_typed_tensors(kind):
    empty = helper.make_tensor("e", kind, [0, 3], [])
    assert to_array(empty).shape == (0, 3) and to_array(empty).dtype == \
        numpy_helper.to_array(empty).dtype
    short = helper.make_tensor("s", kind, [2], VALUES[kind][:2])
    del getattr(short, helper.tensor_dtype_to_field(kind))[-1]    # a value short of its dims
    with pytest.raises(ValueError, match="cannot reshape"):
        to_array(short)


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from loopdbg.engine import Engine
    from loopdbg.ir.onnx_reader import read_onnx

    model = read_onnx(sys.argv[1])
    print(sorted(m for m in ("onnx.helper", "onnx.numpy_helper", "importlib.metadata")
                 if m in sys.modules))
    out = Engine(model).run_to_end({"x": np.array([1.0, 2.0], np.float32)}).outputs
    print(out["y"].tolist())
""")


def test_reading_typed_field_tensors_leaves_onnx_init_alone(tmp_path):
    path = tmp_path / "model.onnx"
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["k"], value=helper.make_tensor(
            "k", TensorProto.INT64, [1], [2])),
         helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "w"], ["xw"]),
         helper.make_node("Add", ["xw", "kf"], ["y"])],
        "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, [2], [0.5, -3.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[2.5, -4.0]"]
