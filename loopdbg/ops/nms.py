"""NonMaxSuppression-1/3/4/5/9: greedy selection of boxes, per batch and class, by score and IoU.

The specification (NonMaxSuppression-5/9, step by step) is followed where OpenVINO 2026.4's CPU
plugin departs from it, which it does only at equalities and in output padding:

* a box is suppressed by a selected one when their IoU is *greater* than ``iou_threshold`` (the
  plugin suppresses at ``>=``, so with ``iou_threshold = 0`` it also drops disjoint boxes);
* a box is kept while its score is *greater or equal* to ``score_threshold`` (the plugin: greater);
* NonMaxSuppression-5 with Soft-NMS (``soft_nms_sigma > 0``) removes a box whose IoU with a selected
  one exceeds ``iou_threshold`` (the plugin only decays it, as version 9 does);
* NonMaxSuppression-1/3/4 have a static output shape, ``[min(num_boxes, max_output_boxes_per_class
  * num_classes), 3]`` for versions 1 and 3 and ``[min(num_boxes, max_output_boxes_per_class) *
  num_batches * num_classes, 3]`` for version 4, whose rows after the selected boxes are -1 (the
  plugin returns only the selected rows). Versions 5 and 9 return ``[selected, 3]``, as the plugin.

A box whose score a hard suppression set to 0 is removed, never selected with score 0. Boxes are
compared in float32, corners put in order first (``[y1, x1, y2, x2]`` is any diagonal pair). With
``sort_result_descending`` the selected boxes of all batches and classes are ordered by score, ties
by batch, class and box index, as the plugin does; without it, by batch, class and selection order.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, choice, flag, index_dtype
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


# ---- geometry (shared with nms_multi) --------------------------------------------------------


def corners(boxes: np.ndarray, center: bool = False) -> np.ndarray:
    """``[..., 4]`` boxes as float32 ``[ymin, xmin, ymax, xmax]`` (from corners in any order, or
    from ``[x_center, y_center, width, height]``)."""
    b = np.asarray(boxes, F32)
    if center:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2] / F32(2), b[..., 3] / F32(2)
        return np.stack([yc - h, xc - w, yc + h, xc + w], axis=-1)
    return np.stack([np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3]),
                     np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3])], axis=-1)


def areas(c: np.ndarray, offset: float = 0.0) -> np.ndarray:
    return (c[..., 2] - c[..., 0] + F32(offset)) * (c[..., 3] - c[..., 1] + F32(offset))


def iou(one: np.ndarray, others: np.ndarray, area_one, area_others, offset: float = 0.0):
    """IoU of corner box ``one`` with each of ``others`` (0 where an area is not positive)."""
    off = F32(offset)
    h = np.minimum(one[2], others[:, 2]) - np.maximum(one[0], others[:, 0]) + off
    w = np.minimum(one[3], others[:, 3]) - np.maximum(one[1], others[:, 1]) + off
    h, w = np.maximum(h, F32(0)), np.maximum(w, F32(0))
    inter = h * w
    with np.errstate(divide="ignore", invalid="ignore"):
        out = inter / (area_one + area_others - inter)
    bad = (area_one <= 0) | (area_others <= 0)
    return np.where(bad, F32(0), out).astype(F32)


# ---- the selection ---------------------------------------------------------------------------


def select(c: np.ndarray, scores: np.ndarray, max_out: int, iou_thr: float, score_thr: float,
           sigma: float, suppress_soft_by_iou: bool, overlap=None) -> list[tuple[int, float]]:
    """The boxes one class keeps, in selection order, with their (decayed) scores.

    ``c``: ``[n, 4]`` corner boxes (or anything ``overlap(k, rest)`` reads: the IoU of box ``k``
    with the boxes ``rest``); ``scores``: ``[n]``. Greedy as in the specification: the best
    box left is selected while its score is at least ``score_thr``; every other box's score is then
    multiplied by ``func(IoU)``: 0 above ``iou_thr`` (hard NMS, or Soft-NMS of version 5), else
    ``exp(-0.5 IoU² / sigma)`` for Soft-NMS, else 1.
    """
    s = np.asarray(scores, F32).copy()
    alive = s >= F32(score_thr)
    if overlap is None:
        area = areas(c)

        def overlap(k, rest):
            return iou(c[k], c[rest], area[k], area[rest])
    thr = F32(iou_thr)
    scale = F32(-0.5) / F32(sigma) if sigma > 0 else None
    out: list[tuple[int, float]] = []
    while len(out) < max_out and alive.any():
        masked = np.where(alive, s, -np.inf)
        k = int(np.argmax(masked))              # ties: the lowest index
        out.append((k, float(s[k])))
        alive[k] = False
        rest = np.flatnonzero(alive)
        if not rest.size:
            break
        ov = overlap(k, rest)
        if scale is None:
            alive[rest[ov > thr]] = False
            continue
        if suppress_soft_by_iou:
            alive[rest[ov > thr]] = False
        s[rest] = s[rest] * np.exp(scale * ov * ov).astype(F32)
        alive[rest] &= s[rest] >= F32(score_thr)
    return out


def scalar_input(value, default: float, kind=float):
    if value is None:
        return default
    flat = np.asarray(value).reshape(-1)
    if flat.size != 1:
        raise ValueError(f"a threshold input must hold one value, got shape {np.shape(value)}")
    return kind(flat[0])


def non_max_suppression(boxes, scores, max_out, iou_thr, score_thr, sigma, *, center: bool,
                        sort_desc: bool, soft_by_iou: bool) -> list[tuple[int, int, int, float]]:
    """(batch, class, box, score) of every selected box, in output order."""
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise ValueError(f"boxes must have shape [batches, boxes, 4], got {boxes.shape}")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise ValueError(f"scores {scores.shape} do not match boxes {boxes.shape}: expected "
                         f"[{boxes.shape[0]}, classes, {boxes.shape[1]}]")
    max_out = min(max_out, boxes.shape[1])
    rows: list[tuple[int, int, int, float]] = []
    if max_out <= 0:
        return rows
    c = corners(boxes, center)
    for b in range(scores.shape[0]):
        for k in range(scores.shape[1]):
            for i, s in select(c[b], scores[b, k], max_out, iou_thr, score_thr, sigma,
                               soft_by_iou):
                rows.append((b, k, i, s))
    return order_rows(rows, sort_desc)


def order_rows(rows: list, sort_desc: bool) -> list:
    """(batch, class, box, score) rows in batch, class, selection order, or by score (ties:
    batch, class, box) with ``sort_desc``."""
    if sort_desc and rows:
        sc = np.array([r[3] for r in rows], F32)
        order = np.lexsort(([r[2] for r in rows], [r[1] for r in rows], [r[0] for r in rows], -sc))
        rows = [rows[j] for j in order]
    return rows


def _run(layer: Layer, version: int):
    center = choice(layer, "box_encoding", ("corner", "center"), "corner") == "center"
    sort_desc = flag(layer, "sort_result_descending", True)
    out_type = (np.dtype(np.int64) if version == 1
                else index_dtype(layer, "output_type", "i64"))

    def kernel(boxes, scores, max_out=None, iou_thr=None, score_thr=None, sigma=None):
        m = scalar_input(max_out, 0, int)
        rows = non_max_suppression(
            boxes, scores, m, scalar_input(iou_thr, 0.0), scalar_input(score_thr, 0.0),
            scalar_input(sigma, 0.0), center=center, sort_desc=sort_desc, soft_by_iou=version == 5)
        idx = np.array([r[:3] for r in rows], out_type).reshape(-1, 3)
        if version in (1, 3, 4):
            n_boxes = np.shape(boxes)[1]
            n_batches, n_classes = np.shape(scores)[:2]
            m = max(m, 0)
            size = (min(n_boxes, m * n_classes) if version < 4
                    else min(n_boxes, m) * n_batches * n_classes)
            padded = np.full((size, 3), -1, out_type)
            padded[:min(size, len(idx))] = idx[:size]
            return padded
        sc = np.array([(r[0], r[1], r[3]) for r in rows], F32).reshape(-1, 3)
        return idx, sc, np.array([len(rows)], out_type)

    return kernel


def _out_type(layer: Layer, version: int) -> str:
    if version == 1:
        return "i64"
    index_dtype(layer, "output_type", "i64")            # raises on a bad one
    return elements.canonical(attr(layer, "output_type", "i64"))


def _static_shape(version: int):
    def rule(layer: Layer, ins, consts):
        t = _out_type(layer, version)
        bs, ss = ins[0].shape, ins[1].shape
        m = consts[2] if len(consts) > 2 else np.array(0)
        if bs is None or ss is None or m is None or -1 in bs or -1 in ss:
            return TensorInfo(t, (-1, 3))
        m = max(scalar_input(m, 0, int), 0)
        size = min(bs[1], m * ss[1]) if version < 4 else min(bs[1], m) * ss[0] * ss[1]
        return TensorInfo(t, (size, 3))
    return rule


def dynamic_shape(layer: Layer, ins, consts):
    t = _out_type(layer, 5)
    return [TensorInfo(t, (-1, 3)), TensorInfo("f32", (-1, 3)), TensorInfo(t, (1,))]


_STATIC_NOTE = ("the output keeps the specification's static shape, rows after the selected boxes "
                "set to -1 (OpenVINO's CPU plugin returns only the selected rows); IoU equal to "
                "iou_threshold keeps a box and a score equal to score_threshold is kept, as "
                "specified (the CPU plugin suppresses both)")
_DYNAMIC_NOTE = ("IoU equal to iou_threshold keeps a box and a score equal to score_threshold is "
                 "kept, as specified (OpenVINO's CPU plugin suppresses both); with "
                 "max_output_boxes_per_class 0 valid_outputs is 0 (the plugin leaves it unwritten)")

for _v in (1, 3, 4):
    op("NonMaxSuppression", versions=(_v,), shape=_static_shape(_v), notes=_STATIC_NOTE)(
        lambda layer, _v=_v: _run(layer, _v))

op("NonMaxSuppression", versions=(5,), outputs=3, shape=dynamic_shape,
   notes=_DYNAMIC_NOTE + "; with soft_nms_sigma > 0, a box whose IoU exceeds iou_threshold is "
   "removed, as specified (the CPU plugin decays it as version 9 does)")(
    lambda layer: _run(layer, 5))
op("NonMaxSuppression", versions=(9,), outputs=3, shape=dynamic_shape, notes=_DYNAMIC_NOTE)(
    lambda layer: _run(layer, 9))
