"""ROI pooling family: ROIAlign-3/9, ROIAlignRotated-15, ROIPooling, PSROIPooling,
DeformablePSROIPooling: hand-computed values (no OpenVINO) and differential tests against
OpenVINO (``-m oracle``)."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


def kernel(type_, version, n_in=3, **data):
    layer = Layer(id=1, name="roi", type=type_, version=f"opset{version}",
                  data={k: str(v) for k, v in data.items()},
                  inputs=tuple(Port(i, i) for i in range(n_in)), outputs=(Port(n_in, 0),))
    return make_kernel(layer)[0]


RAMP = np.tile(np.arange(8, dtype=np.float32), (1, 2, 6, 1))      # value = x
RAMP[0, 1] *= -1                                                 # channel 1: -x


def test_roi_align_samples_a_ramp_at_bin_centres():
    fn = kernel("ROIAlign", 3, pooled_h=1, pooled_w=2, sampling_ratio=1, spatial_scale=1,
                mode="avg")
    out = fn(RAMP, np.array([[1, 1, 5, 3]], np.float32), np.array([0], np.int32))
    np.testing.assert_allclose(out[0, 0, 0], [2, 4])              # centres of [1, 3] and [3, 5]
    # max pooling starts from 0: the negative channel pools to 0
    fn = kernel("ROIAlign", 3, pooled_h=1, pooled_w=2, sampling_ratio=2, spatial_scale=1,
                mode="max")
    out = fn(RAMP, np.array([[1, 1, 5, 3]], np.float32), np.array([0], np.int32))
    np.testing.assert_allclose(out[0, 0, 0], [2.5, 4.5])
    np.testing.assert_allclose(out[0, 1, 0], [0, 0])


def test_roi_align_aligned_modes_and_minimum_size():
    box, b = np.array([[2, 0, 2, 0]], np.float32), np.array([0], np.int64)
    common = {"pooled_h": 1, "pooled_w": 1, "sampling_ratio": 1, "spatial_scale": 1,
              "mode": "avg"}
    # asymmetric: a point box becomes 1x1, sampled at its centre x = 2.5
    assert kernel("ROIAlign", 9, **common)(RAMP, box, b)[0, 0, 0, 0] == pytest.approx(2.5)
    # half_pixel_for_nn: shifted by -0.5 and of size 0: sampled at x = 1.5
    assert kernel("ROIAlign", 9, aligned_mode="half_pixel_for_nn", **common)(
        RAMP, box, b)[0, 0, 0, 0] == pytest.approx(1.5)
    # half_pixel with scale 2: (2 + 0.5) * 2 - 0.5 = 4.5
    common["spatial_scale"] = 2
    assert kernel("ROIAlign", 9, aligned_mode="half_pixel", **common)(
        RAMP, box, b)[0, 0, 0, 0] == pytest.approx(4.5)


def test_roi_align_outside_samples_and_bad_input():
    fn = kernel("ROIAlign", 3, pooled_h=1, pooled_w=1, sampling_ratio=1, spatial_scale=1,
                mode="avg")
    far = np.array([[20, 20, 22, 22], [-3, 0, -2, 1]], np.float32)
    assert (fn(RAMP, far, np.array([0, 0])) == 0).all()
    with pytest.raises(ValueError, match="batch index"):
        fn(RAMP, far, np.array([0, 1]))


def test_roi_align_rotated_by_a_right_angle_swaps_axes():
    fn = kernel("ROIAlignRotated", 15, pooled_h=2, pooled_w=1, sampling_ratio=1,
                spatial_scale=1, clockwise_mode="false")
    # a 2 (wide) x 4 (high) box centred at (3.5, 3.5), moved to (3, 3): its two bins, at
    # y = -/+1 about the centre, lie along x once rotated by 90 degrees: x = 3 -/+ 1
    out = fn(RAMP, np.array([[3.5, 3.5, 2, 4, np.pi / 2]], np.float32), np.array([0]))
    np.testing.assert_allclose(out[0, 0, :, 0], [2, 4], atol=1e-5)
    cw = kernel("ROIAlignRotated", 15, pooled_h=2, pooled_w=1, sampling_ratio=1,
                spatial_scale=1, clockwise_mode="true")
    out = cw(RAMP, np.array([[3.5, 3.5, 2, 4, np.pi / 2]], np.float32), np.array([0]))
    np.testing.assert_allclose(out[0, 0, :, 0], [4, 2], atol=1e-5)


FMAP = np.random.default_rng(0).standard_normal((2, 3, 8, 10)).astype(np.float32)
BOXES = np.array([[1, 1, 6, 5], [0.5, 2.2, 9.5, 7.9], [-2, -1, 3, 4], [3, 3, 3.2, 3.1],
                  [7, 5, 14, 12], [2, 1, 1, 0]], np.float32)
BATCH = np.array([0, 1, 1, 0, 1, 0], np.int32)


@oracle
@pytest.mark.parametrize("ratio", [0, 2])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("scale", [1.0, 0.5])
@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_roi_align3_against_openvino(tmp_path, ratio, mode, scale, backend):
    import openvino.opset3 as o3
    from _ov_single_op import P, check
    check(tmp_path, lambda d, b, i: o3.roi_align(
        d, b, i, pooled_h=3, pooled_w=2, sampling_ratio=ratio, spatial_scale=scale, mode=mode),
        [P(FMAP), P(BOXES), P(BATCH)], backend=backend)


@oracle
@pytest.mark.parametrize("ratio", [0, 3])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("aligned", ["asymmetric", "half_pixel_for_nn", "half_pixel"])
def test_roi_align9_against_openvino(tmp_path, ratio, mode, aligned):
    import openvino.opset9 as o9
    from _ov_single_op import P, check
    boxes, batch = BOXES, BATCH.astype(np.int64)
    if ratio == 0 and aligned != "asymmetric":
        boxes, batch = boxes[:-1], batch[:-1]   # inverted box: the plugin gives NaN (unit test)
    check(tmp_path, lambda d, b, i: o9.roi_align(
        d, b, i, pooled_h=2, pooled_w=4, sampling_ratio=ratio, spatial_scale=0.75, mode=mode,
        aligned_mode=aligned), [P(FMAP), P(boxes), P(batch)])


@oracle
@pytest.mark.parametrize("clockwise", [False, True])
@pytest.mark.parametrize("ratio, scale", [(0, 1.0), (2, 0.5)])
def test_roi_align_rotated_against_openvino(tmp_path, clockwise, ratio, scale):
    import openvino.opset15 as o15
    from _ov_single_op import P, check
    rois = np.array([[4, 3, 4, 3, 0.3], [5, 4, 6, 2, -1.0], [1, 1, 3, 5, 2.5],
                     [9, 7, 5, 5, 0.8]], np.float32)
    check(tmp_path, lambda d, b, i: o15.roi_align_rotated(
        d, b, i, pooled_h=2, pooled_w=3, sampling_ratio=ratio, spatial_scale=scale,
        clockwise_mode=clockwise), [P(FMAP), P(rois), P(np.array([0, 1, 0, 1], np.int64))])


# ---- ROIPooling, PSROIPooling, DeformablePSROIPooling ----------------------------------------

GRID = np.arange(2 * 4 * 6 * 7, dtype=np.float32).reshape(2, 4, 6, 7) % 11


def test_roi_pooling_max_bins_and_rounding():
    fn = kernel("ROIPooling", 2, n_in=2, pooled_h=1, pooled_w=2, spatial_scale=0.5, method="max")
    # x 1.4 * 0.5 = 0.7 rounds to 1; 5 * 0.5 = 2.5 rounds away from zero to 3: columns 1..3
    out = fn(GRID, np.array([[1, 1.4, 0, 5, 2]], np.float32))
    img = GRID[1]
    np.testing.assert_array_equal(out[0, :, 0, 0], img[:, 0:2, 1:3].max(axis=(1, 2)))
    np.testing.assert_array_equal(out[0, :, 0, 1], img[:, 0:2, 2:4].max(axis=(1, 2)))
    with pytest.raises(ValueError, match="batch index"):
        fn(GRID, np.array([[2, 0, 0, 1, 1]], np.float32))


def test_roi_pooling_bilinear_samples_edges():
    fn = kernel("ROIPooling", 2, n_in=2, pooled_h=2, pooled_w=2, spatial_scale=1,
                method="bilinear")
    out = fn(GRID[:, :1], np.array([[0, 0, 0, 1, 1]], np.float32))
    np.testing.assert_array_equal(out[0, 0], GRID[0, 0][[0, -1]][:, [0, -1]])


def test_psroi_average_reads_a_channel_per_bin():
    fn = kernel("PSROIPooling", 1, n_in=2, output_dim=1, group_size=2, spatial_scale=1,
                mode="average")
    out = fn(GRID, np.array([[0, 0, 0, 3, 1]], np.float32))      # 4 x 2 px, bins 2 x 1 px
    expected = [[GRID[0, 0, 0:1, 0:2].mean(), GRID[0, 1, 0:1, 2:4].mean()],
                [GRID[0, 2, 1:2, 0:2].mean(), GRID[0, 3, 1:2, 2:4].mean()]]
    np.testing.assert_allclose(out[0, 0], expected)
    with pytest.raises(ValueError, match="channels"):
        kernel("PSROIPooling", 1, n_in=2, output_dim=2, group_size=2, spatial_scale=1)(
            GRID, np.array([[0, 0, 0, 3, 1]], np.float32))


def test_deformable_psroi_skips_negative_batch_and_moves_bins():
    fn = kernel("DeformablePSROIPooling", 1, n_in=3, output_dim=1, group_size=1,
                spatial_scale=1, trans_std=1, part_size=1)
    boxes = np.array([[-1, 0, 0, 2, 2], [0, 0, 0, 2, 2]], np.float32)
    still = fn(GRID[:, :1], boxes, np.zeros((2, 2, 1, 1), np.float32))
    assert still[0].item() == 0
    # one sub-bin at the box's top-left corner (-0.5, -0.5) clamped to pixel (0, 0); an offset
    # of 1/3 of the 3-pixel box moves it by one pixel, to (0.5, 0.5): the mean of 4 pixels
    assert still[1].item() == GRID[0, 0, 0, 0]
    moved = fn(GRID[:, :1], boxes, np.full((2, 2, 1, 1), 1 / 3, np.float32))
    g = GRID[0, 0]
    assert moved[1].item() == pytest.approx(g[:2, :2].mean(), rel=1e-5)


POOL_BOXES = np.array([[0, 1, 1, 5, 4], [1, 0.4, 2.6, 6.5, 5.5], [1, 3, 3, 3, 3],
                       [0, -1, -2, 4, 3], [1, 5, 4, 9, 8]], np.float32)
UNIT_BOXES = np.array([[0, 0.1, 0.2, 0.7, 0.9], [1, 0.0, 0.0, 1.0, 1.0],
                       [1, 0.5, 0.3, 0.6, 0.35], [0, 0.2, 0.6, 1.2, 0.9]], np.float32)
MAPS = np.random.default_rng(1).standard_normal((2, 8, 6, 7)).astype(np.float32)


@oracle
@pytest.mark.parametrize("method, pooled, scale", [
    ("max", [3, 2], 1.0), ("max", [2, 2], 0.5), ("max", [1, 4], 0.25),
    ("bilinear", [3, 2], 1.0), ("bilinear", [1, 1], 1.0), ("bilinear", [2, 4], 1.0)])
def test_roi_pooling_against_openvino(tmp_path, method, pooled, scale):
    import openvino.opset2 as o2
    from _ov_single_op import P, check
    boxes = POOL_BOXES if method == "max" else UNIT_BOXES
    check(tmp_path, lambda d, r: o2.roi_pooling(d, r, output_roi=pooled, spatial_scale=scale,
                                                method=method), [P(MAPS), P(boxes)])


@oracle
@pytest.mark.parametrize("mode, group, bins, scale", [
    ("average", 2, (1, 1), 1.0), ("average", 2, (1, 1), 0.5), ("average", 1, (1, 1), 1.0),
    ("bilinear", 3, (2, 2), 0.125), ("bilinear", 1, (2, 1), 0.125),
    ("bilinear", 2, (1, 4), 0.125)])
def test_psroi_pooling_against_openvino(tmp_path, mode, group, bins, scale):
    import openvino.opset1 as o1
    from _ov_single_op import P, check
    bx, by = bins
    out_dim = 2 if mode == "average" and group == 2 else (8 if mode == "average" else 2)
    channels = out_dim * (group * group if mode == "average" else bx * by)
    data = np.random.default_rng(group).standard_normal((2, channels, 6, 7)).astype(np.float32)
    boxes = POOL_BOXES[[0, 1, 2, 4]]
    if mode == "bilinear":
        boxes = boxes * np.array([1, 0.8, 0.8, 0.8, 0.8], np.float32)
    check(tmp_path, lambda d, r: o1.psroi_pooling(d, r, out_dim, group, scale, bx, by, mode),
          [P(data), P(boxes)])


@oracle
@pytest.mark.parametrize("group, out_dim, bins, part, trans_std, scale, classes", [
    (2, 2, (1, 1), 2, 0.1, 1.0, 1), (3, 1, (2, 2), 3, 0.5, 0.5, 1),
    (2, 3, (3, 2), 1, 1.0, 1.0, 3)])
@pytest.mark.parametrize("with_offsets", [False, True])
def test_deformable_psroi_against_openvino(tmp_path, group, out_dim, bins, part, trans_std,
                                           scale, classes, with_offsets):
    import openvino.opset1 as o1
    from _ov_single_op import P, check
    rng = np.random.default_rng(group + out_dim)
    data = rng.standard_normal((2, out_dim * group * group, 6, 7)).astype(np.float32)
    boxes = np.concatenate([POOL_BOXES, [[-1, 1, 1, 3, 3]]]).astype(np.float32)
    bx, by = bins
    inputs = [P(data), P(boxes)]
    if with_offsets:
        inputs.append(P(rng.uniform(-1, 1, (len(boxes), 2 * classes, part, part))
                        .astype(np.float32)))

    def build(d, r, *o):
        return o1.deformable_psroi_pooling(d, r, out_dim, scale, group, "bilinear_deformable",
                                           bx, by, trans_std, part,
                                           offsets=o[0] if o else None)
    check(tmp_path, build, inputs)


@oracle
@pytest.mark.parametrize("type_", ["ROIAlign", "ROIPooling", "PSROIPooling"])
def test_half_precision_against_openvino(tmp_path, type_):
    import openvino.opset1 as o1
    import openvino.opset2 as o2
    import openvino.opset9 as o9
    from _ov_single_op import P, check
    maps = MAPS.astype(np.float16)
    if type_ == "ROIAlign":
        build = lambda d, r, i: o9.roi_align(d, r, i, pooled_h=2, pooled_w=2,
                                             sampling_ratio=2, spatial_scale=0.5, mode="avg")
        inputs = [P(maps), P(BOXES[:5].astype(np.float16)), P(BATCH[:5])]
    elif type_ == "ROIPooling":
        build = lambda d, r: o2.roi_pooling(d, r, output_roi=[2, 2],
                                            spatial_scale=1.0, method="max")
        inputs = [P(maps), P(POOL_BOXES.astype(np.float16))]
    else:
        build = lambda d, r: o1.psroi_pooling(d, r, 2, 2, 1.0, 1, 1, "average")
        inputs = [P(maps), P(POOL_BOXES[[0, 1, 2]].astype(np.float16))]
    check(tmp_path, build, inputs, rtol=1e-2, atol=1e-2)
