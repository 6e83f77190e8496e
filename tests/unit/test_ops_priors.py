"""PriorBox-1/8 and PriorBoxClustered-1: hand-computed boxes (no OpenVINO) and differential tests
against OpenVINO's reference and CPU plugin (``-m oracle``)."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch
I64 = np.int64


def kernel(type_, version, **data):
    layer = Layer(id=1, name="pb", type=type_, version=f"opset{version}",
                  data={k: str(v) for k, v in data.items()},
                  inputs=(Port(0, 0), Port(1, 1)), outputs=(Port(2, 0),))
    return make_kernel(layer)[0]


def test_prior_box_square_max_and_ratio_boxes():
    fn = kernel("PriorBox", 8, min_size="4", max_size="16", aspect_ratio="4", flip="false",
                step="8", offset="0.5", variance="0.1,0.2,0.3,0.4")
    out = fn(np.array([1, 1], I64), np.array([16, 32], I64))     # one cell, centre (4, 4)
    assert out.shape == (2, 12) and out.dtype == np.float32
    boxes = out[0].reshape(3, 4) * [32, 16, 32, 16]
    np.testing.assert_allclose(boxes, [[2, 2, 6, 6],              # min 4: half 2
                                       [0, 0, 8, 8],              # sqrt(4 * 16) = 8
                                       [0, 3, 8, 5]], rtol=1e-6)  # ratio 4: 8 wide, 2 high
    np.testing.assert_allclose(out[1], [0.1, 0.2, 0.3, 0.4] * 3, rtol=1e-6)
    # the other order puts the max box last; clip keeps boxes inside the image
    fn = kernel("PriorBox", 8, min_size="4", max_size="16", aspect_ratio="4", flip="false",
                step="8", offset="0.5", min_max_aspect_ratios_order="false", clip="true",
                variance="0.5")
    out = fn(np.array([1, 1], I64), np.array([16, 32], I64))
    np.testing.assert_allclose(out[0].reshape(3, 4)[2] * [32, 16, 32, 16], [0, 0, 8, 8])
    assert (out[1] == 0.5).all()


def test_prior_box_grid_without_step_and_default_variance():
    fn = kernel("PriorBox", 1, min_size="2", offset="0.5", flip="true", aspect_ratio="2")
    out = fn(np.array([2, 3], I64), np.array([4, 6], I64))      # cells 2 x 2 px
    assert out.shape == (2, 2 * 3 * 3 * 4)
    first = out[0].reshape(2, 3, 3, 4)[1, 2, 0] * [6, 4, 6, 4]     # cell (1, 2): centre (5, 3)
    np.testing.assert_allclose(first, [4, 2, 6, 4], rtol=1e-6)
    np.testing.assert_allclose(out[1], 0.1)


def test_prior_box_shape_rule_counts_priors():
    attrs = {"min_size": "4,8", "max_size": "6,12", "aspect_ratio": "2,3", "flip": "true",
             "offset": "0.5"}
    (info,) = infer("PriorBox", [TensorInfo("i64", (2,)), TensorInfo("i64", (2,))], attrs,
                    [np.array([5, 5]), None], 1)
    assert info == TensorInfo("f32", (2, 4 * 25 * (5 * 2 + 2)))


def test_prior_box_clustered_boxes():
    fn = kernel("PriorBoxClustered", 1, width="2,8", height="4,2", offset="0.5", clip="false",
                variance="0.1")
    out = fn(np.array([1, 2], I64), np.array([8, 16], I64))      # steps 8 x 8
    boxes = out[0].reshape(1, 2, 2, 4) * [16, 8, 16, 8]
    np.testing.assert_allclose(boxes[0, 1], [[11, 2, 13, 6], [8, 3, 16, 5]])
    assert (out[1] == np.float32(0.1)).all()


def test_bad_attributes_are_refused():
    from loopdbg.errors import UnsupportedOperation
    with pytest.raises(UnsupportedOperation, match="variance"):
        kernel("PriorBox", 8, min_size="4", offset="0.5", variance="1,2")
    with pytest.raises(UnsupportedOperation, match="width"):
        kernel("PriorBoxClustered", 1, width="1,2", height="1", offset="0.5")


PRIOR_CASES = [
    {"min_size": [16.0], "max_size": [38.46], "aspect_ratio": [2.0], "flip": True,
     "clip": False, "step": 16.0, "offset": 0.5, "variance": [0.1, 0.1, 0.2, 0.2]},
    {"min_size": [10.0, 20.0], "max_size": [15.0, 30.0], "aspect_ratio": [2.0, 3.0, 2.0],
     "flip": False, "clip": True, "step": 0.0, "offset": 0.5, "variance": [0.2]},
    {"min_size": [4.0, 8.0], "aspect_ratio": [2.0, 0.5], "flip": True, "clip": False,
     "step": 8.0, "offset": 0.25, "scale_all_sizes": False},
    {"fixed_size": [32.0], "density": [2.0], "aspect_ratio": [2.0], "offset": 0.5,
     "step": 16.0},
    {"fixed_size": [32.0, 16.0], "fixed_ratio": [1.0, 2.0], "density": [2.0, 1.0],
     "offset": 0.5, "step": 16.0},
    {"fixed_size": [20.0], "density": [3.0], "offset": 0.5, "step": 0.0,
     "variance": [0.1, 0.1, 0.2, 0.2]},
]


@oracle
@pytest.mark.parametrize("case", range(len(PRIOR_CASES)))
@pytest.mark.parametrize("version, order", [(1, None), (8, True), (8, False)])
@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_prior_box_against_openvino(tmp_path, case, version, order, backend):
    import openvino.opset1 as o1
    import openvino.opset8 as o8
    from _ov_single_op import C, P, check
    attrs = dict(PRIOR_CASES[case])
    if order is not None:
        attrs["min_max_aspect_ratios_order"] = order
    ops = o1 if version == 1 else o8
    t = np.int32 if case % 2 else I64
    check(tmp_path, lambda s, im: ops.prior_box(s, im, attrs),
          [C(np.array([3, 4], t)), P(np.array([64, 80], t))],
          backend=backend, rtol=0, atol=0)


@oracle
@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_prior_box_mxnet_step_against_openvino(tmp_path, backend):
    """scale_all_sizes false, step -1: sizes relative to the image (the Python factory refuses
    step -1, so the node is made by the node factory)."""
    from _ov_single_op import C, P, check
    from openvino.utils.node_factory import NodeFactory
    attrs = {"min_size": [0.1, 0.25], "max_size": [], "aspect_ratio": [2.0], "flip": True,
             "clip": False, "step": -1.0, "offset": 0.5, "variance": [], "density": [],
             "fixed_ratio": [], "fixed_size": [], "scale_all_sizes": False,
             "min_max_aspect_ratios_order": True}
    check(tmp_path, lambda s, im: NodeFactory("opset8").create("PriorBox", [s, im], attrs),
          [C(np.array([4, 5], I64)), P(np.array([40, 50], I64))], backend=backend)


CLUSTERED = [
    {"widths": [2.0, 8.0, 5.5], "heights": [4.0, 2.0, 5.5], "offset": 0.5, "clip": False,
     "variance": [0.1]},
    {"widths": [30.0, 12.0], "heights": [10.0, 40.0], "offset": 0.25, "clip": True,
     "step_widths": 12.0, "step_heights": 6.0, "variance": [0.1, 0.2, 0.3, 0.4]},
    {"widths": [30.0], "heights": [10.0], "offset": 0.5, "clip": True, "step": 9.0},
]


@oracle
@pytest.mark.parametrize("case", range(len(CLUSTERED)))
@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_prior_box_clustered_against_openvino(tmp_path, case, backend):
    import openvino.opset1 as o1
    from _ov_single_op import C, P, check
    check(tmp_path, lambda s, im: o1.prior_box_clustered(s, im, CLUSTERED[case]),
          [C(np.array([3, 5], I64)), P(np.array([50, 70], I64))], backend=backend,
          rtol=0, atol=0)
