"""MatrixNms-8 and MulticlassNms-8/9: PaddlePaddle's multi-class suppressions, with outputs
``[selected, 6]`` rows ``[class, score, xmin, ymin, xmax, ymax]``, the indices of the selected
boxes in the flattened ``boxes`` (``[selected, 1]``) and the count per image.

Per image, each class other than ``background_class`` keeps at most ``nms_top_k`` candidates (by
score, ties by box index); the selected boxes of all classes are ordered by score (ties: class,
box) and cut to ``keep_top_k``; ``sort_result_type="classid"`` then orders them by class (ties:
score, box), and ``sort_result_across_batch`` sorts all images' boxes together by score or class
(ties: image, class / score, box). ``normalized=false`` counts a box's edges as pixels (+1 to
each side's length). Computation is float32.

MulticlassNms: greedy hard suppression, a box is removed when its IoU with a selected box exceeds
the (adaptive) threshold, kept while its score is at least ``score_threshold`` (as specified;
OpenVINO's CPU plugin and reference suppress at IoU equal to the threshold too); ``nms_eta < 1``
lowers the threshold after each selection while it is above 0.5. Version 9 also takes the
three-input form (per-class boxes ``[classes, boxes, 4]``, scores ``[classes, boxes]`` and the
number of boxes of each image), where a selected index is ``box * classes + class`` over the
concatenated boxes, as OpenVINO computes it.

MatrixNms: candidates with a score above ``score_threshold``; each candidate's score is multiplied
by the smallest decay over the better-scored candidates (linear ``(1 - iou) / (1 - max_iou)`` or
gaussian ``exp((max_iou² - iou²) * gaussian_sigma)``, ``max_iou`` being that better box's own
largest IoU with the boxes above it) and kept when above ``post_threshold``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, choice, flag, float_attr, index_dtype, int_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


def _areas(b: np.ndarray, norm) -> np.ndarray:
    return (b[:, 3] - b[:, 1] + norm) * (b[:, 2] - b[:, 0] + norm)


def _iou_multiclass(one, others, a_one, a_others, norm):
    h = np.maximum(np.minimum(one[3], others[:, 3]) - np.maximum(one[1], others[:, 1]) + norm,
                   F32(0))
    w = np.maximum(np.minimum(one[2], others[:, 2]) - np.maximum(one[0], others[:, 0]) + norm,
                   F32(0))
    inter = h * w
    with np.errstate(divide="ignore", invalid="ignore"):
        out = inter / (a_one + a_others - inter)
    return np.where((a_one <= 0) | (a_others <= 0), F32(0), out)


def _candidates(scores: np.ndarray, keep: np.ndarray, top_k: int) -> np.ndarray:
    idx = np.flatnonzero(keep)
    idx = idx[np.lexsort((idx, -scores[idx]))]          # by score, ties by index
    return idx[:top_k] if top_k > -1 else idx


class Attrs:
    """The attributes both operations share, parsed once."""

    def __init__(self, layer: Layer):
        self.sort = choice(layer, "sort_result_type", ("classid", "score", "none"), "none")
        self.across = flag(layer, "sort_result_across_batch", False)
        self.out_type = index_dtype(layer, "output_type", "i64")
        self.score_threshold = float_attr(layer, "score_threshold", 0.0)
        self.nms_top_k = int_attr(layer, "nms_top_k", -1)
        self.keep_top_k = int_attr(layer, "keep_top_k", -1)
        self.background = int_attr(layer, "background_class", -1)
        self.norm = F32(0) if flag(layer, "normalized", True) else F32(1)


def _multiclass_select(boxes, scores, a: Attrs, iou_threshold: float, eta: float):
    """The (box, score) a class keeps, in selection order."""
    cand = _candidates(scores, scores >= F32(a.score_threshold), a.nms_top_k)
    area = _areas(boxes, a.norm)
    thr = F32(iou_threshold)
    chosen: list[int] = []
    for i in cand:
        if chosen:
            c = np.array(chosen)
            if (_iou_multiclass(boxes[i], boxes[c], area[i], area[c], a.norm) > thr).any():
                continue
        chosen.append(int(i))
        if eta < 1 and thr > 0.5:
            thr = F32(thr * F32(eta))
    return [(i, float(scores[i])) for i in chosen]


def _matrix_iou(b1, b2, norm):
    """MatrixNms' IoU of box ``b1`` with each row of ``b2`` (0 when they do not touch)."""
    apart = (b2[:, 0] > b1[2]) | (b2[:, 2] < b1[0]) | (b2[:, 1] > b1[3]) | (b2[:, 3] < b1[1])
    iw = np.minimum(b1[2], b2[:, 2]) - np.maximum(b1[0], b2[:, 0]) + norm
    ih = np.minimum(b1[3], b2[:, 3]) - np.maximum(b1[1], b2[:, 1]) + norm
    inter = iw * ih

    def area(b):
        bad = (b[..., 2] < b[..., 0]) | (b[..., 3] < b[..., 1])
        size = (b[..., 2] - b[..., 0] + norm) * (b[..., 3] - b[..., 1] + norm)
        return np.where(bad, F32(0), size)

    with np.errstate(divide="ignore", invalid="ignore"):
        out = inter / (area(b1) + area(b2) - inter)
    return np.where(apart, F32(0), out).astype(F32)


def _matrix_select(boxes, scores, a: Attrs, gaussian: bool, sigma: float, post: float):
    cand = _candidates(scores, scores > F32(a.score_threshold), a.nms_top_k)
    n = len(cand)
    if n == 0:
        return []
    b, s = boxes[cand], scores[cand]
    iou = np.zeros((n, n), F32)                 # iou[i, j] for j < i
    for i in range(1, n):
        iou[i, :i] = _matrix_iou(b[i], b[:i], a.norm)
    iou_max = np.concatenate([[F32(0)], [iou[i, :i].max() for i in range(1, n)]]).astype(F32)
    out = [(int(cand[0]), float(s[0]))] if s[0] > F32(post) else []
    for i in range(1, n):
        x, cmax = iou[i, :i], iou_max[:i]
        if gaussian:
            decay = np.exp((cmax * cmax - x * x) * F32(sigma)).astype(F32)
        else:
            decay = ((1.0 - x.astype(np.float64)) / (1.0 - cmax + np.float64(F32(1e-10)))
                     ).astype(F32)
        ds = F32(min(F32(1), decay.min())) * s[i]
        if ds > F32(post):
            out.append((int(cand[i]), float(ds)))
    return out


def _finish(rows, a: Attrs, n_images: int, dtype):
    """Order, cut and write the rows (image, class, score, box index, flat index, box)."""
    per_image, kept = [], []
    for img in range(n_images):
        r = [x for x in rows if x[0] == img]
        r.sort(key=lambda x: (-x[2], x[1], x[3]))
        if a.keep_top_k > -1:
            r = r[:a.keep_top_k]
        if a.sort == "classid" and not a.across:
            r.sort(key=lambda x: (x[1], -x[2], x[3]))
        per_image.append(len(r))
        kept += r
    if a.across and a.sort == "score":
        kept.sort(key=lambda x: (-x[2], x[0], x[1], x[3]))
    elif a.across and a.sort == "classid":
        kept.sort(key=lambda x: (x[1], x[0], -x[2], x[3]))
    out = np.array([[x[1], x[2], *x[5]] for x in kept], F32).reshape(-1, 6)
    idx = np.array([x[4] for x in kept], a.out_type).reshape(-1, 1)
    return out.astype(dtype), idx, np.array(per_image, a.out_type)


def _check_shared(boxes, scores):
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or \
            scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise ValueError(f"boxes {boxes.shape} and scores {scores.shape} must be [batches, boxes, "
                         f"4] and [batches, classes, boxes]")


def matrix_nms(boxes, scores, a: Attrs, gaussian: bool, sigma: float, post: float):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    _check_shared(boxes, scores)
    b32, s32 = boxes.astype(F32), scores.astype(F32)
    rows = []
    for img in range(scores.shape[0]):
        for k in range(scores.shape[1]):
            if k == a.background:
                continue
            for i, s in _matrix_select(b32[img], s32[img, k], a, gaussian, sigma, post):
                rows.append((img, k, s, i, img * boxes.shape[1] + i, b32[img, i]))
    return _finish(rows, a, scores.shape[0], boxes.dtype)


def multiclass_nms(boxes, scores, roisnum, a: Attrs, iou_threshold: float, eta: float):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    b32, s32 = boxes.astype(F32), scores.astype(F32)
    rows = []
    if roisnum is None:
        _check_shared(boxes, scores)
        for img in range(scores.shape[0]):
            for k in range(scores.shape[1]):
                if k == a.background:
                    continue
                for i, s in _multiclass_select(b32[img], s32[img, k], a, iou_threshold, eta):
                    rows.append((img, k, s, i, img * boxes.shape[1] + i, b32[img, i]))
        return _finish(rows, a, scores.shape[0], boxes.dtype)
    counts = np.asarray(roisnum).reshape(-1).astype(np.int64)
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.shape != boxes.shape[:2]:
        raise ValueError(f"boxes {boxes.shape} and scores {scores.shape} must be [classes, boxes, "
                         f"4] and [classes, boxes] with roisnum")
    if counts.sum() > boxes.shape[1] or (counts < 0).any():
        raise ValueError(f"roisnum {counts.tolist()} does not fit {boxes.shape[1]} boxes")
    n_classes, start = boxes.shape[0], 0
    for img, m in enumerate(counts.tolist()):
        for k in range(n_classes):
            if k == a.background or m == 0:
                continue
            sl = slice(start, start + m)
            for i, s in _multiclass_select(b32[k, sl], s32[k, sl], a, iou_threshold, eta):
                rows.append((img, k, s, i, (start + i) * n_classes + k, b32[k, start + i]))
        start += m
    return _finish(rows, a, len(counts), boxes.dtype)


def _shape(layer: Layer, ins, consts):
    t = elements.canonical(attr(layer, "output_type", "i64"))
    index_dtype(layer, "output_type", "i64")
    n = -1
    if len(ins) > 2:
        n = ins[2].shape[0] if ins[2].shape else -1
    elif ins[0].shape:
        n = ins[0].shape[0]
    return [TensorInfo(ins[0].type, (-1, 6)), TensorInfo(t, (-1, 1)), TensorInfo(t, (n,))]


@op("MatrixNms", versions=(8,), outputs=3, shape=_shape,
    notes="sort_result_type=classid without sort_result_across_batch orders each image's boxes "
          "by class, as specified (OpenVINO's CPU plugin and reference leave them by score)")
def _matrix_nms8(layer: Layer):
    a = Attrs(layer)
    gaussian = choice(layer, "decay_function", ("gaussian", "linear"), "linear") == "gaussian"
    sigma = float_attr(layer, "gaussian_sigma", 2.0)
    post = float_attr(layer, "post_threshold", 0.0)
    return lambda boxes, scores: matrix_nms(boxes, scores, a, gaussian, sigma, post)


def _multiclass(version: int):
    def factory(layer: Layer):
        a = Attrs(layer)
        iou_threshold = float_attr(layer, "iou_threshold", 0.0)
        eta = float_attr(layer, "nms_eta", 1.0)
        n_in = len(layer.inputs)
        if version == 8 and n_in > 2:
            raise ValueError("MulticlassNms-8 takes two inputs (the roisnum form is version 9's)")

        def run(boxes, scores, roisnum=None):
            return multiclass_nms(boxes, scores, roisnum, a, iou_threshold, eta)
        return run
    return factory


_MC_NOTE = ("IoU equal to the threshold keeps a box, as specified (OpenVINO's CPU plugin and "
            "reference suppress it)")
op("MulticlassNms", versions=(8,), outputs=3, shape=_shape, notes=_MC_NOTE)(_multiclass(8))
op("MulticlassNms", versions=(9,), outputs=3, shape=_shape, notes=_MC_NOTE)(_multiclass(9))
