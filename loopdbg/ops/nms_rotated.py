"""NMSRotated-13: NonMaxSuppression-9's greedy hard selection, with the IoU of rotated boxes.

Boxes are ``[x_center, y_center, width, height, angle]`` (radians; with ``clockwise`` a positive
angle turns the box clockwise in image coordinates, y pointing down). The IoU is the area of the
two rectangles' intersection polygon (one clipped by the other) over the union. As in
NonMaxSuppression-9, loopdbg follows the specification at the equalities: a box is suppressed when
its IoU is above ``iou_threshold`` and kept while its score is at least ``score_threshold``
(OpenVINO's CPU plugin suppresses at equality too). Outputs are ``[selected, 3]`` indices and
scores and the count, as for NonMaxSuppression-9.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import flag, index_dtype
from loopdbg.ops.nms import dynamic_shape, order_rows, scalar_input, select
from loopdbg.ops.registry import op

F64 = np.float64


def vertices(boxes: np.ndarray, clockwise: bool) -> np.ndarray:
    """``[n, 5]`` rotated boxes -> ``[n, 4, 2]`` corners, counter-clockwise with y up (which is
    clockwise on an image, y down: where a positive angle turns a box with ``clockwise``)."""
    b = np.asarray(boxes, F64)
    cx, cy, w, h, a = (b[:, i] for i in range(5))
    a = a if clockwise else -a
    cos, sin = np.cos(a), np.sin(a)
    local = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
    lx, ly = local[None, :, 0] * w[:, None], local[None, :, 1] * h[:, None]
    x = cx[:, None] + lx * cos[:, None] - ly * sin[:, None]
    y = cy[:, None] + lx * sin[:, None] + ly * cos[:, None]
    return np.stack([x, y], axis=-1)


def _clip(poly: list, a: np.ndarray, b: np.ndarray) -> list:
    """The part of convex polygon ``poly`` on the left of edge a -> b (Sutherland-Hodgman)."""
    out = []
    n = len(poly)
    for i in range(n):
        p, q = poly[i], poly[(i + 1) % n]
        sp = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
        sq = (b[0] - a[0]) * (q[1] - a[1]) - (b[1] - a[1]) * (q[0] - a[0])
        if sp >= 0:
            out.append(p)
        if (sp >= 0) != (sq >= 0):
            t = sp / (sp - sq)
            out.append(p + t * (q - p))
    return out


def _area(poly) -> float:
    if len(poly) < 3:
        return 0.0
    p = np.asarray(poly)
    x, y = p[:, 0], p[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def rotated_iou(v1: np.ndarray, v2: np.ndarray, area1: float, area2: float) -> float:
    if area1 <= 0 or area2 <= 0:
        return 0.0
    poly = list(v1)
    for i in range(4):
        poly = _clip(poly, v2[i], v2[(i + 1) % 4])
        if not poly:
            return 0.0
    inter = _area(poly)
    union = area1 + area2 - inter
    return inter / union if union > 0 else 0.0


def nms_rotated(boxes, scores, max_out, iou_thr, score_thr, *, sort_desc: bool,
                clockwise: bool) -> list:
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    if boxes.ndim != 3 or boxes.shape[2] != 5:
        raise ValueError(f"boxes must have shape [batches, boxes, 5], got {boxes.shape}")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise ValueError(f"scores {scores.shape} do not match boxes {boxes.shape}: expected "
                         f"[{boxes.shape[0]}, classes, {boxes.shape[1]}]")
    max_out = min(max_out, boxes.shape[1])
    rows: list = []
    if max_out <= 0:
        return rows
    b32 = boxes.astype(np.float32)
    for b in range(scores.shape[0]):
        v = vertices(b32[b], clockwise)
        area = b32[b, :, 2].astype(F64) * b32[b, :, 3]

        def overlap(k, rest, v=v, area=area):
            return np.array([rotated_iou(v[k], v[j], area[k], area[j]) for j in rest], F64)

        for k in range(scores.shape[1]):
            for i, s in select(b32[b], scores[b, k], max_out, iou_thr, score_thr, 0.0, False,
                               overlap):
                rows.append((b, k, i, s))
    return order_rows(rows, sort_desc)


@op("NMSRotated", versions=(13,), outputs=3, shape=dynamic_shape,
    notes="IoU equal to iou_threshold keeps a box and a score equal to score_threshold is kept, "
          "as specified (OpenVINO's CPU plugin suppresses both)")
def _nms_rotated13(layer: Layer):
    sort_desc = flag(layer, "sort_result_descending", True)
    clockwise = flag(layer, "clockwise", True)
    out_type = index_dtype(layer, "output_type", "i64")

    def run(boxes, scores, max_out, iou_thr, score_thr):
        rows = nms_rotated(boxes, scores, scalar_input(max_out, 0, int),
                           scalar_input(iou_thr, 0.0), scalar_input(score_thr, 0.0),
                           sort_desc=sort_desc, clockwise=clockwise)
        idx = np.array([r[:3] for r in rows], out_type).reshape(-1, 3)
        sc = np.array([(r[0], r[1], r[3]) for r in rows], np.float32).reshape(-1, 3)
        return idx, sc, np.array([len(rows)], out_type)

    return run
