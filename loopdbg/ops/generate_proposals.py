"""GenerateProposals-9 and ExperimentalDetectronGenerateProposalsSingleImage-6: Detectron's region
proposals from given anchors, deltas and scores.

Per image (float32, as OpenVINO's reference): each anchor ``[x0, y0, x1, y1]`` (pixel edges counted,
+1, unless ``normalized``) is moved by its deltas (the log sizes capped at ``log(1000 / 16)``),
clipped to the image, and dropped when narrower or lower than ``min_size`` times the image scale;
the ``pre_nms_count`` best scores (ties by position; OpenVINO leaves their order to
``std::partial_sort``) go through NMS, a box suppressed when its IoU with a kept one exceeds the
threshold, and at most ``post_nms_count`` are kept. GenerateProposals-9 lowers the threshold by
``nms_eta`` after each kept box while it is above 0.5, as specified (OpenVINO refuses a model with
``nms_eta`` other than 1), and returns the kept boxes of all images with their count per image.
The Detectron version compares sizes with ``min_size`` unscaled, gives small boxes score 0
instead of dropping them, leaves out the +1 in its NMS, and returns ``post_nms_count`` rows for
its one image, zeros after the kept ones; a suppressed box stays suppressed (OpenVINO's reference
lets a later kept box revive it, its CPU plugin does not).
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, flag, float_attr, index_dtype, int_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32
MAX_LOG_WH = F32(math.log(1000.0 / 16.0))


def refine(anchors: np.ndarray, deltas: np.ndarray, img_h, img_w, off):
    """Anchors ``[P, 4]`` and deltas ``[P, 4]`` -> clipped boxes ``[P, 4]``."""
    x0, y0, x1, y1 = (anchors[:, k] for k in range(4))
    ww, hh = x1 - x0 + off, y1 - y0 + off
    cx, cy = x0 + F32(0.5) * ww, y0 + F32(0.5) * hh
    px, py = deltas[:, 0] * ww + cx, deltas[:, 1] * hh + cy
    with np.errstate(over="ignore"):
        pw = np.exp(np.minimum(deltas[:, 2], MAX_LOG_WH)).astype(F32) * ww
        ph = np.exp(np.minimum(deltas[:, 3], MAX_LOG_WH)).astype(F32) * hh
    boxes = np.stack([px - F32(0.5) * pw, py - F32(0.5) * ph,
                      px + F32(0.5) * pw - off, py + F32(0.5) * ph - off], 1)
    bound = np.array([img_w - off, img_h - off, img_w - off, img_h - off], F32)
    return np.maximum(F32(0), np.minimum(boxes, bound)).astype(F32)


def nms(boxes: np.ndarray, alive: np.ndarray, threshold: float, eta: float, max_out: int,
        off) -> list[int]:
    """Greedy NMS of boxes in score order (the ``alive`` ones), at most ``max_out`` kept."""
    dead = ~alive
    keep: list[int] = []
    thr = F32(threshold)
    for i in range(len(boxes)):
        if dead[i]:
            continue
        keep.append(i)
        if len(keep) == max_out:
            break
        if eta < 1 and thr > 0.5:            # the specification's step 7, before suppressing
            thr = F32(thr * F32(eta))
        bi, rest = boxes[i], boxes[i + 1:]
        w = np.minimum(bi[2], rest[:, 2]) - np.maximum(bi[0], rest[:, 0]) + off
        h = np.minimum(bi[3], rest[:, 3]) - np.maximum(bi[1], rest[:, 1]) + off
        inter = np.maximum(F32(0), w) * np.maximum(F32(0), h)
        a_area = (bi[2] - bi[0] + off) * (bi[3] - bi[1] + off)
        b_area = (rest[:, 2] - rest[:, 0] + off) * (rest[:, 3] - rest[:, 1] + off)
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (a_area + b_area - inter)
        touch = ((bi[0] <= rest[:, 2]) & (bi[1] <= rest[:, 3]) & (rest[:, 0] <= bi[2])
                 & (rest[:, 1] <= bi[3]))
        dead[i + 1:] |= (thr < iou) & touch
    return keep


def single_image(info, anchors, deltas, scores, *, min_size, threshold, eta, pre, post,
                 normalized: bool, detectron: bool = False):
    """Kept boxes ``[k, 4]`` and scores ``[k]`` of one image.

    ``anchors`` ``[P, 4]`` and ``deltas`` ``[P, 4]`` / ``scores`` ``[P]`` in the same order.
    ``detectron``: the ExperimentalDetectron variant (sizes not scaled by the image info, small
    boxes kept with score 0, NMS without the +1)."""
    info = np.asarray(info, F32).reshape(-1)
    if info.size < 2 or (not detectron and info.size < 3):
        raise ValueError(f"the image info must hold 3 or 4 values, got {info.size}")
    off = F32(0) if normalized else F32(1)
    boxes = refine(anchors, deltas, info[0], info[1], off)
    if detectron:
        min_h = min_w = F32(min_size)
    else:
        min_h = F32(min_size) * info[2]
        min_w = F32(min_size) * (info[3] if info.size == 4 else info[2])
    big = (min_w <= boxes[:, 2] - boxes[:, 0] + off) & (min_h <= boxes[:, 3] - boxes[:, 1] + off)
    alive = np.ones(len(boxes), bool)
    if detectron:
        scores = np.where(big, scores, F32(0)).astype(F32)
    else:
        alive = big
    order = np.argsort(-scores, kind="stable")[:min(pre, scores.size)]
    keep = order[nms(boxes[order], alive[order], threshold, eta, post,
                     F32(0) if detectron else off)]
    return boxes[keep], scores[keep]


def generate_proposals(info, anchors, deltas, scores, a: dict, num_type) -> tuple:
    info, anchors, deltas, scores = (np.asarray(x) for x in (info, anchors, deltas, scores))
    dtype = deltas.dtype
    if anchors.ndim != 4 or anchors.shape[3] != 4 or deltas.ndim != 4 or scores.ndim != 4:
        raise ValueError(f"anchors {anchors.shape}, deltas {deltas.shape} and scores "
                         f"{scores.shape} must be [H, W, A, 4], [N, 4A, H, W] and [N, A, H, W]")
    h, w, n_a = anchors.shape[:3]
    n = scores.shape[0]
    if scores.shape[1:] != (n_a, h, w) or deltas.shape != (n, 4 * n_a, h, w) or \
            info.shape[0] != n:
        raise ValueError(f"anchors {anchors.shape}, deltas {deltas.shape}, scores "
                         f"{scores.shape} and image info {info.shape} do not fit together")
    anc = anchors.astype(F32).reshape(-1, 4)
    rois, probs, counts = [], [], []
    for b in range(n):
        d = deltas[b].astype(F32).reshape(n_a, 4, h, w).transpose(2, 3, 0, 1).reshape(-1, 4)
        s = scores[b].astype(F32).transpose(1, 2, 0).reshape(-1)
        r, p = single_image(info[b], anc, d, s, **a)
        rois.append(r)
        probs.append(p)
        counts.append(len(p))
    return (np.concatenate(rois).astype(dtype), np.concatenate(probs).astype(dtype),
            np.array(counts, num_type))


def _params(layer: Layer, names) -> dict:
    pre, post = int_attr(layer, names[0]), int_attr(layer, names[1])
    if pre < 0 or post < 0:
        raise ValueError(f"{names[0]}={pre} and {names[1]}={post} must not be negative")
    return {"min_size": float_attr(layer, "min_size"),
            "threshold": float_attr(layer, "nms_threshold"), "pre": pre, "post": post}


def _gp_shape(layer: Layer, ins, consts):
    t = elements.canonical(attr(layer, "roi_num_type", "i64"))
    n = ins[0].shape[0] if ins[0].shape else -1
    return [TensorInfo(ins[2].type, (-1, 4)), TensorInfo(ins[2].type, (-1,)), TensorInfo(t, (n,))]


@op("GenerateProposals", versions=(9,), outputs=3, shape=_gp_shape,
    notes="nms_eta below 1 lowers the NMS threshold as specified (OpenVINO refuses such "
          "models); boxes of equal score keep their position order (OpenVINO: std::partial_sort)")
def _generate_proposals9(layer: Layer):
    a = _params(layer, ("pre_nms_count", "post_nms_count"))
    a["eta"] = float_attr(layer, "nms_eta", 1.0)
    a["normalized"] = flag(layer, "normalized", True)
    num_type = index_dtype(layer, "roi_num_type", "i64")
    return lambda info, anchors, deltas, scores: generate_proposals(info, anchors, deltas,
                                                                    scores, a, num_type)


def detectron_proposals(info, anchors, deltas, scores, a: dict):
    info, anchors, deltas, scores = (np.asarray(x) for x in (info, anchors, deltas, scores))
    dtype = deltas.dtype
    if deltas.ndim != 3 or scores.ndim != 3 or anchors.ndim != 2 or anchors.shape[1] != 4:
        raise ValueError(f"anchors {anchors.shape}, deltas {deltas.shape} and scores "
                         f"{scores.shape} must be [H * W * A, 4], [4A, H, W] and [A, H, W]")
    n_a, h, w = scores.shape
    if deltas.shape != (4 * n_a, h, w) or anchors.shape[0] != n_a * h * w:
        raise ValueError(f"anchors {anchors.shape}, deltas {deltas.shape} and scores "
                         f"{scores.shape} do not fit together")
    d = deltas.astype(F32).reshape(n_a, 4, h, w).transpose(2, 3, 0, 1).reshape(-1, 4)
    s = scores.astype(F32).transpose(1, 2, 0).reshape(-1)
    r, p = single_image(info, anchors.astype(F32), d, s, eta=1.0, normalized=False,
                        detectron=True, **a)
    rois = np.zeros((a["post"], 4), F32)
    probs = np.zeros(a["post"], F32)
    rois[:len(r)], probs[:len(p)] = r, p
    return rois.astype(dtype), probs.astype(dtype)


def _edgp_shape(layer: Layer, ins, consts):
    post = int_attr(layer, "post_nms_count")
    return [TensorInfo(ins[1].type, (post, 4)), TensorInfo(ins[1].type, (post,))]


@op("ExperimentalDetectronGenerateProposalsSingleImage", versions=(6,), outputs=2,
    shape=_edgp_shape,
    notes="boxes of equal score (small boxes all score 0) keep their position order, which "
          "OpenVINO leaves to std::partial_sort; a suppressed box stays suppressed, as in the CPU "
          "plugin (the reference can revive it)")
def _ed_generate_proposals6(layer: Layer):
    a = _params(layer, ("pre_nms_count", "post_nms_count"))
    return lambda info, anchors, deltas, scores: detectron_proposals(info, anchors, deltas,
                                                                     scores, a)
