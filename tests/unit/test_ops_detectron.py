"""The ExperimentalDetectron* operations: hand-computed values (no OpenVINO) and differential
tests against OpenVINO's CPU plugin (``-m oracle``)."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


def kernel(type_, n_in, n_out, **data):
    layer = Layer(id=1, name="ed", type=type_, version="opset6",
                  data={k: str(v) for k, v in data.items()},
                  inputs=tuple(Port(i, i) for i in range(n_in)),
                  outputs=tuple(Port(n_in + j, j) for j in range(n_out)))
    return make_kernel(layer)[0]


def create(type_, nodes, attrs):
    from openvino.utils.node_factory import NodeFactory
    return NodeFactory("opset6").create(type_, list(nodes), attrs)


# ---- GenerateProposalsSingleImage ------------------------------------------------------------

GPSI = "ExperimentalDetectronGenerateProposalsSingleImage"


def single_image_case(seed, anchors=3, h=4, w=5):
    rng = np.random.default_rng(seed)
    c, wh = rng.uniform(0, 70, (h * w * anchors, 2)), rng.uniform(4, 30, (h * w * anchors, 2))
    return (np.array([60, 80, 1.0], np.float32),
            np.concatenate([c, c + wh], -1).astype(np.float32),
            (rng.standard_normal((4 * anchors, h, w)) * 0.3).astype(np.float32),
            rng.uniform(0, 1, (anchors, h, w)).astype(np.float32))


def test_single_image_small_boxes_score_zero_and_rows_are_padded():
    fn = kernel(GPSI, 4, 2, min_size="15", nms_threshold="0.7", pre_nms_count="10",
                post_nms_count="3")
    anchors = np.array([[0, 0, 9, 9], [30, 30, 59, 59]], np.float32)   # 10 and 30 pixels wide
    rois, scores = fn(np.array([100, 100, 1], np.float32), anchors,
                      np.zeros((4, 1, 2), np.float32).reshape(4, 1, 2),
                      np.array([[[0.9, 0.5]]], np.float32).reshape(1, 1, 2))
    np.testing.assert_allclose(rois, [[30, 30, 59, 59], [0, 0, 9, 9], [0, 0, 0, 0]])
    np.testing.assert_allclose(scores, [0.5, 0, 0])


@oracle
@pytest.mark.parametrize("min_size, pre, post, threshold", [
    (1.0, 30, 10, 0.5), (0.0, 5, 3, 0.7), (2.0, 60, 60, 0.3), (12.0, 100, 100, 0.3)])
def test_single_image_against_openvino(tmp_path, min_size, pre, post, threshold):
    """(Small boxes all score 0: their order is std::partial_sort's, so only the boxes with a
    positive score are compared.)"""
    from _ov_single_op import P, layer_from_ir, run_openvino
    inputs = single_image_case(int(min_size) + pre)
    attrs = {"min_size": min_size, "nms_threshold": threshold, "pre_nms_count": pre,
             "post_nms_count": post}
    path = tmp_path / "op.xml"
    rois, scores = run_openvino(lambda *n: create(GPSI, n, attrs), [P(x) for x in inputs],
                                "cpu", path)
    got = make_kernel(layer_from_ir(path))[0](*inputs)
    assert got[0].shape == rois.shape and got[1].shape == scores.shape
    k = int((scores > 0).sum())
    assert int((got[1] > 0).sum()) == k
    np.testing.assert_allclose(got[0][:k], rois[:k], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[1][:k], scores[:k], rtol=1e-6)


# ---- DetectionOutput -------------------------------------------------------------------------

EDO = "ExperimentalDetectronDetectionOutput"
EDO_ATTRS = {"score_threshold": 0.3, "nms_threshold": 0.5, "max_delta_log_wh": 2.0,
             "num_classes": 4, "post_nms_count": 5, "max_detections_per_image": 10,
             "class_agnostic_box_regression": False, "deltas_weights": [10.0, 10.0, 5.0, 5.0]}


def edo_case(seed, n=20, classes=4):
    rng = np.random.default_rng(seed)
    c, wh = rng.uniform(0, 80, (n, 2)), rng.uniform(5, 40, (n, 2))
    rois = np.concatenate([c, c + wh], 1).astype(np.float32)
    rois[3] = [10, 10, 5, 20]                                  # no area: skipped
    return (rois, (rng.standard_normal((n, 4 * classes)) * 0.5).astype(np.float32),
            rng.uniform(0, 1, (n, classes)).astype(np.float32),
            np.array([[100, 120, 1]], np.float32))


def ir(attrs):
    return {k: (",".join(str(x) for x in v) if isinstance(v, list) else str(v).lower()
                if isinstance(v, bool) else str(v)) for k, v in attrs.items()}


def test_detection_output_refines_per_class_and_skips_background():
    fn = kernel(EDO, 4, 3, **ir({**EDO_ATTRS, "num_classes": 2, "max_detections_per_image": 3,
                                 "deltas_weights": [1.0, 1.0, 1.0, 1.0]}))
    rois = np.array([[10, 10, 19, 29], [50, 50, 40, 60]], np.float32)
    deltas = np.zeros((2, 8), np.float32)
    deltas[0, 4] = 0.5                                          # class 1: move right by 5 px
    scores = np.array([[0.9, 0.8], [0.1, 0.95]], np.float32)   # box 1 has no area
    boxes, classes, sc = fn(rois, deltas, scores, np.array([[100, 100, 1]], np.float32))
    np.testing.assert_allclose(boxes, [[15, 10, 24, 29], [0, 0, 0, 0], [0, 0, 0, 0]])
    assert classes.dtype == np.int32 and classes.tolist() == [1, 0, 0]
    np.testing.assert_allclose(sc, [0.8, 0, 0])


@oracle
@pytest.mark.parametrize("extra", [
    {}, {"max_detections_per_image": 30, "post_nms_count": 100},
    {"class_agnostic_box_regression": True},
    {"score_threshold": 0.05, "nms_threshold": 0.3, "max_delta_log_wh": 0.5,
     "max_detections_per_image": 20}, {"max_detections_per_image": 25}])
def test_detection_output_against_openvino(tmp_path, extra):
    from _ov_single_op import P, check
    attrs = {**EDO_ATTRS, **extra}
    check(tmp_path, lambda *n: create(EDO, n, attrs), [P(x) for x in edo_case(len(extra))])


# ---- PriorGridGenerator, ROIFeatureExtractor, TopKROIs ---------------------------------------

GRID = "ExperimentalDetectronPriorGridGenerator"


def test_prior_grid_shifts_priors_to_cell_centres():
    fn = kernel(GRID, 3, 1, flatten="false", stride_x="8", stride_y="4")
    out = fn(np.array([[-1, -2, 1, 2]], np.float32), np.zeros((1, 1, 2, 3)),
             np.zeros((1, 3, 8, 24)))
    assert out.shape == (2, 3, 1, 4)
    np.testing.assert_allclose(out[1, 2, 0], [-1 + 20, -2 + 6, 1 + 20, 2 + 6])


@oracle
@pytest.mark.parametrize("attrs", [
    {"flatten": True, "h": 0, "w": 0, "stride_x": 0.0, "stride_y": 0.0},
    {"flatten": False, "h": 0, "w": 0, "stride_x": 8.0, "stride_y": 16.0},
    {"flatten": True, "h": 0, "w": 6, "stride_x": 0.0, "stride_y": 4.0}])
def test_prior_grid_against_openvino(tmp_path, attrs):
    from _ov_single_op import P, check
    rng = np.random.default_rng(2)
    check(tmp_path, lambda *n: create(GRID, n, attrs),
          [P(rng.uniform(-10, 10, (3, 4)).astype(np.float32)),
           P(np.zeros((1, 2, 4, 5), np.float32)), P(np.zeros((1, 3, 64, 100), np.float32))])


RFE = "ExperimentalDetectronROIFeatureExtractor"


def test_roi_features_pick_the_pyramid_level_by_size():
    maps = [np.full((1, 1, 8, 8), v, np.float32) for v in (1, 2, 3)]
    fn = kernel(RFE, 4, 2, output_size="2", sampling_ratio="1", pyramid_scales="4,8,16")
    rois = np.array([[0, 0, 20, 20], [0, 0, 150, 150], [0, 0, 400, 400], [5, 5, 5, 9]],
                    np.float32)
    feats, boxes = fn(rois, *maps)
    # sqrt(area) 20, 150, 400 -> levels floor(2 + log2(s / 224)) = -2, 1, 2, clamped to 0, 1, 2
    np.testing.assert_array_equal(feats[:, 0, 0, 0], [1, 2, 3, 0])
    np.testing.assert_array_equal(boxes, rois)


@oracle
@pytest.mark.parametrize("size, ratio, aligned", [(3, 2, False), (2, 0, True), (4, 1, True)])
def test_roi_features_against_openvino(tmp_path, size, ratio, aligned):
    from _ov_single_op import P, check
    rng = np.random.default_rng(size)
    maps = [rng.standard_normal((1, 3, s, s)).astype(np.float32) for s in (32, 16, 8, 4)]
    corners = rng.uniform(0, 100, (10, 4))
    boxes = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]),
                            np.maximum(corners[:, :2], corners[:, 2:])], 1)
    boxes = np.concatenate([boxes, [[10, 10, 10, 20], [0, 0, 120, 120], [5, 5, 400, 300]]])
    attrs = {"output_size": size, "sampling_ratio": ratio, "pyramid_scales": [4, 8, 16, 32],
             "aligned": aligned}
    check(tmp_path, lambda *n: create(RFE, n, attrs),
          [P(boxes.astype(np.float32))] + [P(m) for m in maps])


TOPK = "ExperimentalDetectronTopKROIs"


def test_top_rois_by_probability_and_padding():
    fn = kernel(TOPK, 2, 1, max_rois="3")
    rois = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = fn(rois, np.array([0.2, 0.7], np.float32))
    np.testing.assert_array_equal(out, [rois[1], rois[0], [0, 0, 0, 0]])


@oracle
@pytest.mark.parametrize("max_rois", [1, 5, 12])
def test_top_rois_against_openvino(tmp_path, max_rois):
    from _ov_single_op import P, check
    rng = np.random.default_rng(max_rois)
    check(tmp_path, lambda *n: create(TOPK, n, {"max_rois": max_rois}),
          [P(rng.uniform(0, 50, (12, 4)).astype(np.float32)),
           P(rng.uniform(0, 1, 12).astype(np.float32))])
