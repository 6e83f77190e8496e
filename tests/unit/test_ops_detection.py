"""Detection heads: RegionYolo-1, ReorgYolo, DetectionOutput-1/8, Proposal-1/4,
GenerateProposals-9: hand-computed values (no OpenVINO) and differential tests against OpenVINO
(``-m oracle``)."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


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


# ---- DetectionOutput -------------------------------------------------------------------------


def ssd_case(seed, n=2, priors=10, classes=4, share=True, normalized=True, var_in_target=False,
             pb=1, arm=False):
    rng = np.random.default_rng(seed)
    lc = 1 if share else classes
    loc = (rng.standard_normal((n, priors * lc * 4)) * 0.3).astype(np.float32)
    conf = rng.uniform(0, 1, (n, priors * classes)).astype(np.float32)
    c, wh = rng.uniform(0, 0.8, (pb, priors, 2)), rng.uniform(0.1, 0.4, (pb, priors, 2))
    boxes = np.concatenate([c, c + wh], -1)
    size = 4 if normalized else 5
    if not normalized:
        boxes = np.concatenate([np.zeros((pb, priors, 1)), boxes * [300, 200, 300, 200]], -1)
    rows = [boxes.reshape(pb, 1, priors * size)]
    if not var_in_target:
        v = np.tile(np.array([0.1, 0.1, 0.2, 0.2]), (pb, 1, priors))
        rows.append(np.concatenate([v, np.zeros((pb, 1, priors * (size - 4)))], 2))
    inputs = [loc, conf, np.concatenate(rows, 1).astype(np.float32)]
    if arm:
        inputs += [rng.uniform(0, 1, (n, priors * 2)).astype(np.float32),
                   (rng.standard_normal((n, priors * lc * 4)) * 0.3).astype(np.float32)]
    return inputs, classes


SSD = {"keep_top_k": [5], "nms_threshold": 0.45, "background_label_id": 0, "top_k": 6,
       "confidence_threshold": 0.2, "code_type": "caffe.PriorBoxParameter.CENTER_SIZE",
       "share_location": True, "normalized": True}
SSD_VARIANTS = [
    ({}, {}),
    ({"code_type": "caffe.PriorBoxParameter.CORNER"}, {}),
    ({"share_location": False, "background_label_id": -1}, {"share": False}),
    ({"keep_top_k": [-1], "top_k": -1, "clip_after_nms": True}, {}),
    ({"keep_top_k": [-1], "top_k": 3, "clip_before_nms": True}, {}),
    ({"decrease_label_id": True}, {}),
    ({"normalized": False, "input_height": 200, "input_width": 300}, {"normalized": False}),
    ({"variance_encoded_in_target": True}, {"var_in_target": True}),
    ({"objectness_score": 0.4}, {"arm": True}),
    ({"objectness_score": 0.4, "normalized": False, "input_height": 200, "input_width": 300},
     {"arm": True, "normalized": False, "pb": 2}),
    ({}, {"pb": 2}),
]


def ir_data(attrs):
    out = {}
    for k, v in attrs.items():
        out[k] = (",".join(str(x) for x in v) if isinstance(v, list)
                  else str(v).lower() if isinstance(v, bool) else str(v))
    return out


def test_detection_output_decodes_and_ends_with_minus_one():
    # one image, two priors, two classes (0 = background): corner code with variances 1
    loc = np.array([[0.1, 0, 0, 0, 0, 0, 0, 0]], np.float32)
    conf = np.array([[0.1, 0.9, 0.2, 0.6]], np.float32)
    priors = np.array([[[0, 0, 0.5, 0.5, 0.5, 0.5, 1, 1], [1] * 8]], np.float32)
    corner = ir_data({**SSD, "keep_top_k": [3], "code_type": "caffe.PriorBoxParameter.CORNER"})
    fn = kernel("DetectionOutput", 8, n_in=3, **corner)
    out = fn(loc, conf, priors)
    assert out.shape == (1, 1, 3, 7)
    np.testing.assert_allclose(out[0, 0, :2], [[0, 1, 0.9, 0.1, 0, 0.5, 0.5],
                                               [0, 1, 0.6, 0.5, 0.5, 1, 1]], rtol=1e-6)
    assert out[0, 0, 2].tolist() == [-1, 0, 0, 0, 0, 0, 0]
    v1 = kernel("DetectionOutput", 1, n_in=3, num_classes="2", **corner)
    np.testing.assert_array_equal(v1(loc, conf, priors), out)
    with pytest.raises(ValueError, match="priors"):
        fn(loc, conf, priors[:, :, :7])


@oracle
@pytest.mark.parametrize("variant", range(len(SSD_VARIANTS)))
@pytest.mark.parametrize("version", [1, 8])
def test_detection_output_against_openvino(tmp_path, variant, version):
    import openvino.opset1 as o1
    import openvino.opset8 as o8
    from _ov_single_op import P, check
    extra, shape = SSD_VARIANTS[variant]
    inputs, classes = ssd_case(variant, **shape)
    attrs = {**SSD, **extra}
    if version == 1:
        attrs["num_classes"] = classes
    ops = o1 if version == 1 else o8

    def build(*nodes):
        return ops.detection_output(nodes[0], nodes[1], nodes[2], attrs, *nodes[3:])
    check(tmp_path, build, [P(x) for x in inputs])


# ---- Proposal --------------------------------------------------------------------------------

PROPOSAL = {"base_size": 16, "pre_nms_topn": 40, "post_nms_topn": 12, "nms_thresh": 0.6,
            "feat_stride": 16, "min_size": 1, "ratio": [0.5, 1.0, 2.0], "scale": [2.0, 4.0],
            "clip_before_nms": True, "clip_after_nms": False, "normalize": False,
            "box_size_scale": 1.0, "box_coordinate_scale": 1.0, "framework": ""}
PROPOSAL_VARIANTS = [{}, {"framework": "tensorflow"},
                     {"clip_after_nms": True, "normalize": True, "clip_before_nms": False},
                     {"post_nms_topn": 100, "pre_nms_topn": 1000, "nms_thresh": 0.3},
                     {"box_size_scale": 2.0, "box_coordinate_scale": 5.0, "min_size": 8}]


def proposal_case(seed, n=2, anchors=6, h=5, w=6):
    rng = np.random.default_rng(seed)
    return (rng.uniform(0, 1, (n, 2 * anchors, h, w)).astype(np.float32),
            (rng.standard_normal((n, 4 * anchors, h, w)) * 0.2).astype(np.float32))


def test_proposal_anchors_and_padding():
    from loopdbg.ops.proposal import Attrs, anchors
    layer = Layer(id=1, name="p", type="Proposal", version="opset4",
                  data=ir_data({**PROPOSAL, "ratio": [1.0, 0.5], "scale": [1.0]}))
    # Caffe: base 16 -> centre 7.5, ratio 0.5: width round(sqrt(512)) = 23 and height
    # round(11.5) = 12 pixels, so 7.5 -/+ 11 and 7.5 -/+ 5.5
    np.testing.assert_allclose(anchors(Attrs(layer)), [[0, 0, 15, 15], [-3.5, 2, 18.5, 13]])
    fn = kernel("Proposal", 4, n_in=3, n_out=2,
                **ir_data({**PROPOSAL, "ratio": [1.0], "scale": [1.0], "post_nms_topn": 4}))
    probs = np.array([[[[0.1]], [[0.9]]]], np.float32)       # one cell, one anchor
    rois, scores = fn(probs, np.zeros((1, 4, 1, 1), np.float32),
                      np.array([100, 100, 1], np.float32))
    # zero deltas: Caffe's centre 0 + 16 / 2 and width 16 give [0, 16], not the anchor's [0, 15]
    np.testing.assert_allclose(rois, [[0, 0, 0, 16, 16], [-1, 0, 0, 0, 0], [0] * 5, [0] * 5])
    np.testing.assert_allclose(scores, [0.9, 0, 0, 0])


@oracle
@pytest.mark.parametrize("variant", range(len(PROPOSAL_VARIANTS)))
@pytest.mark.parametrize("info", [[80, 96, 1.0], [80, 96, 1.5, 0.5]])
@pytest.mark.parametrize("version", [1, 4])
def test_proposal_against_openvino(tmp_path, variant, info, version):
    import openvino.opset1 as o1
    import openvino.opset4 as o4
    from _ov_single_op import P, layer_from_ir, run_openvino
    attrs = {**PROPOSAL, **PROPOSAL_VARIANTS[variant]}
    for k in ("base_size", "pre_nms_topn", "post_nms_topn", "feat_stride", "min_size"):
        attrs[k] = np.uint32(attrs[k])
    probs, deltas = proposal_case(variant)
    image = np.array(info, np.float32)
    ops = o1 if version == 1 else o4
    path = tmp_path / "op.xml"
    expected = run_openvino(lambda p, d, im: ops.proposal(p, d, im, attrs),
                            [P(probs), P(deltas), P(image)], "cpu", path)
    got = make_kernel(layer_from_ir(path))[0](probs, deltas, image)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-4)
    if version == 4:                       # the plugin leaves unused score rows unwritten
        used = np.ones(len(got[0]), bool)
        for b in range(2):
            rows = got[0][b * int(attrs["post_nms_topn"]):(b + 1) * int(attrs["post_nms_topn"])]
            stop = np.flatnonzero(rows[:, 0] == -1)
            if stop.size:
                used[b * len(rows) + stop[0]:(b + 1) * len(rows)] = False
        np.testing.assert_allclose(got[1][used], expected[1][used], rtol=1e-5)


# ---- GenerateProposals -----------------------------------------------------------------------


def proposals_case(seed, n=2, anchors=3, h=4, w=5, image=(60, 80)):
    rng = np.random.default_rng(seed)
    c, wh = rng.uniform(0, 70, (h, w, anchors, 2)), rng.uniform(4, 30, (h, w, anchors, 2))
    return (np.array([[image[0], image[1], 1.0]] * n, np.float32),
            np.concatenate([c, c + wh], -1).astype(np.float32),
            (rng.standard_normal((n, 4 * anchors, h, w)) * 0.3).astype(np.float32),
            rng.uniform(0, 1, (n, anchors, h, w)).astype(np.float32))


def test_generate_proposals_one_anchor_and_eta():
    from loopdbg.ops.generate_proposals import nms
    fn = kernel("GenerateProposals", 9, n_in=4, n_out=3, min_size="1", nms_threshold="0.5",
                pre_nms_count="10", post_nms_count="10", normalized="false")
    anchors = np.array([[[[10, 10, 19, 29]]]], np.float32)         # 10 x 20 pixels
    rois, scores, num = fn(np.array([[100, 100, 1]], np.float32), anchors,
                           np.zeros((1, 4, 1, 1), np.float32), np.full((1, 1, 1, 1), 0.7,
                                                                       np.float32))
    np.testing.assert_allclose(rois, [[10, 10, 19, 29]])
    assert scores.tolist() == pytest.approx([0.7]) and num.tolist() == [1]
    # adaptive NMS: the threshold 0.7 becomes 0.35 after the first box, so the third box
    # (IoU 0.4 with the first, 0 with the second) is dropped only with eta
    boxes = np.array([[0, 0, 9, 9], [20, 0, 29, 9], [0, 0, 9, 3]], np.float32)
    alive = np.ones(3, bool)
    assert nms(boxes, alive, 0.7, 1.0, 10, np.float32(1)) == [0, 1, 2]
    assert nms(boxes, alive, 0.7, 0.5, 10, np.float32(1)) == [0, 1]


@oracle
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("min_size, pre, post, threshold", [
    (1.0, 30, 10, 0.5), (12.0, 100, 100, 0.3), (0.0, 5, 3, 0.7)])
def test_generate_proposals_against_openvino(tmp_path, normalized, min_size, pre, post,
                                            threshold):
    import openvino.opset9 as o9
    from _ov_single_op import P, check
    info, anchors, deltas, scores = proposals_case(int(min_size) + pre)
    if normalized:
        anchors, min_size = anchors / 100, min_size / 100
        info[:, :2] = 1
    check(tmp_path, lambda i, a, d, s: o9.generate_proposals(
        i, a, d, s, min_size, threshold, pre, post, normalized=normalized,
        roi_num_type="i32" if normalized else "i64"),
        [P(info), P(anchors), P(deltas), P(scores)])


@oracle
def test_half_precision_heads_against_openvino(tmp_path):
    import openvino.opset1 as o1
    import openvino.opset8 as o8
    from _ov_single_op import P, check
    check(tmp_path, lambda d: o1.region_yolo(d, 4, 2, 2, do_softmax=True, mask=[], axis=1,
                                             end_axis=3, anchors=[1.0] * 4),
          [P((X * 3).astype(np.float16))], rtol=1e-2, atol=1e-2)
    inputs, _ = ssd_case(1)
    (tmp_path / "ssd").mkdir()
    check(tmp_path / "ssd", lambda l, c, p: o8.detection_output(l, c, p, SSD),
          [P(x.astype(np.float16)) for x in inputs], rtol=1e-2, atol=1e-2)


def test_shape_rules_declare_outputs():
    from loopdbg.ops.shape_rules import TensorInfo as T
    from loopdbg.ops.shape_rules import infer
    cases = [
        ("DetectionOutput", [T("f32", (2, 40)), T("f32", (2, 40)), T("f32", (1, 2, 40))],
         {"keep_top_k": "5", "nms_threshold": "0.4"}, 1, [T("f32", (1, 1, 10, 7))]),
        ("RegionYolo", [T("f32", (1, 125, 13, 13))],
         {"coords": "4", "classes": "20", "num": "5", "axis": "1", "end_axis": "3"}, 1,
         [T("f32", (1, 21125))]),
        ("RegionYolo", [T("f32", (1, 255, 13, 13))],
         {"coords": "4", "classes": "80", "num": "9", "axis": "1", "end_axis": "3",
          "do_softmax": "false", "mask": "0,1,2"}, 1, [T("f32", (1, 255, 13, 13))]),
        ("ReorgYolo", [T("f32", (1, 64, 26, 26))], {"stride": "2"}, 1,
         [T("f32", (1, 256, 13, 13))]),
        ("Proposal", [T("f32", (2, 12, 5, 6)), T("f32", (2, 24, 5, 6)), T("f32", (3,))],
         {**ir_data(PROPOSAL), "ratio": "1", "scale": "1"}, 2,
         [T("f32", (24, 5)), T("f32", (24,))]),
        ("GenerateProposals", [T("f32", (2, 3)), T("f32", (4, 5, 3, 4)),
                               T("f32", (2, 12, 4, 5)), T("f32", (2, 3, 4, 5))],
         {"min_size": "1", "nms_threshold": "0.5", "pre_nms_count": "9",
          "post_nms_count": "3", "roi_num_type": "i32"}, 3,
         [T("f32", (-1, 4)), T("f32", (-1,)), T("i32", (2,))]),
    ]
    for type_, ins, attrs, n_out, expected in cases:
        assert infer(type_, ins, attrs, [None] * len(ins), n_out) == expected, type_
