"""Detection heads: RegionYolo-1, ReorgYolo, DetectionOutput-1/8, Proposal-1/4,
GenerateProposals-9: hand-computed values (no OpenVINO) and differential tests against OpenVINO
(``-m oracle``)."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel

oracle = pytest.mark.oracle


def kernel(type_, version, n_in=1, n_out=1, **data):
    layer = Layer(id=1, name="det", type=type_, version=f"opset{version}",
                  data={k: str(v) for k, v in data.items()},
                  inputs=tuple(Port(i, i) for i in range(n_in)),
                  outputs=tuple(Port(n_in + j, j) for j in range(n_out)))
    return make_kernel(layer)[0]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---- RegionYolo, ReorgYolo -------------------------------------------------------------------

X = np.random.default_rng(0).standard_normal((2, 2 * 7, 3, 4)).astype(np.float32)


def test_region_yolo_v3_logistic_on_all_but_sizes():
    out = kernel("RegionYolo", 1, coords=4, classes=2, num=6, do_softmax="false", mask="0,1",
                 axis=1, end_axis=3)(X)
    assert out.shape == X.shape
    r, x = out.reshape(2, 2, 7, 3, 4), X.reshape(2, 2, 7, 3, 4)
    np.testing.assert_allclose(r[:, :, :2], sigmoid(x[:, :, :2]), rtol=1e-6)
    np.testing.assert_array_equal(r[:, :, 2:4], x[:, :, 2:4])
    np.testing.assert_allclose(r[:, :, 4:], sigmoid(x[:, :, 4:]), rtol=1e-6)


def test_region_yolo_v2_softmax_over_classes_and_flatten():
    out = kernel("RegionYolo", 1, coords=4, classes=2, num=2, do_softmax="true", axis=1,
                 end_axis=3)(X)
    assert out.shape == (2, 14 * 12)
    r, x = out.reshape(2, 2, 7, 3, 4), X.reshape(2, 2, 7, 3, 4)
    np.testing.assert_allclose(r[:, :, 4], sigmoid(x[:, :, 4]), rtol=1e-6)
    e = np.exp(x[:, :, 5:])
    np.testing.assert_allclose(r[:, :, 5:], e / e.sum(axis=2, keepdims=True), rtol=1e-5)
    with pytest.raises(ValueError, match="channels"):
        kernel("RegionYolo", 1, coords=4, classes=2, num=3, axis=1, end_axis=3)(X)


def test_reorg_yolo_moves_blocks_to_channels():
    x = np.arange(1 * 4 * 2 * 4, dtype=np.float32).reshape(1, 4, 2, 4)
    out = kernel("ReorgYolo", 2, stride="2")(x)
    assert out.shape == (1, 16, 1, 2)
    # element (c, h, w) of the output seen in the input's shape reads the input seen as
    # [1, 1, 4, 8] at (h * 2 + c // 2, w * 2 + c % 2)
    flat, view = out.reshape(1, 4, 2, 4), x.reshape(1, 1, 4, 8)
    assert flat[0, 1, 0, 1] == view[0, 0, 0, 3] and flat[0, 2, 1, 0] == view[0, 0, 3, 0]
    with pytest.raises(ValueError, match="divisible"):
        kernel("ReorgYolo", 2, stride="3")(x)


@oracle
@pytest.mark.parametrize("softmax, mask, num, axis, end_axis", [
    (False, [0, 1], 6, 1, 3), (True, [], 2, 1, 3), (True, [], 2, 2, 3), (True, [], 2, 0, 1),
    (False, [1], 3, 1, 3)])
def test_region_yolo_against_openvino(tmp_path, softmax, mask, num, axis, end_axis):
    """(With fewer masked regions than input channels, the plugin reads the second image from
    the wrong place: the input is cut to the regions used.)"""
    import openvino.opset1 as o1
    from _ov_single_op import P, check
    x = X * 3 if softmax else X[:, :7 * len(mask)] * 3
    check(tmp_path, lambda d: o1.region_yolo(d, 4, 2, num, do_softmax=softmax, mask=mask,
                                             axis=axis, end_axis=end_axis, anchors=[1.0] * 12),
          [P(x)], rtol=1e-5, atol=1e-6)


@oracle
@pytest.mark.parametrize("shape, stride, dtype", [((2, 8, 4, 6), 2, np.float32),
                                                  ((1, 18, 6, 3), 3, np.int32),
                                                  ((1, 4, 2, 2), 1, np.float32)])
def test_reorg_yolo_against_openvino(tmp_path, shape, stride, dtype):
    import openvino.opset2 as o2
    from _ov_single_op import P, check
    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    check(tmp_path, lambda d: o2.reorg_yolo(d, [stride]), [P(x)])
