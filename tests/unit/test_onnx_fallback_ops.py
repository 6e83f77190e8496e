"""The ONNX operators loopdbg once left to onnx.reference, at the specification's edge cases,
against onnxruntime (the oracle, in its child process; needs the dev extra).

Each case is a single-node model built here. Where onnx.reference was narrower than the
specification (a mode name it does not know, an opset it has no class for, an attribute it
ignores) or slow on realistic sizes, the operator now has a kernel of loopdbg's own and the case
is the proof; where it was right, the case stays as a guard. Floats agree within 1e-4 unless a
case says otherwise; integers and shapes exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.oracle import onnxruntime_installed  # noqa: E402
from loopdbg.oracle import testing as ovt  # noqa: E402
from loopdbg.ops.registry import lookup  # noqa: E402

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(not onnxruntime_installed(), reason="no onnxruntime")]
RNG = np.random.default_rng(0)


def single_node(op_type, inputs, outputs=("y",), opset=18, **attrs):
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
    node = helper.make_node(op_type, names, list(outputs), **attrs)
    graph = helper.make_graph([node], "g", graph_in,
                              [helper.make_value_info(o, onnx.TypeProto()) for o in outputs],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
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


# -- GridSample: own 2-D sampler (onnx.reference: opset 16's names unknown, a minute per image) --

IMAGE = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
GRID = RNG.uniform(-1.2, 1.2, (1, 4, 5, 2)).astype(np.float32)     # some points outside


@pytest.mark.parametrize("opset, mode", [(16, "bilinear"), (16, "bicubic"), (16, "nearest"),
                                         (20, "linear"), (20, "cubic"), (20, "nearest")])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(tmp_path, opset, mode, padding, align):
    assert own_kernel("GridSample", opset)
    agree(tmp_path, "GridSample", [("x", IMAGE), ("g", GRID)], opset=opset, mode=mode,
          padding_mode=padding, align_corners=align)


def test_grid_sample_rounds_nearest_halves_to_even_and_samples_volumes(tmp_path):
    halves = np.array([[[[-1 + k / 6, 1 / 6] for k in range(7)]]], np.float32)
    agree(tmp_path, "GridSample", [("x", IMAGE), ("g", halves)], opset=20, mode="nearest")
    volume = RNG.standard_normal((1, 1, 3, 4, 4)).astype(np.float32)
    agree(tmp_path, "GridSample", [("x", volume),
                                   ("g", RNG.uniform(-1, 1, (1, 2, 2, 2, 3)).astype(np.float32))],
          opset=20)


# -- DequantizeLinear: onnx.reference has no class before opset 19 -------------------------------

@pytest.mark.parametrize("opset", [10, 13, 19])
def test_dequantize_linear_at_every_opset(tmp_path, opset):
    q = np.array([[0, 255, 3], [7, 1, 2]], np.uint8)
    agree(tmp_path, "DequantizeLinear", [("x", q), ("c_s", np.float32(0.5)),
                                         ("c_z", np.uint8(3))], opset=opset)
    agree(tmp_path, "DequantizeLinear", [("x", q.astype(np.int32)), ("c_s", np.float32(0.25))],
          opset=opset)
    if opset >= 13:                                     # per-axis scales and zero points
        agree(tmp_path, "DequantizeLinear", [("x", q), ("c_s", np.array([0.5, 2], np.float32)),
                                             ("c_z", np.array([1, 2], np.uint8))],
              opset=opset, axis=0)


@pytest.mark.parametrize("opset", [10, 13])
def test_quantize_linear_rounds_half_to_even_and_saturates(tmp_path, opset):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -300, 300, 7.49], np.float32)
    agree(tmp_path, "QuantizeLinear", [("x", x), ("c_s", np.float32(1)), ("c_z", np.int8(0))],
          opset=opset)
    agree(tmp_path, "QuantizeLinear", [("x", x * 40), ("c_s", np.float32(0.7))], opset=opset)


# -- MaxPool, AveragePool, LpPool: own window arithmetic (onnx.reference: SAME_LOWER a row short,
#    indices wrong and storage_order ignored, int8 and padded 1-D windows failing, LpPool's
#    ceil_mode windows off, and seconds per feature map) --------------------------------------

MAPS = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)
WINDOWS = [
    dict(kernel_shape=[3, 3]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    dict(kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),  # a window dropped
    dict(kernel_shape=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1], ceil_mode=1),
    dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER"),
    dict(kernel_shape=[3, 3], strides=[2, 3], auto_pad="VALID"),
]
DILATED = [dict(kernel_shape=[2, 3], dilations=[2, 1]),
           dict(kernel_shape=[2, 2], dilations=[2, 2], strides=[2, 2], pads=[0, 1, 1, 0],
                ceil_mode=1)]


def _name(attrs: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in attrs.items())


@pytest.mark.parametrize("attrs", WINDOWS + DILATED, ids=_name)
def test_max_pool_values_and_indices(tmp_path, attrs):
    assert own_kernel("MaxPool", 12)
    for order in (0, 1):
        agree(tmp_path, "MaxPool", [("x", MAPS)], ("y", "i"), opset=12, storage_order=order,
              **attrs)


@pytest.mark.parametrize("attrs", WINDOWS + DILATED, ids=_name)
@pytest.mark.parametrize("count_pad", [0, 1])
def test_average_pool(tmp_path, attrs, count_pad):
    agree(tmp_path, "AveragePool", [("x", MAPS)], opset=19, count_include_pad=count_pad, **attrs)


@pytest.mark.parametrize("attrs", WINDOWS, ids=_name)
def test_lp_pool(tmp_path, attrs):
    agree(tmp_path, "LpPool", [("x", MAPS)], opset=18, p=3, **attrs)


def test_pools_of_other_types_ranks_and_opsets(tmp_path):
    q = RNG.integers(-128, 127, (1, 2, 6, 6)).astype(np.int8)
    agree(tmp_path, "MaxPool", [("x", q)], opset=12, kernel_shape=[2, 2], pads=[1, 1, 1, 1])
    ties = np.ones((1, 1, 4, 4), np.uint8)               # the first of equal values, no padding
    agree(tmp_path, "MaxPool", [("x", ties)], ("y", "i"), opset=12, kernel_shape=[2, 2],
          pads=[1, 1, 1, 1])
    agree(tmp_path, "MaxPool", [("x", MAPS[0])], opset=12, kernel_shape=[3], pads=[1, 1])
    volume = RNG.standard_normal((1, 2, 4, 5, 6)).astype(np.float32)
    agree(tmp_path, "MaxPool", [("x", volume)], ("y", "i"), opset=12, kernel_shape=[2, 2, 3],
          strides=[1, 2, 2])
    agree(tmp_path, "MaxPool", [("x", MAPS.astype(np.float16))], opset=12, kernel_shape=[2, 2])
    agree(tmp_path, "AveragePool", [("x", MAPS.astype(np.float16))], opset=19,
          kernel_shape=[2, 2], tol=1e-2)
    agree(tmp_path, "AveragePool", [("x", MAPS)], opset=7, kernel_shape=[2, 2],
          pads=[1, 1, 1, 1], count_include_pad=1)
    agree(tmp_path, "LpPool", [("x", MAPS)], opset=2, kernel_shape=[2, 2])
