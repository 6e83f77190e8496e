"""The ONNX operators loopdbg once left to onnx.reference and now runs by kernels of its own, at
the specification's edge cases, against onnxruntime (the oracle, in its child process; needs the
dev extra).

Each case is a single-node model built here. onnx.reference was narrower than the specification
for these (a mode name it does not know, an opset it has no class for, an input form it refuses,
an attribute it ignores) or slow on realistic sizes; the cases hold where it failed and the rest
of each operator's edge cases. The operators it still runs are guarded in
test_onnx_reference_guards.py. Floats agree within 1e-4 unless a case
says otherwise; integers and shapes exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from _onnx_single_node import agree, own_kernel, single_node  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.oracle import onnxruntime_installed  # noqa: E402

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(not onnxruntime_installed(), reason="no onnxruntime")]
RNG = np.random.default_rng(0)


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


# -- Resize and Upsample: own kernel (onnx.reference: Resize-10 and Upsample-7 did not run,
#    Upsample-9 refused fractional scales, tf_half_pixel_for_nn and negative axes were refused,
#    align_corners measured the output by the fractional in * scale) -----------------------------

PICTURE = RNG.standard_normal((1, 2, 5, 7)).astype(np.float32)
NO_ROI = ("c_roi", None)


def _scales(*values):
    return ("c_scales", np.array(values, np.float32))


def _sizes(*values):
    return ("c_sizes", np.array(values, np.int64))


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("transform", ["half_pixel", "pytorch_half_pixel", "align_corners",
                                       "asymmetric", "half_pixel_symmetric"])
@pytest.mark.parametrize("scales", [(1, 1, 2, 1.5), (1, 1, 0.6, 0.45)], ids=["up", "down"])
def test_resize_modes_and_coordinates(tmp_path, mode, transform, scales):
    assert own_kernel("Resize", 19)
    agree(tmp_path, "Resize", [("x", PICTURE), NO_ROI, _scales(*scales)], opset=19, mode=mode,
          coordinate_transformation_mode=transform)


@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest_modes_and_tensorflows_half_pixel(tmp_path, nearest):
    agree(tmp_path, "Resize", [("x", PICTURE), NO_ROI, ("c_scales", None), _sizes(1, 2, 8, 3)],
          opset=13,
          mode="nearest", nearest_mode=nearest)
    empty_roi = ("c_roi", np.zeros(0, np.float32))            # required at opset 11
    agree(tmp_path, "Resize", [("x", PICTURE), empty_roi, _scales(1, 1, 1.7, 0.6)], opset=11,
          mode="nearest", nearest_mode=nearest, coordinate_transformation_mode="tf_half_pixel_for_nn")


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_crops_extrapolates_and_reaches_one_element(tmp_path, mode):
    roi = np.array([-0.2, 0.1, 1.1, 0.8], np.float32)            # two axes, given in reverse
    agree(tmp_path, "Resize", [("x", PICTURE), ("c_roi", roi), ("c_scales", None), _sizes(4, 6)],
          opset=18, mode=mode, axes=[3, 2], coordinate_transformation_mode="tf_crop_and_resize",
          extrapolation_value=5.0)
    roi = np.array([0, 0, 0.2, 0.3, 1, 1, 0.6, 0.9], np.float32)
    agree(tmp_path, "Resize", [("x", PICTURE), ("c_roi", roi), ("c_scales", None),
                               _sizes(1, 2, 1, 4)], opset=13, mode=mode,
          coordinate_transformation_mode="tf_crop_and_resize")
    for transform in ("pytorch_half_pixel", "align_corners"):
        agree(tmp_path, "Resize", [("x", PICTURE), NO_ROI, ("c_scales", None),
                                   _sizes(1, 2, 1, 3)], opset=13, mode=mode,
              coordinate_transformation_mode=transform)


def test_resize_axes_aspect_ratio_cubic_options_and_antialias(tmp_path):
    agree(tmp_path, "Resize", [("x", PICTURE), NO_ROI, ("c_scales", None), _sizes(9, 4)],
          opset=18, mode="linear", axes=[-2, -1])
    for policy in ("stretch", "not_larger", "not_smaller"):
        agree(tmp_path, "Resize", [("x", PICTURE), NO_ROI, ("c_scales", None), _sizes(10, 10)],
              opset=18, mode="linear", axes=[2, 3], keep_aspect_ratio_policy=policy)
    agree(tmp_path, "Resize", [("x", PICTURE), NO_ROI, _scales(1, 1, 1.6, 0.7)], opset=18,
          mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5)
    for mode, scales in (("linear", (1, 1, 0.5, 0.4)), ("cubic", (1, 1, 0.5, 3)),
                         ("linear", (1, 1, 2, 3))):
        agree(tmp_path, "Resize", [("x", PICTURE), NO_ROI, _scales(*scales)], opset=18,
              mode=mode, antialias=1)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.float16])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_integer_data_truncates_into_its_type(tmp_path, dtype, mode):
    x = (RNG.standard_normal((1, 2, 5, 7)) * 60 + (100 if dtype == np.uint8 else 0)).astype(dtype)
    agree(tmp_path, "Resize", [("x", x), NO_ROI, _scales(1, 1, 1.7, 0.6)], opset=13, mode=mode,
          tol=1e-2)


def test_resize_10_and_upsample(tmp_path):
    for mode in ("nearest", "linear"):
        for scales in ((1, 1, 2, 1.5), (1, 1, 0.6, 0.45)):
            agree(tmp_path, "Resize", [("x", PICTURE), _scales(*scales)], opset=10, mode=mode)
        agree(tmp_path, "Upsample", [("x", PICTURE), _scales(1, 1, 2, 1.5)], opset=9, mode=mode)
        agree(tmp_path, "Upsample", [("x", PICTURE)], opset=7, mode=mode, scales=[1., 1., 3., 2.])


def test_upsample_refuses_to_shrink_as_the_specification_says():
    model, feeds = single_node("Upsample", [("x", PICTURE), _scales(1, 1, 0.5, 1)], opset=9)
    with pytest.raises(Exception, match=r"Upsample scales \[1.0, 1.0, 0.5, 1.0\] must be at "
                                        r"least 1"):
        Engine(from_proto(model)).run_to_end(feeds)


# -- LRN, LpNormalization, OneHot, Unique: own kernels (onnx.reference departed from the
#    specification: LRN's window sum, LpNormalization's p=1 norm, OneHot's float indices and
#    depth, Unique's sorted=0 slices along an axis other than 0) ------------------------------

FEATURES = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("axis, p", [(-1, 1), (-1, 2), (1, 1), (0, 2)])
def test_lp_normalization(tmp_path, axis, p):
    assert own_kernel("LpNormalization", 22)
    agree(tmp_path, "LpNormalization", [("x", FEATURES)], opset=1, axis=axis, p=p)
    agree(tmp_path, "LpNormalization", [("x", np.zeros((2, 3), np.float32))], opset=1, p=p)


@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn(tmp_path, size):
    agree(tmp_path, "LRN", [("x", FEATURES)], opset=13, size=size, alpha=0.1, beta=0.75,
          bias=2.0)
    agree(tmp_path, "LRN", [("x", FEATURES.astype(np.float16))], opset=13, size=size, tol=1e-2)


def test_one_hot(tmp_path):
    on_off = ("c_v", np.array([-1, 5], np.float32))
    agree(tmp_path, "OneHot", [("x", np.array([0, -1, 2, 5, -4, -5], np.int64)),
                               ("c_d", np.int64(4)), on_off], opset=11)      # out of range: off
    agree(tmp_path, "OneHot", [("x", np.array([[0, 1], [2, 3]], np.int64)),
                               ("c_d", np.float32(3.7)), on_off], opset=11, axis=0)
    agree(tmp_path, "OneHot", [("x", np.array([0., 1.7, -1.2], np.float32)),
                               ("c_d", np.array([3], np.int64)),
                               ("c_v", np.array([0, 1], np.int64))], opset=11)
    agree(tmp_path, "OneHot", [("x", np.array([[0, 1, 2], [2, 1, 0]], np.int64)),
                               ("c_d", np.int64(4)), on_off], opset=9, axis=-2)


MATRIX = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [0, 9, 9]], np.float32)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("ordered", [0, 1])
def test_unique(tmp_path, axis, ordered):
    x = MATRIX.T.copy() if axis in (1, -1) else MATRIX
    attrs = {} if axis is None else {"axis": axis}
    agree(tmp_path, "Unique", [("x", x)], ("y", "i", "inv", "c"), opset=11, sorted=ordered,
          **attrs)


def test_unique_of_slices_in_three_dimensions_and_of_integers(tmp_path):
    x = np.array([[[1, 1], [0, 1], [1, 1]], [[2, 2], [3, 3], [2, 2]]], np.float32)
    agree(tmp_path, "Unique", [("x", x)], ("y", "i", "inv", "c"), opset=11, axis=1, sorted=0)
    agree(tmp_path, "Unique", [("x", np.array([5, 5, -1, 0], np.int64))], ("y", "i", "inv", "c"),
          opset=11, sorted=0)
    agree(tmp_path, "Unique", [("x", np.array([2, 1, 1], np.int8))], opset=11)


# -- NonMaxSuppression: own (onnx.reference failed on a scalar or absent max_output_boxes) ------

BOXES = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                   [0, 10.1, 1, 11.1], [0, 100, 1, 101], [1, 1, 0, 0], [5, 5, 5, 5]]], np.float32)
SCORES = np.array([[[.9, .75, .6, .95, .5, .3, .9, .99], [.5] * 8]], np.float32)


def test_non_max_suppression_inputs_as_the_specification_gives_them(tmp_path):
    assert own_kernel("NonMaxSuppression", 11)
    agree(tmp_path, "NonMaxSuppression", [("b", BOXES), ("s", SCORES), ("c_m", np.int64(3)),
                                          ("c_i", np.float32(0.3))], opset=11)   # scalars
    agree(tmp_path, "NonMaxSuppression", [("b", BOXES), ("s", SCORES)], opset=11)  # no max: 0
    agree(tmp_path, "NonMaxSuppression", [("b", BOXES), ("s", SCORES),
                                          ("c_m", np.array([-1], np.int64))], opset=10)


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_at_equal_thresholds_and_ties(tmp_path, center):
    # scores equal to score_threshold are dropped, IoU equal to iou_threshold is kept
    agree(tmp_path, "NonMaxSuppression", [("b", BOXES), ("s", SCORES),
                                          ("c_m", np.array([10], np.int64)),
                                          ("c_i", np.array([0.0], np.float32)),
                                          ("c_t", np.array([0.5], np.float32))],
          opset=11, center_point_box=center)
    thirds = np.array([[[0, 0, 1, 2], [0, 1, 1, 3], [0, 0, 1, 2]]], np.float32)
    agree(tmp_path, "NonMaxSuppression", [("b", thirds), ("s", np.array([[[.9, .8, .7]]],
                                                                         np.float32)),
                                          ("c_m", np.array([10], np.int64)),
                                          ("c_i", np.float32(1 / 3))], opset=11)
    agree(tmp_path, "NonMaxSuppression", [("b", BOXES), ("s", np.full((1, 1, 8), 0.5, np.float32)),
                                          ("c_m", np.array([8], np.int64)),
                                          ("c_i", np.array([0.5], np.float32))], opset=10)


# -- TopK: own (onnx.reference sorted the whole axis: 130 ms per [4, 50257] vocabulary) ----------

@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_ties_go_lower_index_first_and_nan_is_largest(tmp_path, largest):
    assert own_kernel("TopK", 11)
    ties = np.array([[3, 1, 3, 2, 1, 3], [0] * 6], np.float32)
    agree(tmp_path, "TopK", [("x", ties), ("c_k", np.array([3], np.int64))], ("y", "i"),
          opset=11, largest=largest)
    nans = np.array([1, np.nan, 3, -np.inf, 2, np.nan], np.float32)
    for k in (2, 5):
        agree(tmp_path, "TopK", [("x", nans), ("c_k", np.array([k], np.int64))], ("y", "i"),
              opset=11, largest=largest)
    wide = np.repeat(RNG.integers(0, 50, (4, 1000)).astype(np.float32), 50, axis=1)
    agree(tmp_path, "TopK", [("x", wide), ("c_k", np.array([50], np.int64))], ("y", "i"),
          opset=11, largest=largest)                  # the partition path, ties at the k-th


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint8, np.float64, np.float16])
def test_top_k_types_axes_and_opsets(tmp_path, dtype):
    x = RNG.integers(0, 4, (4, 300)).astype(dtype)
    for largest in (0, 1):
        agree(tmp_path, "TopK", [("x", x), ("c_k", np.array([5], np.int64))], ("y", "i"),
              opset=11, largest=largest)
    cube = RNG.standard_normal((3, 5, 7)).astype(np.float32)
    for axis in (0, -2):
        agree(tmp_path, "TopK", [("x", cube), ("c_k", np.array([2], np.int64))], ("y", "i"),
              opset=10, axis=axis)
    agree(tmp_path, "TopK", [("x", cube)], ("y", "i"), opset=1, k=3)
    agree(tmp_path, "TopK", [("x", cube), ("c_k", np.array([0], np.int64))], ("y", "i"),
          opset=11)
    extremes = np.array([[np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max, 5]], np.int64)
    agree(tmp_path, "TopK", [("x", extremes), ("c_k", np.array([2], np.int64))], ("y", "i"),
          opset=11)


# -- ScatterElements: own (onnx.reference's reductions loop in Python) -------------------------

@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements_negative_and_repeated_indices(tmp_path, reduction):
    assert own_kernel("ScatterElements", 18)
    attrs = {} if reduction == "none" else {"reduction": reduction}
    agree(tmp_path, "ScatterElements", [("x", np.ones((3, 4), np.float32)),
                                        ("c_i", np.array([[-1, 0], [2, -3]], np.int64)),
                                        ("c_u", np.array([[1, 2], [3, 4]], np.float32))],
          opset=18, axis=1, **attrs)
    agree(tmp_path, "ScatterElements", [("x", np.full((3, 4), 2, np.float32)),
                                        ("c_i", np.array([[1, 1, 1]], np.int64)),
                                        ("c_u", np.array([[3, 5, 4]], np.float32))],
          opset=18, axis=-1, **attrs)


def test_scatter_elements_axes_types_and_its_old_name(tmp_path):
    agree(tmp_path, "ScatterElements", [("x", np.zeros((3, 2, 2), np.float32)),
                                        ("c_i", np.array([[[2, 0]], [[1, 1]]], np.int64)),
                                        ("c_u", np.full((2, 1, 2), 7, np.float32))], opset=13)
    agree(tmp_path, "ScatterElements", [("x", np.arange(12, dtype=np.int64).reshape(3, 4)),
                                        ("c_i", np.array([[1, 3]], np.int32)),
                                        ("c_u", np.array([[9, 8]], np.int64))],
          opset=16, axis=1, reduction="mul")
    agree(tmp_path, "Scatter", [("x", np.zeros((3, 4), np.float32)),
                                ("c_i", np.array([[1, -2]], np.int64)),
                                ("c_u", np.ones((1, 2), np.float32))], opset=9, axis=1)


# -- RoiAlign: own for mode=avg (onnx.reference: Python loops over every bin of every box) -------

MAPS2 = RNG.standard_normal((2, 3, 10, 12)).astype(np.float32)
ROIS = np.array([[0, 0, 4, 4], [1, 1, 5.5, 3.2], [-1, -1, 2, 2], [3, 2, 3, 2], [8, 7, 20, 15],
                 [5, 5, 2, 1]], np.float32)              # outside, empty and inverted boxes too
BATCH = np.array([0, 1, 0, 1, 0, 1], np.int64)


@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_average(tmp_path, transform, ratio):
    assert own_kernel("RoiAlign", 16)
    agree(tmp_path, "RoiAlign", [("x", MAPS2), ("c_r", ROIS), ("c_b", BATCH)], opset=16,
          coordinate_transformation_mode=transform, output_height=3, output_width=2,
          sampling_ratio=ratio, spatial_scale=0.5)


def test_roi_align_at_opset_10_by_default_and_in_max_mode(tmp_path):
    agree(tmp_path, "RoiAlign", [("x", MAPS2), ("c_r", ROIS), ("c_b", BATCH)], opset=10,
          output_height=2, output_width=2, sampling_ratio=2, spatial_scale=0.5)
    agree(tmp_path, "RoiAlign", [("x", MAPS2), ("c_r", ROIS), ("c_b", BATCH)], opset=16)
    agree(tmp_path, "RoiAlign", [("x", MAPS2), ("c_r", ROIS), ("c_b", BATCH)], opset=16,
          mode="max", output_height=3, output_width=2, sampling_ratio=2)   # onnx.reference's
