"""NonMaxSuppression-1/3/4/5/9: hand-computed cases (no OpenVINO) and differential tests against
OpenVINO's CPU plugin (``-m oracle``) on random boxes where no IoU or score sits on a threshold."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel


def kernel(version, n_in=5, **data):
    layer = Layer(id=1, name="nms", type="NonMaxSuppression", version=f"opset{version}",
                  data=data, inputs=tuple(Port(i, i) for i in range(n_in)),
                  outputs=(Port(n_in, 0),))
    return make_kernel(layer)[0]


def f32(*v):
    return np.array(v, np.float32)


# Boxes 0..2 overlap (IoU(0,1) = 0.5 exactly, IoU(0,2) = 1), box 3 is far away.
BOXES = np.array([[[0, 0, 1, 1], [0, 0, 1, 0.5], [1, 1, 0, 0], [0, 5, 1, 6]]], np.float32)
SCORES = np.array([[[0.9, 0.8, 0.7, 0.6]]], np.float32)
M10 = np.array(10, np.int64)


def test_hard_nms_equalities_follow_the_specification():
    fn = kernel(9, 6)
    idx, sc, n = fn(BOXES, SCORES, M10, f32(0.5), f32(0.6), f32(0))
    # box 1 (IoU exactly 0.5) is kept, box 2 (the same box with its corners swapped) is not,
    # box 3 (score exactly 0.6) is kept
    assert idx.tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 3]]
    assert n.tolist() == [3] and n.dtype == np.int64 and sc.dtype == np.float32
    np.testing.assert_allclose(sc[:, 2], [0.9, 0.8, 0.6])
    # iou_threshold 0: disjoint boxes (IoU 0) are all kept
    idx, _, _ = fn(BOXES, SCORES, M10, f32(0.0), f32(0.0), f32(0))
    assert idx[:, 2].tolist() == [0, 3]


def test_soft_nms_v9_decays_v5_removes_above_threshold():
    s9 = kernel(9, 6)(BOXES, SCORES, M10, f32(0.3), f32(0.0), f32(0.5))[1][:, 2]
    w = np.exp(-0.5 * np.array([0.25, 1.0]) / 0.5)            # IoU 0.5 and 1 with box 0
    # box 3: untouched 0.6 > box 1: 0.8 w0 = 0.623 > box 2: 0.7 w1 w(IoU(1, 2) = 0.5)
    np.testing.assert_allclose(s9, [0.9, 0.8 * w[0], 0.6, 0.7 * w[1] * w[0]], rtol=1e-6)
    s5 = kernel(5, 6)(BOXES, SCORES, M10, f32(0.3), f32(0.0), f32(0.5))[1][:, 2]
    np.testing.assert_allclose(s5, [0.9, 0.6], rtol=1e-6)


def test_static_versions_pad_with_minus_one():
    boxes = np.concatenate([BOXES, BOXES])
    scores = np.concatenate([SCORES, SCORES[:, :, ::-1]])          # batch 1 prefers box 3
    m = np.array(2, np.int32)
    v4 = kernel(4, output_type="i32")(boxes, scores, m, f32(0.4), f32(0.0))
    assert v4.dtype == np.int32 and v4.shape == (4, 3)           # min(4, 2) * 2 batches * 1 class
    # sorted across batches by score, ties by batch: batch 1 keeps boxes 3 (0.9) and 2 (0.8)
    assert v4.tolist() == [[0, 0, 0], [1, 0, 3], [1, 0, 2], [0, 0, 3]]
    v1 = kernel(1)(boxes, scores, m, f32(0.4), f32(0.0))
    assert v1.dtype == np.int64 and v1.shape == (2, 3)           # min(4, 2 * 1 class)
    assert v1.tolist() == [[0, 0, 0], [1, 0, 3]]
    v3 = kernel(3, sort_result_descending="false")(boxes, scores, m, f32(0.9), f32(0.65))
    assert v3.tolist() == [[0, 0, 0], [0, 0, 1]]
    assert kernel(3, sort_result_descending="false")(
        boxes, scores, m, f32(0.9), f32(0.95)).tolist() == [[-1, -1, -1]] * 2
    assert kernel(1, n_in=2)(boxes, scores).shape == (0, 3)      # max_output_boxes 0 by default


def test_center_encoding_and_unsorted_order():
    centre = np.array([[[0.5, 0.5, 1, 1], [0.5, 0.25, 1, 0.5], [5.5, 0.5, 1, 1]]], np.float32)
    scores = np.array([[[0.5, 0.9, 0.7], [0.1, 0.2, 0.3]]], np.float32)
    fn = kernel(5, 6, box_encoding="center", sort_result_descending="false")
    idx, _, n = fn(centre, scores, M10, f32(0.4), f32(0.0), f32(0))
    assert idx.tolist() == [[0, 0, 1], [0, 0, 2], [0, 1, 2], [0, 1, 1]]
    assert n.tolist() == [4]


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="scores"):
        kernel(9, 6)(BOXES, SCORES[:, :, :3], M10, f32(0.5), f32(0), f32(0))


# ---- against OpenVINO ------------------------------------------------------------------------


def random_case(seed, batches, classes, n, dtype=np.float32):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 4, (batches, n, 2))
    sizes = rng.uniform(0.5, 2.0, (batches, n, 2))
    b = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=-1)
    flip = rng.random((batches, n)) < 0.3                  # some boxes give the other diagonal
    b[flip] = b[flip][:, [2, 3, 0, 1]]
    scores = rng.permutation(batches * classes * n).reshape(batches, classes, n) / (
        batches * classes * n) + rng.uniform(0.001, 0.002)
    return b.astype(dtype), scores.astype(dtype)


oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


@oracle
@pytest.mark.parametrize("version", [5, 9])
@pytest.mark.parametrize("seed, batches, classes, n, m, iou_t, score_t, sigma, enc, sort, out", [
    (0, 1, 1, 10, 5, 0.45, 0.05, 0.0, "corner", True, "i64"),
    (1, 2, 3, 12, 4, 0.3, 0.2, 0.0, "corner", False, "i32"),
    (2, 3, 2, 20, 20, 0.6, 0.0, 0.0, "center", True, "i64"),
    (3, 2, 2, 15, 6, 0.5, 0.1, 0.5, "corner", True, "i32"),
    (4, 1, 3, 16, 8, 0.9, 0.3, 0.3, "corner", False, "i64"),
    (5, 2, 1, 9, 0, 0.5, 0.0, 0.0, "corner", True, "i64"),
    (6, 1, 2, 30, 100, 0.25, 0.015, 0.0, "center", False, "i64"),
])
def test_nms5_nms9_against_openvino(tmp_path, version, seed, batches, classes, n, m, iou_t,
                                    score_t, sigma, enc, sort, out):
    import openvino.opset5 as o5
    import openvino.opset9 as o9
    from _ov_single_op import C, P, check
    if version == 5 and sigma > 0:
        iou_t = 1.0       # Soft-NMS-5 cuts above iou_threshold, the plugin does not (unit test)
    ops = o5 if version == 5 else o9
    boxes, scores = random_case(seed, batches, classes, n)
    check(tmp_path, lambda b, s, mm, i, t, g: ops.non_max_suppression(
        b, s, mm, i, t, g, box_encoding=enc, sort_result_descending=sort, output_type=out),
        [P(boxes), P(scores), C(np.array(m, np.int32)), C(f32(iou_t)), C(f32(score_t)),
         C(f32(sigma))], version=f"opset{version}",
        only=(0, 1) if m == 0 else None)     # the plugin leaves valid_outputs unwritten then


@oracle
@pytest.mark.parametrize("sigma, iou_t", [(0.5, 1.0), (0.2, 1.5)])
def test_nms5_soft_without_iou_cut_against_openvino(tmp_path, sigma, iou_t):
    import openvino.opset5 as o5
    from _ov_single_op import C, P, check
    boxes, scores = random_case(7, 2, 2, 14)
    check(tmp_path, lambda b, s, mm, i, t, g: o5.non_max_suppression(b, s, mm, i, t, g),
          [P(boxes), P(scores), C(np.array(5, np.int64)), C(f32(iou_t)), C(f32(0.1)),
           C(f32(sigma))])


@oracle
@pytest.mark.parametrize("dtype", [np.float16])
def test_nms9_half_inputs_against_openvino(tmp_path, dtype):
    import openvino.opset9 as o9
    from _ov_single_op import C, P, check
    boxes, scores = random_case(8, 2, 2, 12, dtype)
    check(tmp_path, lambda b, s, mm, i, t: o9.non_max_suppression(b, s, mm, i, t),
          [P(boxes), P(scores), C(np.array(4, np.int64)), C(f32(0.5)), C(f32(0.05))],
          rtol=1e-3, atol=1e-3)


@oracle
@pytest.mark.parametrize("version", [1, 3, 4])
@pytest.mark.parametrize("seed, batches, classes, n, m, iou_t, score_t, enc, sort", [
    (10, 1, 1, 10, 4, 0.45, 0.05, "corner", True),
    (11, 2, 3, 12, 3, 0.3, 0.2, "center", False),
    (12, 3, 2, 8, 8, 0.6, 0.0, "corner", True),
])
def test_static_nms_against_openvino(tmp_path, version, seed, batches, classes, n, m, iou_t,
                                     score_t, enc, sort):
    """The plugin gives only the selected rows; loopdbg gives them, then -1 rows up to the
    specification's static shape (which is OpenVINO's own shape inference)."""
    import openvino.opset1 as o1
    import openvino.opset3 as o3
    import openvino.opset4 as o4
    from _ov_single_op import C, P, layer_from_ir, run_openvino
    ops = {1: o1, 3: o3, 4: o4}[version]
    boxes, scores = random_case(seed, batches, classes, n)
    mm, it, st = np.array(m, np.int64), np.array(iou_t, np.float32), np.array(score_t, np.float32)
    path = tmp_path / "op.xml"
    (expected,) = run_openvino(lambda b, s, a, i, t: ops.non_max_suppression(
        b, s, a, i, t, box_encoding=enc, sort_result_descending=sort),
        [P(boxes), P(scores), C(mm), C(it), C(st)], "cpu", path)
    fn, _ = make_kernel(layer_from_ir(path))
    got = fn(boxes, scores, mm, it, st)
    declared = {1: min(n, m * classes), 3: min(n, m * classes), 4: min(n, m) * batches * classes}
    assert got.shape == (declared[version], 3) and got.dtype == expected.dtype
    k = min(len(expected), declared[version])
    np.testing.assert_array_equal(got[:k], expected[:k])
    assert (got[k:] == -1).all()


# ---- MulticlassNms, MatrixNms ----------------------------------------------------------------


def multi_kernel(type_, version, n_in=2, **data):
    layer = Layer(id=1, name="nms", type=type_, version=f"opset{version}",
                  data={k: str(v) for k, v in data.items()},
                  inputs=tuple(Port(i, i) for i in range(n_in)),
                  outputs=tuple(Port(n_in + j, j) for j in range(3)))
    return make_kernel(layer)[0]


# [xmin, ymin, xmax, ymax]; IoU(0, 1) = 0.5 exactly, box 2 is far away
XY = np.array([[[0, 0, 1, 1], [0, 0, 0.5, 1], [5, 5, 6, 6]]], np.float32)
S2 = np.array([[[0.9, 0.8, 0.7], [0.1, 0.6, 0.65]]], np.float32)


def test_multiclass_nms_selects_per_class_then_orders():
    fn = multi_kernel("MulticlassNms", 9, iou_threshold=0.5, score_threshold=0.6,
                      sort_result_type="classid")
    out, idx, num = fn(XY, S2)
    # class 0 keeps all three (IoU 0.5 is not above the threshold); class 1 keeps 1 and 2
    assert out[:, 0].tolist() == [0, 0, 0, 1, 1]
    np.testing.assert_allclose(out[:, 1], [0.9, 0.8, 0.7, 0.65, 0.6])
    np.testing.assert_array_equal(out[0, 2:], XY[0, 0])
    assert idx[:, 0].tolist() == [0, 1, 2, 2, 1] and num.tolist() == [5]
    fn = multi_kernel("MulticlassNms", 9, iou_threshold=0.4, keep_top_k=3, background_class=1,
                      sort_result_type="score", output_type="i32")
    out, idx, num = fn(XY, S2)
    assert idx[:, 0].tolist() == [0, 2] and num.dtype == np.int32 and num.tolist() == [2]


def test_multiclass_nms_per_class_boxes_with_roisnum():
    boxes = np.concatenate([XY, XY + 0.25])[:, [0, 1, 2, 0, 1, 2]]        # 2 classes, 6 boxes
    scores = np.array([[0.9, 0.8, 0.7, 0.5, 0.4, 0.3], [0.2, 0.6, 0.65, 0.95, 0.1, 0.1]],
                      np.float32)
    fn = multi_kernel("MulticlassNms", 9, n_in=3, iou_threshold=0.45, score_threshold=0.3)
    _, idx, num = fn(boxes, scores, np.array([3, 3], np.int64))
    assert num.tolist() == [4, 3]
    # the index of box i of class k is i * 2 classes + k over the concatenated boxes: image 1's
    # class-1 box 0 (score 0.95) is box 3, index 7
    assert idx[:, 0].tolist() == [0, 4, 5, 3, 7, 6, 10]
    with pytest.raises(Exception, match="two inputs"):
        multi_kernel("MulticlassNms", 8, n_in=3)


def test_matrix_nms_decays_by_overlap():
    fn = multi_kernel("MatrixNms", 8, decay_function="linear", sort_result_type="score")
    out, idx, num = fn(XY, S2[:, :1])
    # box 1 decays by (1 - 0.5) / (1 - 0) = 0.5; box 2 does not overlap
    np.testing.assert_allclose(out[:, 1], [0.9, 0.7, 0.4], rtol=1e-6)
    assert idx[:, 0].tolist() == [0, 2, 1] and num.tolist() == [3]
    fn = multi_kernel("MatrixNms", 8, decay_function="gaussian", gaussian_sigma=2,
                      post_threshold=0.45)
    out, _, _ = fn(XY, S2[:, :1])
    np.testing.assert_allclose(out[:, 1], [0.9, 0.7, 0.8 * np.exp(-0.5)], rtol=1e-6)


def xyxy_case(seed, batches, classes, n):
    boxes, scores = random_case(seed, batches, classes, n)
    return np.concatenate([np.minimum(boxes[..., :2], boxes[..., 2:]),
                           np.maximum(boxes[..., :2], boxes[..., 2:])], -1), scores


MULTI_OPTIONS = [{}, {"keep_top_k": 5, "nms_top_k": 4, "background_class": 1},
                 {"normalized": False, "score_threshold": 0.3}]


@oracle
@pytest.mark.parametrize("sort", ["score", "classid", "none"])
@pytest.mark.parametrize("across", [False, True])
@pytest.mark.parametrize("options", range(len(MULTI_OPTIONS)))
@pytest.mark.parametrize("version", [8, 9])
def test_multiclass_nms_against_openvino(tmp_path, sort, across, options, version):
    import openvino.opset8 as o8
    import openvino.opset9 as o9
    from _ov_single_op import P, check
    boxes, scores = xyxy_case(3 + options, 2, 3, 15)
    attrs = {"sort_result_type": sort, "sort_result_across_batch": across, "iou_threshold": 0.45,
             "score_threshold": 0.1, "output_type": "i32" if across else "i64",
             "nms_eta": 0.9 if options == 2 else 1.0, **MULTI_OPTIONS[options]}
    ops = o8 if version == 8 else o9
    check(tmp_path, lambda b, s: ops.multiclass_nms(b, s, **attrs), [P(boxes), P(scores)])


@oracle
@pytest.mark.parametrize("counts", [[6, 9], [15, 0], [4, 5, 6]])
def test_multiclass_nms9_roisnum_against_openvino(tmp_path, counts):
    import openvino.opset9 as o9
    from _ov_single_op import P, check
    boxes, scores = xyxy_case(9, 3, 1, 15)
    check(tmp_path, lambda b, s, r: o9.multiclass_nms(b, s, r, iou_threshold=0.4,
                                                      score_threshold=0.05,
                                                      sort_result_type="classid"),
          [P(boxes), P(scores[:, 0]), P(np.array(counts, np.int32))])


@oracle
@pytest.mark.parametrize("sort", ["score", "classid", "none"])
@pytest.mark.parametrize("across", [False, True])
@pytest.mark.parametrize("options", range(len(MULTI_OPTIONS)))
@pytest.mark.parametrize("decay", ["linear", "gaussian"])
def test_matrix_nms_against_openvino(tmp_path, sort, across, options, decay):
    import openvino.opset8 as o8
    from _ov_single_op import P, layer_from_ir, run_openvino
    boxes, scores = xyxy_case(20 + options, 2, 3, 12)
    attrs = {"sort_result_type": sort, "sort_result_across_batch": across,
             "score_threshold": 0.1, "decay_function": decay, "gaussian_sigma": 1.5,
             "post_threshold": 0.2 if decay == "gaussian" else 0.0,
             **MULTI_OPTIONS[options]}
    path = tmp_path / "op.xml"
    expected = run_openvino(lambda b, s: o8.matrix_nms(b, s, **attrs), [P(boxes), P(scores)],
                            "cpu", path)
    got = make_kernel(layer_from_ir(path))[0](boxes, scores)
    rows, idx, num = expected
    if sort == "classid" and not across:     # OpenVINO leaves each image by score (see notes)
        image = np.repeat(np.arange(len(num)), num)
        order = np.lexsort((idx[:, 0], -rows[:, 1], rows[:, 0], image))
        rows, idx = rows[order], idx[order]
    np.testing.assert_allclose(got[0], rows, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], idx)
    np.testing.assert_array_equal(got[2], num)


# ---- NMSRotated ------------------------------------------------------------------------------


def test_rotated_iou_of_squares():
    from loopdbg.ops.nms_rotated import rotated_iou, vertices
    b = np.array([[0, 0, 2, 2, 0], [1, 0, 2, 2, 0], [0, 0, 2, 2, np.pi / 4], [9, 9, 1, 1, 0.3]],
                 np.float32)
    v = vertices(b, True)
    assert rotated_iou(v[0], v[1], 4, 4) == pytest.approx(2 / 6)
    # a square and itself turned by 45 degrees: the octagon, 8 (sqrt 2 - 1) of area 4 + 4 - it
    octagon = 8 * (np.sqrt(2) - 1)
    assert rotated_iou(v[0], v[2], 4, 4) == pytest.approx(octagon / (8 - octagon))
    assert rotated_iou(v[0], v[3], 4, 1) == 0


def test_nms_rotated_direction_of_angles():
    # a long box tilted towards the second one overlaps it more when turned clockwise on the
    # image (y down), the direction of a positive angle with clockwise=true
    boxes = np.array([[[0, 0, 4, 1, 0.7], [1.2, 1.0, 4, 1, 0.0]]], np.float32)
    scores = np.array([[[0.9, 0.8]]], np.float32)
    for clockwise, kept in (("true", 1), ("false", 2)):
        fn = multi_kernel("NMSRotated", 13, n_in=5, clockwise=clockwise)
        _, _, n = fn(boxes, scores, np.array(5), np.array(0.15, np.float32),
                     np.array(0, np.float32))
        assert n.tolist() == [kept]


@oracle
@pytest.mark.parametrize("clockwise", [True, False])
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("m, iou_t, out", [(5, 0.3, "i64"), (20, 0.1, "i32"), (3, 0.6, "i64")])
def test_nms_rotated_against_openvino(tmp_path, clockwise, sort, m, iou_t, out):
    import openvino.opset13 as o13
    from _ov_single_op import C, P, check
    rng = np.random.default_rng(m)
    n = 14
    boxes = np.concatenate([rng.uniform(0, 6, (2, n, 2)), rng.uniform(1, 3, (2, n, 2)),
                            rng.uniform(-1.5, 1.5, (2, n, 1))], -1).astype(np.float32)
    scores = (rng.permutation(4 * n).reshape(2, 2, n) / (4 * n) + 0.001).astype(np.float32)
    check(tmp_path, lambda b, s, mm, i, t: o13.nms_rotated(
        b, s, mm, i, t, sort_result_descending=sort, clockwise=clockwise, output_type=out),
        [P(boxes), P(scores), C(np.array(m, np.int32)), C(np.array(iou_t, np.float32)),
         C(np.array(0.1, np.float32))])
