"""ONNX NonMaxSuppression on loopdbg's greedy selection (``loopdbg.ops.nms``).

onnx.reference failed on the specification's own form of the optional inputs: a scalar
``max_output_boxes_per_class`` (it indexes ``[0]``), and an absent one (which means 0: nothing is
selected). Here, per batch and class, in that order: the highest-scoring box left is selected
(ties: the lowest index) while its score is above ``score_threshold`` (absent: every box) and
fewer than ``max_output_boxes_per_class`` are selected; every box whose IoU with it is above
``iou_threshold`` (absent: 0) is removed. Boxes are ``[y1, x1, y2, x2]`` corners of either
diagonal, or ``[x_center, y_center, width, height]`` with ``center_point_box=1``; a box of no area
overlaps nothing. The output is ``[selected, 3]`` int64 rows of (batch, class, box).
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a
from loopdbg.ops.nms import F32, non_max_suppression, scalar_input
from loopdbg.ops.registry import op


@op("onnx.NonMaxSuppression", versions=(10, 11))
def _non_max_suppression(layer: Layer):
    center = int(a(layer, "center_point_box", 0))
    if center not in (0, 1):
        raise ValueError(f"center_point_box={center} is not 0 or 1")

    def nms(boxes, scores, max_out=None, iou_thr=None, score_thr=None):
        # a score must be above the threshold: at least the next float32 up
        above = None if score_thr is None else \
            np.nextafter(F32(scalar_input(score_thr, 0.0)), F32(np.inf))
        rows = non_max_suppression(boxes, scores, scalar_input(max_out, 0, int),
                                   scalar_input(iou_thr, 0.0),
                                   -np.inf if above is None else float(above), 0.0,
                                   center=bool(center), sort_desc=False, soft_by_iou=False)
        return np.array([r[:3] for r in rows], np.int64).reshape(-1, 3)

    return nms
