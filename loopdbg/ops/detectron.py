"""The ExperimentalDetectron* operations of Mask R-CNN-style models (opset 6), as OpenVINO computes
them in float32 (``GenerateProposalsSingleImage`` is in ``generate_proposals``).

* DetectionOutput: each box is refined per class (deltas divided by ``deltas_weights``, log sizes
  capped at ``max_delta_log_wh``, +1 pixel edges, corners raised to 0, boxes of no area skipped);
  per class (not 0) the scores above ``score_threshold`` go through NMS (IoU above
  ``nms_threshold``) keeping ``post_nms_count``; then the best ``max_detections_per_image`` (ties
  by box) stay, listed class by class unless that cut re-sorted them by score. Outputs: boxes,
  classes (i32) and scores, ``max_detections_per_image`` rows with zeros after the detections.
* PriorGridGenerator: the priors shifted to the centre of every cell of the grid (``h``, ``w`` or
  the feature map's size; ``stride_*`` or the image size over the grid), cells in row order;
  ``flatten`` gives ``[H * W * priors, 4]``, else ``[H, W, priors, 4]``, H and W the feature map's.
* ROIFeatureExtractor: each box goes to the pyramid level ``floor(2 + log2(sqrt(area) / 224))``
  (clamped; boxes of no area get zeros) and is pooled by ROIAlign's average (``aligned``: shifted by
  half a pixel) at ``1 / pyramid_scales[level]``; the boxes are also returned unchanged.
* TopKROIs: the ``max_rois`` boxes of highest probability, in decreasing order (ties by index),
  zeros after them when there are fewer.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import flag, float_attr, int_attr, int_list
from loopdbg.ops.priors import floats
from loopdbg.ops.registry import op
from loopdbg.ops.roi_align import pool_box
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


# ---- DetectionOutput -------------------------------------------------------------------------


def _iou_plus_one(one, others, size_one, size_others):
    apart = ((others[:, 0] > one[2]) | (others[:, 2] < one[0]) | (others[:, 1] > one[3])
             | (others[:, 3] < one[1]))
    iw = np.minimum(one[2], others[:, 2]) - np.maximum(one[0], others[:, 0]) + F32(1)
    ih = np.minimum(one[3], others[:, 3]) - np.maximum(one[1], others[:, 1]) + F32(1)
    inter = iw * ih
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (size_one + size_others - inter)
    return np.where(apart | (iw <= 0) | (ih <= 0), F32(0), iou)


def detection_output(rois, deltas, scores, info, a: dict):
    rois, deltas, scores = (np.asarray(x, F32) for x in (rois, deltas, scores))
    n, k = rois.shape[0], a["classes"]
    if rois.ndim != 2 or rois.shape[1] != 4 or deltas.shape != (n, 4 * k) or \
            scores.shape != (n, k):
        raise ValueError(f"boxes {rois.shape}, deltas {deltas.shape} and scores {scores.shape} "
                         f"must be [N, 4], [N, {4 * k}] and [N, {k}]")
    w = np.array(a["weights"], F32)
    x0, y0, x1, y1 = (rois[:, i] for i in range(4))
    valid = (x1 - x0 > 0) & (y1 - y0 > 0)
    ww, hh = x1 - x0 + F32(1), y1 - y0 + F32(1)
    cx, cy = x0 + F32(0.5) * ww, y0 + F32(0.5) * hh
    d = deltas.reshape(n, k, 4) / w
    cap = F32(a["max_log"])
    px, py = d[..., 0] * ww[:, None] + cx[:, None], d[..., 1] * hh[:, None] + cy[:, None]
    with np.errstate(over="ignore"):
        pw = np.exp(np.minimum(d[..., 2], cap)).astype(F32) * ww[:, None]
        ph = np.exp(np.minimum(d[..., 3], cap)).astype(F32) * hh[:, None]
    boxes = np.stack([px - F32(0.5) * pw, py - F32(0.5) * ph,
                      px + F32(0.5) * pw - F32(1), py + F32(0.5) * ph - F32(1)], -1)
    boxes = np.maximum(boxes, F32(0)).astype(F32)                    # [N, K, 4]
    sizes = (boxes[..., 2] - boxes[..., 0] + F32(1)) * (boxes[..., 3] - boxes[..., 1] + F32(1))
    sc = np.where(valid[:, None], scores, F32(0))
    found = []                                                      # (score, class, box)
    for c in range(1, k):
        idx = np.flatnonzero(sc[:, c] > F32(a["score_threshold"]))
        idx = idx[np.lexsort((idx, -sc[idx, c]))]
        kept: list[int] = []
        for i in idx.tolist():
            if kept:
                kk = np.array(kept)
                if (_iou_plus_one(boxes[i, c], boxes[kk, c], sizes[i, c], sizes[kk, c])
                        > F32(a["nms_threshold"])).any():
                    continue
            kept.append(i)
        if a["post"] > -1:
            kept = kept[:a["post"]]
        found += [(float(sc[i, c]), c, i) for i in kept]
    m = a["max_detections"]
    if len(found) > m:
        found = sorted(found, key=lambda t: (-t[0], t[2]))[:m]
    out_boxes = np.zeros((m, 4), F32)
    out_classes = np.zeros(m, np.int32)
    out_scores = np.zeros(m, F32)
    for j, (s, c, i) in enumerate(found):
        out_boxes[j], out_classes[j], out_scores[j] = boxes[i, c], c, s
    return out_boxes, out_classes, out_scores


def _do_params(layer: Layer) -> dict:
    weights = floats(layer, "deltas_weights")
    if len(weights) != 4:
        raise ValueError(f"deltas_weights must hold 4 values, got {len(weights)}")
    return {"score_threshold": float_attr(layer, "score_threshold"),
            "nms_threshold": float_attr(layer, "nms_threshold"),
            "max_log": float_attr(layer, "max_delta_log_wh"),
            "classes": int_attr(layer, "num_classes"),
            "post": int_attr(layer, "post_nms_count"),
            "max_detections": int_attr(layer, "max_detections_per_image"),
            "weights": weights}


def _do_shape(layer: Layer, ins, consts):
    m = int_attr(layer, "max_detections_per_image")
    return [TensorInfo(ins[0].type, (m, 4)), TensorInfo("i32", (m,)),
            TensorInfo(ins[0].type, (m,))]


@op("ExperimentalDetectronDetectionOutput", versions=(6,), outputs=3, shape=_do_shape,
    notes="class_agnostic_box_regression is ignored, as OpenVINO does")
def _ed_detection_output6(layer: Layer):
    a = _do_params(layer)
    flag(layer, "class_agnostic_box_regression", False)

    def run(rois, deltas, scores, info):
        boxes, classes, sc = detection_output(rois, deltas, scores, info, a)
        dtype = np.asarray(rois).dtype
        return boxes.astype(dtype), classes, sc.astype(dtype)
    return run


# ---- PriorGridGenerator ----------------------------------------------------------------------


def prior_grid(priors, feature, image, *, h: int, w: int, stride_h: float, stride_w: float,
               flatten: bool) -> np.ndarray:
    priors = np.asarray(priors)
    fs, im = np.shape(feature), np.shape(image)
    if priors.ndim != 2 or priors.shape[1] != 4 or len(fs) != 4 or len(im) != 4:
        raise ValueError(f"priors {priors.shape}, feature map {fs} and image {im} must be "
                         f"[P, 4] and 4-D")
    gh, gw = h or fs[2], w or fs[3]
    sw = F32(stride_w) if stride_w else F32(im[3]) / F32(gw)
    sh = F32(stride_h) if stride_h else F32(im[2]) / F32(gh)
    x = sw * (np.arange(gw, dtype=F32) + F32(0.5))
    y = sh * (np.arange(gh, dtype=F32) + F32(0.5))
    p = priors.astype(F32)
    shift = np.stack(np.broadcast_arrays(x[None, :], y[:, None], x[None, :], y[:, None]), -1)
    rows = (p[None, None, :, :] + shift[:, :, None, :]).astype(priors.dtype).reshape(-1, 4)
    # the output has the feature map's grid, as OpenVINO declares it; a grid of other h / w is
    # written row after row into it (cut, or followed by zeros), as OpenVINO does
    size = fs[2] * fs[3] * len(p)
    out = np.zeros((size, 4), priors.dtype)
    out[:min(size, len(rows))] = rows[:size]
    return out if flatten else out.reshape(fs[2], fs[3], len(p), 4)


def _grid_params(layer: Layer) -> dict:
    return {"h": int_attr(layer, "h", 0), "w": int_attr(layer, "w", 0),
            "stride_h": float_attr(layer, "stride_y", 0.0),
            "stride_w": float_attr(layer, "stride_x", 0.0),
            "flatten": flag(layer, "flatten", True)}


def _grid_shape(layer: Layer, ins, consts):
    p, fm = _grid_params(layer), ins[1].shape
    n = ins[0].shape[0] if ins[0].shape else -1
    gh, gw = (fm[2], fm[3]) if fm else (-1, -1)
    if p["flatten"]:
        return TensorInfo(ins[0].type, (-1 if -1 in (gh, gw, n) else gh * gw * n, 4))
    return TensorInfo(ins[0].type, (gh, gw, n, 4))


@op("ExperimentalDetectronPriorGridGenerator", versions=(6,), shape=_grid_shape,
    notes="the output has the feature map's grid size; a grid of other h / w attributes is "
          "written into it row after row and cut or followed by zeros (OpenVINO leaves the rest "
          "unwritten)")
def _ed_prior_grid6(layer: Layer):
    p = _grid_params(layer)
    return lambda priors, feature, image: prior_grid(priors, feature, image, **p)


# ---- ROIFeatureExtractor ---------------------------------------------------------------------


def roi_features(rois, *maps, size: int, ratio: int, scales: list[int], aligned: bool):
    rois = np.asarray(rois)
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise ValueError(f"the boxes must have shape [N, 4], got {rois.shape}")
    if len(scales) != len(maps) or not maps:
        raise ValueError(f"{len(maps)} feature maps but {len(scales)} pyramid_scales")
    maps = [np.asarray(m) for m in maps]
    c = maps[0].shape[1]
    r = rois.astype(F32)
    area = (r[:, 2] - r[:, 0]) * (r[:, 3] - r[:, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        lvl = np.floor(np.log2(np.sqrt(area) / F32(224) + F32(1e-6)) + F32(2))
    level = np.where(area > 0, np.clip(np.nan_to_num(lvl), 0, len(maps) - 1), -1).astype(int)
    out = np.zeros((len(r), c, size, size), F32)
    off = F32(0.5) if aligned else F32(0)
    for i, box in enumerate(r):
        if level[i] < 0:
            continue
        fm = maps[level[i]][0]
        s = F32(1) / F32(scales[level[i]])
        x0, y0, x1, y1 = box * s - off
        bw, bh = max(x1 - x0, F32(1)), max(y1 - y0, F32(1))
        out[i] = pool_box(fm, x0, y0, F32(bw / F32(size)), F32(bh / F32(size)), size, size,
                           ratio, True)
    return out.astype(maps[0].dtype), rois


def _rfe_shape(layer: Layer, ins, consts):
    size = int_attr(layer, "output_size")
    n = ins[0].shape[0] if ins[0].shape else -1
    c = ins[1].shape[1] if len(ins) > 1 and ins[1].shape else -1
    return [TensorInfo(ins[1].type, (n, c, size, size)), TensorInfo(ins[0].type, (n, 4))]


@op("ExperimentalDetectronROIFeatureExtractor", versions=(6,), outputs=2, shape=_rfe_shape)
def _ed_roi_features6(layer: Layer):
    size, ratio = int_attr(layer, "output_size"), int_attr(layer, "sampling_ratio")
    scales = int_list(layer, "pyramid_scales")
    aligned = flag(layer, "aligned", False)
    if size <= 0 or ratio < 0 or not scales or min(scales) <= 0:
        raise ValueError(f"output_size={size} and pyramid_scales must be positive and "
                         f"sampling_ratio={ratio} non-negative")
    return lambda rois, *maps: roi_features(rois, *maps, size=size, ratio=ratio, scales=scales,
                                            aligned=aligned)


# ---- TopKROIs --------------------------------------------------------------------------------


def top_rois(rois, probs, max_rois: int) -> np.ndarray:
    rois, probs = np.asarray(rois), np.asarray(probs).reshape(-1)
    if rois.ndim != 2 or rois.shape[1] != 4 or probs.size != rois.shape[0]:
        raise ValueError(f"boxes {rois.shape} and probabilities {np.shape(probs)} must be [N, 4] "
                         f"and [N]")
    order = np.argsort(-probs.astype(np.float64), kind="stable")[:max_rois]
    out = np.zeros((max_rois, 4), rois.dtype)        # OpenVINO's shape, zeros past the boxes
    out[:len(order)] = rois[order]
    return out


def _topk_shape(layer: Layer, ins, consts):
    return TensorInfo(ins[0].type, (int_attr(layer, "max_rois"), 4))


@op("ExperimentalDetectronTopKROIs", versions=(6,), shape=_topk_shape,
    notes="with fewer boxes than max_rois the rows after them are 0 (OpenVINO leaves them "
          "unwritten)")
def _ed_topk_rois6(layer: Layer):
    m = int_attr(layer, "max_rois")
    if m < 0:
        raise ValueError(f"max_rois={m} must not be negative")
    return lambda rois, probs: top_rois(rois, probs, m)
