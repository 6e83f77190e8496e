"""The ExperimentalDetectron* operations: hand-computed values (no OpenVINO) and differential
tests against OpenVINO's CPU plugin (``-m oracle``)."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel

oracle = pytest.mark.oracle


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
