"""Reading an .onnx without onnx's package __init__ (loopdbg/ir/onnx_lib.py): in a fresh
process, reading imports only onnx's protobuf module and C++ extension, and the onnx package is
whole again at its first other use (its helpers, onnx.reference, the same proto classes); the
attribute values are onnx.helper's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import AttributeProto, TensorProto, helper, numpy_helper  # noqa: E402

from loopdbg.ir.onnx_types import attribute_value  # noqa: E402


def _model(path):
    """A Loop, then an Einsum (an operator loopdbg leaves to onnx.reference), then a LeakyRelu,
    so attributes of several types."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("x", f, [2, 2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y", f, [2, 2])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip", "go", "x0"], ["x_out"], body=body),
         helper.make_node("Einsum", ["x_out"], ["t"], equation="ij->ji"),
         helper.make_node("LeakyRelu", ["t"], ["out"], alpha=0.5)],
        "m", [helper.make_tensor_value_info("x0", f, [2, 2])],
        [helper.make_tensor_value_info("out", f, [2, 2])],
        initializer=[numpy_helper.from_array(np.array([[0.0, 1.0], [-1.0, 0.5]], np.float32),
                                             "w"),
                     numpy_helper.from_array(np.array(3, np.int64), "trip"),
                     numpy_helper.from_array(np.array(True), "go")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from loopdbg.engine import Engine
    from loopdbg.ir.onnx_reader import read_onnx

    model = read_onnx(sys.argv[1])
    print("whole onnx after reading:", sorted(m for m in ("onnx.helper", "onnx.compose",
          "importlib.metadata", "onnx.reference") if m in sys.modules))
    x0 = np.array([[1.0, 2.0], [3.0, -4.0]], np.float32)
    out = None
    for event in Engine(model).run({"x0": x0}):
        pass
    import onnx
    from onnx.reference import ReferenceEvaluator
    print("helper:", onnx.helper.make_node("Add", ["a", "b"], ["c"]).op_type,
          "version:", onnx.__version__ == sys.argv[2],
          "same classes:", onnx.onnx_ml_pb2.ModelProto is onnx.ModelProto)
    proto = onnx.load(sys.argv[1])
    print("reference:", ReferenceEvaluator(proto).run(None, {"x0": x0})[0].round(4).tolist())
""")


def test_reading_in_a_fresh_process_leaves_onnx_init_until_it_is_used(tmp_path):
    path = tmp_path / "model.onnx"
    _model(path)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), onnx.__version__], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "whole onnx after reading: []"
    # the run's Einsum went through onnx.reference: onnx's __init__ ran for it, in the package
    # reading made, and the package is whole
    assert lines[1] == "helper: Add version: True same classes: True"
    w = np.array([[0.0, 1.0], [-1.0, 0.5]], np.float32)
    x = np.array([[1.0, 2.0], [3.0, -4.0]], np.float32)
    for _ in range(3):
        x = x @ w
    want = np.where(x.T >= 0, x.T, 0.5 * x.T)
    assert lines[2] == f"reference: {want.round(4).tolist()}"


def test_loopdbg_run_of_the_model_gives_the_reference_values(tmp_path):
    path = tmp_path / "model.onnx"
    _model(path)
    np.savez(tmp_path / "inputs.npz", x0=np.array([[1.0, 2.0], [3.0, -4.0]], np.float32))
    done = subprocess.run([sys.executable, "-m", "loopdbg", "run", str(path),
                           str(tmp_path / "inputs.npz"), "-o", str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    w = np.array([[0.0, 1.0], [-1.0, 0.5]], np.float32)
    x = np.array([[1.0, 2.0], [3.0, -4.0]], np.float32)
    for _ in range(3):
        x = x @ w
    got = np.load(tmp_path / "out.npz")["out"]
    np.testing.assert_allclose(got, np.where(x.T >= 0, x.T, 0.5 * x.T), rtol=1e-6)


@pytest.mark.parametrize("attr", [
    helper.make_attribute("f", 0.25), helper.make_attribute("i", -3),
    helper.make_attribute("s", b"abc"), helper.make_attribute("floats", [1.5, -2.0]),
    helper.make_attribute("ints", [1, 2, 3]), helper.make_attribute("strings", [b"a", b""]),
    helper.make_attribute("empty_ints", [], attr_type=AttributeProto.INTS),
    helper.make_attribute("tp", helper.make_tensor_type_proto(TensorProto.FLOAT, [2])),
    helper.make_attribute("tps", [helper.make_tensor_type_proto(TensorProto.INT64, None)]),
    helper.make_attribute("sparse", helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0], np.float32), "v"),
        numpy_helper.from_array(np.array([0], np.int64), "i"), [2])),
    AttributeProto(name="undefined"),
], ids=lambda a: a.name)
def test_attribute_values_are_onnx_helpers(attr):
    got = attribute_value(attr, attr.type)
    want = helper.get_attribute_value(attr)
    assert type(got) is type(want) and got == want


def test_a_reference_attribute_is_onnx_helpers_error():
    attr = helper.make_attribute_ref("alpha", AttributeProto.FLOAT)
    with pytest.raises(ValueError) as got:
        attribute_value(attr, attr.type)
    with pytest.raises(ValueError) as want:
        helper.get_attribute_value(attr)
    assert str(got.value) == str(want.value)


FALLBACK = textwrap.dedent("""
    import importlib, sys
    from loopdbg.ir import onnx_lib
    from loopdbg.ir.onnx_reader import read_onnx

    real = importlib.import_module

    def without_pb2(name, *args):          # an onnx whose protobuf module is named otherwise
        if name == "onnx.onnx_ml_pb2":
            raise ModuleNotFoundError(name)
        return real(name, *args)

    onnx_lib.importlib.import_module = without_pb2
    model = read_onnx(sys.argv[1])
    print(len(model.graph.layers), "onnx.helper" in sys.modules, onnx_lib.modules().cpp)
""")


def test_an_onnx_laid_out_otherwise_is_imported_whole(tmp_path):
    path = tmp_path / "model.onnx"
    _model(path)
    done = subprocess.run([sys.executable, "-c", FALLBACK, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    from loopdbg.ir.onnx_reader import from_proto

    assert done.stdout.split() == [str(len(from_proto(onnx.load(str(path))).graph.layers)),
                                   "True", "None"]


def _weighted():
    """A MatMul by a 64x32 weight (an initializer shape inference needs the dims of only), then
    a Reshape to a shape held by an initializer (one whose values inference reads) and a
    Resize by scales (floats it reads)."""
    f = TensorProto.FLOAT
    w = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]),
         helper.make_node("Reshape", ["y", "shape"], ["r"]),
         helper.make_node("Resize", ["r", "", "scales"], ["out"], mode="nearest")],
        "m", [helper.make_tensor_value_info("x", f, [4, 64])],
        [helper.make_tensor_value_info("out", f, None)],
        initializer=[numpy_helper.from_array(w, "w"),
                     numpy_helper.from_array(np.array([1, 1, 8, 16], np.int64), "shape"),
                     numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, w


def test_shape_inference_sees_the_weights_dims_not_their_values():
    from loopdbg.ir import onnx_lib

    model, w = _weighted()
    before = model.SerializeToString()
    sent = onnx_lib.for_inference(model)
    assert len(sent) < w.nbytes // 4             # the weight's 8 KiB are not serialized
    assert model.SerializeToString() == before    # the model itself is left as it was
    got = onnx_lib.infer_shapes(model)
    want = onnx.shape_inference.infer_shapes(model)
    assert [v.SerializeToString() for v in got.graph.value_info] == \
        [v.SerializeToString() for v in want.graph.value_info]
    assert got.graph.output[0] == want.graph.output[0]
    assert list(want.graph.output[0].type.tensor_type.shape.dim) != []    # it did infer
    model.graph.initializer[0].dims[:] = [64, 15]                # 960 elements: sent as it is
    assert len(onnx_lib.for_inference(model)) > w.nbytes
