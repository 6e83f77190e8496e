"""DetectionOutput-1/8: SSD's decoding of box offsets against prior boxes, per-class NMS and the
``[1, 1, rows, 7]`` list of ``[image, label, score, xmin, ymin, xmax, ymax]`` detections.

As OpenVINO's reference computes it (float32): priors (``[batch or 1, 1 or 2, priors * size]``,
size 5 with a leading index when not ``normalized``, which divides them by ``input_width`` /
``input_height``) are decoded with the ``CORNER`` or ``CENTER_SIZE`` code, scaled by the variances
unless ``variance_encoded_in_target``; with five inputs the boxes are decoded twice (first by the
ARM offsets) and a prior whose ARM objectness is below ``objectness_score`` keeps only its
background score. Caffe-style NMS (the default) runs per class: the ``top_k`` best scores above
``confidence_threshold``, a box kept unless its IoU with a kept one exceeds ``nms_threshold``;
MXNet-style (``decrease_label_id``) gives each prior its best non-background class (score at least
the threshold) and labels from 0. ``keep_top_k[0]`` keeps the best boxes of each image; rows go by
image, then label, then score; the row after the last detection starts with -1, the rest are 0.
DetectionOutput-1 takes ``num_classes`` from its attribute, version 8 from the input shapes.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, flag, float_attr, int_attr, int_list
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32
CORNER, CENTER = "caffe.priorboxparameter.corner", "caffe.priorboxparameter.center_size"


class Attrs:
    def __init__(self, layer: Layer, version: int):
        self.num_classes = int_attr(layer, "num_classes") if version == 1 else None
        self.background = int_attr(layer, "background_label_id", 0)
        self.top_k = int_attr(layer, "top_k", -1)
        self.keep_top_k = int_list(layer, "keep_top_k") or [-1]
        self.variance_in_target = flag(layer, "variance_encoded_in_target")
        self.code = choice(layer, "code_type", (CORNER, CENTER), CORNER)
        self.share = flag(layer, "share_location", True)
        self.nms = float_attr(layer, "nms_threshold")
        self.confidence = float_attr(layer, "confidence_threshold", 0.0)
        self.clip_after = flag(layer, "clip_after_nms")
        self.clip_before = flag(layer, "clip_before_nms")
        self.decrease = flag(layer, "decrease_label_id")
        self.normalized = flag(layer, "normalized")
        self.height = int_attr(layer, "input_height", 1)
        self.width = int_attr(layer, "input_width", 1)
        self.objectness = float_attr(layer, "objectness_score", 0.0)


def _decode(prior: np.ndarray, var: np.ndarray | None, loc: np.ndarray, a: Attrs) -> np.ndarray:
    """Boxes ``[P, 4]`` from priors ``[P, 4]``, variances ``[P, 4]`` (or None) and offsets."""
    p = prior.copy()
    if not a.normalized:
        p = p / np.array([a.width, a.height, a.width, a.height], F32)
    v = var if var is not None else np.ones_like(p)
    if a.code == CORNER:
        out = p + v * loc
    else:
        pw, ph = p[:, 2] - p[:, 0], p[:, 3] - p[:, 1]
        pcx, pcy = (p[:, 0] + p[:, 2]) / F32(2), (p[:, 1] + p[:, 3]) / F32(2)
        cx = v[:, 0] * loc[:, 0] * pw + pcx
        cy = v[:, 1] * loc[:, 1] * ph + pcy
        with np.errstate(over="ignore"):
            w = np.exp(v[:, 2] * loc[:, 2]).astype(F32) * pw
            h = np.exp(v[:, 3] * loc[:, 3]).astype(F32) * ph
        out = np.stack([cx - w / F32(2), cy - h / F32(2), cx + w / F32(2), cy + h / F32(2)], 1)
    out = out.astype(F32)
    return np.clip(out, F32(0), F32(1)) if a.clip_before else out


def _size(b: np.ndarray) -> np.ndarray:
    bad = (b[..., 2] < b[..., 0]) | (b[..., 3] < b[..., 1])
    return np.where(bad, F32(0), (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]))


def _overlap(one: np.ndarray, others: np.ndarray) -> np.ndarray:
    apart = ((others[:, 0] > one[2]) | (others[:, 2] < one[0]) | (others[:, 1] > one[3])
             | (others[:, 3] < one[1]))
    iw = np.minimum(one[2], others[:, 2]) - np.maximum(one[0], others[:, 0])
    ih = np.minimum(one[3], others[:, 3]) - np.maximum(one[1], others[:, 1])
    inter = iw * ih
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (_size(one) + _size(others) - inter)
    return np.where(apart | (iw <= 0) | (ih <= 0), F32(0), iou)


def _nms(boxes: np.ndarray, order: np.ndarray, threshold: float) -> list[int]:
    kept: list[int] = []
    for i in order.tolist():
        if kept and (_overlap(boxes[i], boxes[np.array(kept)]) > F32(threshold)).any():
            continue
        kept.append(i)
    return kept


def _by_score(scores: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return idx[np.lexsort((idx, -scores[idx]))]


def detection_output(loc, conf, priors, arm_conf, arm_loc, a: Attrs) -> np.ndarray:
    loc, conf, priors = (np.asarray(x) for x in (loc, conf, priors))
    dtype = loc.dtype
    n = loc.shape[0]
    size = 4 if a.normalized else 5
    if priors.ndim != 3 or priors.shape[2] % size:
        raise ValueError(f"the priors must be [batch, 1 or 2, priors * {size}], got {priors.shape}")
    n_priors = priors.shape[2] // size
    classes = a.num_classes if a.num_classes is not None else conf.shape[1] // max(n_priors, 1)
    loc_classes = 1 if a.share else classes
    if loc.size != n * n_priors * loc_classes * 4 or conf.size != n * n_priors * classes:
        raise ValueError(f"box logits {loc.shape} and class predictions {conf.shape} do not fit "
                         f"{n_priors} priors of {classes} classes")
    if priors.shape[0] not in (1, n) or (not a.variance_in_target and priors.shape[1] < 2):
        raise ValueError(f"the priors {priors.shape} do not fit {n} images")
    loc = loc.reshape(n, n_priors, loc_classes, 4).astype(F32)
    conf = conf.reshape(n, n_priors, classes).astype(F32).copy()
    two_stage = arm_conf is not None and arm_loc is not None
    if two_stage:
        arm_conf = np.asarray(arm_conf, F32).reshape(n, n_priors, 2)
        arm_loc = np.asarray(arm_loc, F32).reshape(n, n_priors, loc_classes, 4)
        low = arm_conf[:, :, 1] < F32(a.objectness)
        background = (np.arange(classes) == a.background).astype(F32)
        conf[low] = background
    pr = priors.astype(F32)
    rows = []
    for img in range(n):
        pb = pr[img if pr.shape[0] > 1 else 0]
        prior_boxes = pb[0, :n_priors * size].reshape(n_priors, size)[:, size - 4:]
        var = None if a.variance_in_target else pb[1, :n_priors * 4].reshape(n_priors, 4)
        boxes = {}
        for lc in range(loc_classes):
            label = -1 if a.share else lc
            if a.background > -1 and label == a.background:
                continue
            base = prior_boxes
            if two_stage:               # (not normalized: both decodings divide by the size)
                base = _decode(prior_boxes, var, arm_loc[img, :, lc], a)
            boxes[label] = _decode(base, var, loc[img, :, lc], a)
        scores = conf[img]
        picked: dict[int, list[int]] = {}
        if not a.decrease:
            for c in range(classes):
                if c == a.background or (-1 if a.share else c) not in boxes:
                    continue
                idx = _by_score(scores[:, c], np.flatnonzero(scores[:, c] > F32(a.confidence)))
                if a.top_k > -1:
                    idx = idx[:a.top_k]
                picked[c] = _nms(boxes[-1 if a.share else c], idx, a.nms)
        else:
            cls = [c for c in range(1, classes) if not (a.background > -1 and c == a.background)]
            if cls:
                sub = scores[:, cls]
                best = np.array(cls)[np.argmax(sub, axis=1)]
                conf_best = sub.max(axis=1)
                ok = np.flatnonzero((conf_best > -1) & (conf_best >= F32(a.confidence)))
                ok = _by_score(conf_best, ok)
                if a.top_k != -1:
                    ok = ok[:a.top_k]
                for p in ok.tolist():
                    c = int(best[p])
                    kept = picked.setdefault(c, [])
                    bx = boxes[-1 if a.share else c]
                    if not kept or not (_overlap(bx[p], bx[np.array(kept)]) > F32(a.nms)).any():
                        kept.append(p)
        total = sum(len(v) for v in picked.values())
        k = a.keep_top_k[0]
        if k > -1 and total > k:
            pairs = [(scores[p, c], p, c) for c, ps in picked.items() for p in ps]
            pairs.sort(key=lambda t: (-t[0], t[1]))
            picked = {}
            for _, p, c in pairs[:k]:
                picked.setdefault(c, []).append(p)
        for c in sorted(picked):
            bx = boxes.get(-1 if a.share else c)
            if bx is None:
                continue
            for p in picked[c]:
                b = bx[p]
                if a.clip_after:
                    b = np.clip(b, F32(0), F32(1))
                rows.append([img, c - 1 if a.decrease else c, scores[p, c], *b])
    n_rows = _rows(a, n, classes, n_priors)
    out = np.zeros((n_rows, 7), F32)
    rows = rows[:n_rows]
    if rows:
        out[:len(rows)] = np.array(rows, F32)
    if len(rows) < n_rows:
        out[len(rows), 0] = -1
    return out.reshape(1, 1, n_rows, 7).astype(dtype)


def _rows(a: Attrs, n: int, classes: int, n_priors: int) -> int:
    if a.keep_top_k[0] > 0:
        return n * a.keep_top_k[0]
    if a.top_k > 0:
        return n * a.top_k * classes
    return n * classes * n_priors


def _shape(version: int):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        a = Attrs(layer, version)
        loc, conf, pri = ins[0].shape, ins[1].shape, ins[2].shape
        if loc is None or pri is None or -1 in pri or loc[0] == -1 or (
                version == 8 and (conf is None or conf[1] == -1)):
            return TensorInfo(ins[0].type, (1, 1, -1, 7))
        n_priors = pri[2] // (4 if a.normalized else 5)
        classes = a.num_classes if version == 1 else conf[1] // max(n_priors, 1)
        return TensorInfo(ins[0].type, (1, 1, _rows(a, loc[0], classes, n_priors), 7))
    return rule


def _factory(version: int):
    def factory(layer: Layer):
        a = Attrs(layer, version)

        def run(loc, conf, priors, arm_conf=None, arm_loc=None):
            return detection_output(loc, conf, priors, arm_conf, arm_loc, a)
        return run
    return factory


op("DetectionOutput", versions=(1,), shape=_shape(1))(_factory(1))
op("DetectionOutput", versions=(8,), shape=_shape(8))(_factory(8))
