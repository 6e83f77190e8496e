"""The ONNX operators loopdbg still runs by onnx.reference, at the specification's edge cases
where onnx.reference and onnxruntime (the oracle, in its child process) agree: guards, so that an
onnx upgrade that changes one is seen. Where onnxruntime itself is off (MatMulInteger's uint8 x
int8 kernel), the case holds loopdbg to exact arithmetic instead; and a failure inside
onnx.reference is reported by its cause.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from _onnx_single_node import agree, single_node  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.oracle import onnxruntime_installed  # noqa: E402

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(not onnxruntime_installed(), reason="no onnxruntime")]
RNG = np.random.default_rng(0)


# -- Guards: operators onnx.reference still runs, at the edge cases where it agrees --------------

def _i64(*values):
    return np.array(values, np.int64)


GRID_DATA = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
SIGNAL = RNG.standard_normal((2, 16, 1)).astype(np.float32)
ROWS = RNG.standard_normal((4, 3)).astype(np.float32)
U8 = RNG.integers(0, 255, (3, 4)).astype(np.uint8)
I8 = RNG.integers(-128, 127, (4, 5)).astype(np.int8)
STUMPS = dict(nodes_featureids=[0, 1, 0, 0, 0, 0], nodes_nodeids=[0, 1, 2, 0, 1, 2],
              nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "LEAF"],
              nodes_treeids=[0, 0, 0, 1, 1, 1], nodes_truenodeids=[1, 0, 0, 1, 0, 0],
              nodes_falsenodeids=[2, 0, 0, 2, 0, 0], nodes_values=[0.1, 0, 0, -0.2, 0, 0])
ML = dict(opset=17, domain="ai.onnx.ml")
GUARDS = {
    "Einsum ellipsis broadcast": ("Einsum", [("a", RNG.standard_normal((1, 3, 4)).astype(
        np.float32)), ("b", RNG.standard_normal((2, 4, 5)).astype(np.float32))], ("y",),
        dict(opset=12, equation="...ij,...jk->...ik")),
    "Einsum trace implicit": ("Einsum", [("a", RNG.standard_normal((3, 3, 4)).astype(
        np.float32))], ("y",), dict(opset=12, equation="iij")),
    "GatherND batch_dims negative": ("GatherND", [
        ("x", np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
        ("c_i", np.array([[[0, -1]], [[2, 3]]], np.int64))], ("y",), dict(opset=13, batch_dims=1)),
    "Compress short condition": ("Compress", [("x", ROWS), ("c_c", np.array([0, 1], bool))],
                                 ("y",), dict(opset=11, axis=-1)),
    "DepthToSpace CRD": ("DepthToSpace", [("x", RNG.standard_normal((2, 8, 2, 3)).astype(
        np.float32))], ("y",), dict(opset=13, blocksize=2, mode="CRD")),
    "ReverseSequence batch first": ("ReverseSequence", [
        ("x", RNG.standard_normal((3, 4, 2)).astype(np.float32)), ("c_l", _i64(1, 4, 0))],
        ("y",), dict(opset=10, batch_axis=0, time_axis=1)),
    "CenterCropPad axes": ("CenterCropPad", [("x", RNG.standard_normal((5, 7, 3)).astype(
        np.float32)), ("c_s", _i64(8, 4))], ("y",), dict(opset=18, axes=[0, 1])),
    "Col2Im pads": ("Col2Im", [("x", RNG.standard_normal((1, 4, 20)).astype(np.float32)),
                               ("c_i", _i64(5, 4)), ("c_b", _i64(2, 2))], ("y",),
                    dict(opset=18, pads=[1, 0, 0, 1])),
    "DFT onesided with length": ("DFT", [("x", SIGNAL), ("c_l", np.int64(10))], ("y",),
                                 dict(opset=17, axis=1, onesided=1)),
    "DFT-20 inverse axis input": ("DFT", [("x", np.concatenate([SIGNAL, SIGNAL / 2], -1)),
                                          ("c_l", None), ("c_a", np.int64(1))], ("y",),
                                  dict(opset=20, inverse=1)),
    "STFT window and length": ("STFT", [("x", SIGNAL), ("c_st", np.int64(3)),
                                        ("c_w", np.hanning(6).astype(np.float32)),
                                        ("c_l", np.int64(6))], ("y",), dict(opset=17)),
    "HannWindow symmetric": ("HannWindow", [("c_n", np.int64(10))], ("y",),
                             dict(opset=17, periodic=0)),
    "QuantizeLinear per axis": ("QuantizeLinear", [
        ("x", RNG.standard_normal((2, 5)).astype(np.float32) * 100),
        ("c_s", np.array([0.5, 2], np.float32)), ("c_z", np.array([1, 2], np.uint8))], ("y",),
        dict(opset=13, axis=0)),
    "DynamicQuantizeLinear": ("DynamicQuantizeLinear", [("x", ROWS * 10)], ("y", "s", "z"),
                              dict(opset=11)),
    "QLinearConv": ("QLinearConv", [
        ("x", RNG.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)), ("c_xs", np.float32(0.1)),
        ("c_xz", np.uint8(3)), ("w", RNG.integers(0, 255, (3, 2, 3, 3)).astype(np.uint8)),
        ("c_ws", np.float32(0.02)), ("c_wz", np.uint8(100)), ("c_ys", np.float32(0.5)),
        ("c_yz", np.uint8(10)), ("c_b", np.array([1, -200, 30], np.int32))], ("y",),
        dict(opset=10, pads=[1, 1, 1, 1], strides=[2, 2])),
    "BatchNormalization training": ("BatchNormalization", [
        ("x", RNG.standard_normal((2, 3, 4)).astype(np.float32)),
        ("c_s", np.ones(3, np.float32)), ("c_b", np.zeros(3, np.float32)),
        ("c_m", np.zeros(3, np.float32)), ("c_v", np.ones(3, np.float32))], ("y", "m", "v"),
        dict(opset=15, training_mode=1)),
    "GroupNormalization-21": ("GroupNormalization", [
        ("x", RNG.standard_normal((2, 4, 3)).astype(np.float32)),
        ("c_s", np.array([1, 2, 3, 4], np.float32)), ("c_b", np.array([0, 1, 0, 1], np.float32))],
        ("y",), dict(opset=21, num_groups=2)),
    "MeanVarianceNormalization axes": ("MeanVarianceNormalization", [("x", GRID_DATA)], ("y",),
                                       dict(opset=13, axes=[1, 3])),
    "MaxUnpool": ("MaxUnpool", [("x", np.array([[[[5, 6], [7, 8]]]], np.float32)),
                                ("c_i", np.array([[[[5, 7], [13, 15]]]], np.int64))], ("y",),
                  dict(opset=11, kernel_shape=[2, 2], strides=[2, 2])),
    "SoftmaxCrossEntropyLoss ignore_index": ("SoftmaxCrossEntropyLoss", [
        ("x", RNG.standard_normal((3, 5)).astype(np.float32)), ("c_t", _i64(1, -100, 4))],
        ("y", "p"), dict(opset=13, ignore_index=-100)),
    "Attention causal grouped": ("Attention", [
        ("q", RNG.standard_normal((2, 4, 5, 8)).astype(np.float32)),
        ("k", RNG.standard_normal((2, 2, 6, 8)).astype(np.float32)),
        ("v", RNG.standard_normal((2, 2, 6, 8)).astype(np.float32))], ("y",),
        dict(opset=23, is_causal=1)),
    "RotaryEmbedding interleaved": ("RotaryEmbedding", [
        ("x", RNG.standard_normal((2, 4, 5, 8)).astype(np.float32)),
        ("c", RNG.standard_normal((10, 4)).astype(np.float32)),
        ("s", RNG.standard_normal((10, 4)).astype(np.float32)),
        ("p", np.tile(np.arange(5), (2, 1)).astype(np.int64))], ("y",),
        dict(opset=23, interleaved=1)),
    "Scaler": ("Scaler", [("x", ROWS)], ("y",), dict(offset=[1., 2., 3.], scale=[2., .5, 1.],
                                                     **ML)),
    "LinearClassifier softmax": ("LinearClassifier", [("x", ROWS)], ("l", "p"), dict(
        coefficients=list(RNG.standard_normal(9)), intercepts=[.1, .2, .3],
        classlabels_ints=[4, 5, 6], post_transform="SOFTMAX", **ML)),
    "TreeEnsembleRegressor average": ("TreeEnsembleRegressor", [("x", ROWS)], ("y",), dict(
        n_targets=1, target_ids=[0] * 4, target_nodeids=[1, 2, 1, 2], target_treeids=[0, 0, 1, 1],
        target_weights=[1., 2., 3., 4.], aggregate_function="AVERAGE", **STUMPS, **ML)),
    "TreeEnsembleClassifier softmax": ("TreeEnsembleClassifier", [("x", ROWS)], ("l", "p"), dict(
        classlabels_int64s=[0, 1, 2], class_ids=[0, 1, 2, 2], class_nodeids=[1, 2, 1, 2],
        class_treeids=[0, 0, 1, 1], class_weights=[1., 2., 3., .5], post_transform="SOFTMAX",
        **STUMPS, **ML)),
    "SVMClassifier probabilities": ("SVMClassifier", [("x", ROWS)], ("l", "p"), dict(
        classlabels_ints=[0, 1], coefficients=list(RNG.standard_normal(3)),
        support_vectors=list(RNG.standard_normal(9)), vectors_per_class=[1, 2], rho=[.1],
        kernel_type="RBF", kernel_params=[0.3, 0, 3], prob_a=[-1.5], prob_b=[0.2], **ML)),
}


@pytest.mark.parametrize("case", list(GUARDS))
def test_onnx_reference_agrees_with_onnxruntime_on(tmp_path, case):
    op_type, inputs, outputs, attrs = GUARDS[case]
    agree(tmp_path, op_type, inputs, outputs, **attrs)


def test_mat_mul_integer_is_exact_where_onnxruntime_saturates():
    """onnxruntime's uint8 x int8 kernel saturates pairs of products in int16 (a [3, 4] x [4, 5]
    product came out 29259 for 37825); onnx.reference's, which loopdbg runs, is exact."""
    a = np.full((1, 4), 255, np.uint8)
    b = np.full((4, 1), 127, np.int8)
    model, feeds = single_node("MatMulInteger", [("a", a), ("b", b), ("c_az", np.uint8(0)),
                                                 ("c_bz", np.int8(-1))], opset=10)
    got = Engine(from_proto(model)).run_to_end(feeds).outputs["y"]
    assert got.dtype == np.int32 and got.tolist() == [[4 * 255 * 128]]


def test_a_failure_inside_onnx_reference_says_why_not_which_types_it_had():
    model, feeds = single_node("DFT", [("x", np.zeros((2, 16, 1), np.float32)),
                                       ("c_l", np.array([10], np.int64))], opset=17, axis=1)
    with pytest.raises(Exception) as info:             # dft_length must be a scalar
        Engine(from_proto(model)).run_to_end(feeds)
    assert "layer 2 'y' (onnx.DFT) failed: onnx.reference's DFT failed on these inputs: " \
           "only integer scalar arrays" in str(info.value)
    assert "Issues with types" not in str(info.value)
