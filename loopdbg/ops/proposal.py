"""Proposal-1/4: Faster R-CNN's region proposals from anchor scores and box deltas.

As OpenVINO's reference computes it (float32): anchors of ``base_size`` for every ``ratio`` x
``scale`` (Caffe rounds their sizes and counts pixel edges, +1; ``framework="tensorflow"`` does
neither, clips the anchors to the image first, centres them on the cell and swaps the grid's x and
y), placed every ``feat_stride`` pixels and moved by the deltas (divided by ``box_coordinate_scale``
/ ``box_size_scale``); boxes smaller than ``min_size`` times the image scale score 0. The best
``pre_nms_topn`` (ties by position) go through NMS (IoU above ``nms_thresh``), keeping at most
``post_nms_topn`` per image as ``[image, x0, y0, x1, y1]`` rows, optionally clipped to the image
and divided by its size (``normalize``). Unused rows are 0, the first of them starting with -1.
Proposal-4 also returns the kept scores (0 in unused rows, which OpenVINO's CPU plugin leaves
unwritten). ``image_info`` is ``[height, width, scale]`` or ``[height, width, scale_h, scale_w]``;
with ``framework="tensorflow"`` the height and width bound x and y the other way round, as the CPU
plugin reads them. Boxes of equal score (those under ``min_size`` all score 0) keep their position
order, where OpenVINO leaves it to ``std::partial_sort``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import flag, float_attr, int_attr
from loopdbg.ops.priors import floats
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


class Attrs:
    def __init__(self, layer: Layer):
        self.base_size = int_attr(layer, "base_size")
        self.pre = int_attr(layer, "pre_nms_topn")
        self.post = int_attr(layer, "post_nms_topn")
        self.nms = float_attr(layer, "nms_thresh")
        self.stride = int_attr(layer, "feat_stride")
        self.min_size = int_attr(layer, "min_size")
        self.ratio, self.scale = floats(layer, "ratio"), floats(layer, "scale")
        self.clip_before = flag(layer, "clip_before_nms", True)
        self.clip_after = flag(layer, "clip_after_nms")
        self.normalize = flag(layer, "normalize")
        self.box_size_scale = float_attr(layer, "box_size_scale", 1.0)
        self.box_coordinate_scale = float_attr(layer, "box_coordinate_scale", 1.0)
        self.tf = layer.data.get("framework", "").strip().lower() == "tensorflow"
        if min(self.base_size, self.pre, self.post, self.stride) <= 0 or not self.ratio \
                or not self.scale:
            raise ValueError("base_size, pre_nms_topn, post_nms_topn and feat_stride must be "
                             "positive and ratio, scale non-empty")


def anchors(a: Attrs) -> np.ndarray:
    """``[ratios * scales, 4]`` (x0, y0, x1, y1) about the first cell."""
    off = F32(0) if a.tf else F32(1)
    base = a.base_size
    area, half, centre = F32(base * base), F32(base * 0.5), F32(0.5) * (F32(base) - off)
    out = []
    for r in a.ratio:
        r = F32(r)
        if a.tf:
            rw = np.sqrt(area / r)
            rh = rw * r
        else:
            rw = F32(np.floor(np.sqrt(area / r) + F32(0.5)))
            rh = F32(np.floor(rw * r + F32(0.5)))
        for s in a.scale:
            sw = F32(0.5) * (rw * F32(s) - off)
            sh = F32(0.5) * (rh * F32(s) - off)
            box = [centre - sw, centre - sh, centre + sw, centre + sh]
            if a.tf:
                box = [v - half for v in box]
            out.append(box)
    return np.array(out, F32)


def _nms(boxes: np.ndarray, thresh: float, max_out: int, off) -> list[int]:
    dead = np.zeros(len(boxes), bool)
    keep: list[int] = []
    for i in range(len(boxes)):
        if dead[i]:
            continue
        keep.append(i)
        if len(keep) == max_out:
            break
        bi, rest = boxes[i], boxes[i + 1:]
        touch = ((bi[0] <= rest[:, 2]) & (bi[1] <= rest[:, 3]) & (rest[:, 0] <= bi[2])
                 & (rest[:, 1] <= bi[3]))
        w = np.maximum(F32(0), np.minimum(bi[2], rest[:, 2]) - np.maximum(bi[0], rest[:, 0]) + off)
        h = np.maximum(F32(0), np.minimum(bi[3], rest[:, 3]) - np.maximum(bi[1], rest[:, 1]) + off)
        inter = w * h
        area_i = (bi[2] - bi[0] + off) * (bi[3] - bi[1] + off)
        area_r = (rest[:, 2] - rest[:, 0] + off) * (rest[:, 3] - rest[:, 1] + off)
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = np.where(touch, inter / (area_i + area_r - inter), F32(0))
        dead[i + 1:] |= F32(thresh) < iou
    return keep


def proposal(probs, deltas, info, a: Attrs):
    probs, deltas, info = np.asarray(probs), np.asarray(deltas), np.asarray(info)
    dtype = probs.dtype
    if probs.ndim != 4 or probs.shape[1] % 2 or deltas.shape != (
            probs.shape[0], probs.shape[1] * 2) + probs.shape[2:]:
        raise ValueError(f"class probabilities {probs.shape} and box deltas {deltas.shape} must "
                         f"be [N, 2A, H, W] and [N, 4A, H, W]")
    info = info.reshape(-1).astype(F32)
    if info.size not in (3, 4):
        raise ValueError(f"image_info must hold 3 or 4 values, got {info.size}")
    n, n_a, hh, ww = probs.shape[0], probs.shape[1] // 2, probs.shape[2], probs.shape[3]
    if n_a != len(a.ratio) * len(a.scale):
        raise ValueError(f"{n_a} anchors per cell, but ratio x scale gives "
                         f"{len(a.ratio) * len(a.scale)}")
    img_h, img_w = info[0], info[1]
    min_h = F32(a.min_size) * info[2]
    min_w = F32(a.min_size) * (info[3] if info.size == 4 else info[2])
    img_h, img_w = (img_w, img_h) if a.tf else (img_h, img_w)
    off = F32(0) if a.tf else F32(1)
    anc = anchors(a)
    gy, gx = np.meshgrid(np.arange(hh), np.arange(ww), indexing="ij")
    if a.tf:
        gx, gy = gy, gx
    x = (gx * a.stride).astype(F32)[:, :, None]
    y = (gy * a.stride).astype(F32)[:, :, None]
    rois = np.zeros((n, a.post, 5), F32)
    scores_out = np.zeros((n, a.post), F32)
    for b in range(n):
        d = deltas[b].astype(F32).reshape(n_a, 4, hh, ww).transpose(2, 3, 0, 1)   # H, W, A, 4
        score = probs[b, n_a:].astype(F32).transpose(1, 2, 0)                    # H, W, A
        x0, y0 = x + anc[:, 0], y + anc[:, 1]
        x1, y1 = x + anc[:, 2], y + anc[:, 3]
        if a.tf:
            x0, x1 = np.clip(x0, F32(0), img_w), np.clip(x1, F32(0), img_w)
            y0, y1 = np.clip(y0, F32(0), img_h), np.clip(y1, F32(0), img_h)
        bw, bh = x1 - x0 + off, y1 - y0 + off
        cx, cy = x0 + F32(0.5) * bw, y0 + F32(0.5) * bh
        dx = d[..., 0] / F32(a.box_coordinate_scale)
        dy = d[..., 1] / F32(a.box_coordinate_scale)
        with np.errstate(over="ignore"):
            pw = np.exp(d[..., 2] / F32(a.box_size_scale)).astype(F32) * bw
            ph = np.exp(d[..., 3] / F32(a.box_size_scale)).astype(F32) * bh
        px, py = dx * bw + cx, dy * bh + cy
        x0, y0 = px - F32(0.5) * pw, py - F32(0.5) * ph
        x1, y1 = px + F32(0.5) * pw, py + F32(0.5) * ph
        if a.clip_before:
            x0, x1 = (np.clip(v, F32(0), img_w - off) for v in (x0, x1))
            y0, y1 = (np.clip(v, F32(0), img_h - off) for v in (y0, y1))
        ok = (min_w <= x1 - x0 + off) & (min_h <= y1 - y0 + off)
        sc = (ok.astype(F32) * score).reshape(-1)
        boxes = np.stack([x0, y0, x1, y1], -1).reshape(-1, 4).astype(F32)
        order = np.argsort(-sc, kind="stable")[:min(a.pre, sc.size)]
        keep = order[_nms(boxes[order], a.nms, a.post, off)]
        kept = boxes[keep]
        if a.clip_after:
            kept = np.stack([np.clip(kept[:, 0], 0, img_w), np.clip(kept[:, 1], 0, img_h),
                             np.clip(kept[:, 2], 0, img_w), np.clip(kept[:, 3], 0, img_h)], 1)
        if a.normalize:
            kept = kept / np.array([img_w, img_h, img_w, img_h], F32)
        k = len(keep)
        rois[b, :k, 0] = b
        rois[b, :k, 1:] = kept
        scores_out[b, :k] = sc[keep]
        if k < a.post:
            rois[b, k, 0] = -1
    return rois.reshape(-1, 5).astype(dtype), scores_out.reshape(-1).astype(dtype)


def _shape(version: int):
    def rule(layer: Layer, ins, consts):
        post = int_attr(layer, "post_nms_topn")
        n = ins[0].shape[0] if ins[0].shape and ins[0].shape[0] != -1 else None
        rows = -1 if n is None else n * post
        out = [TensorInfo(ins[0].type, (rows, 5))]
        return out + [TensorInfo(ins[0].type, (rows,))] if version == 4 else out[0]
    return rule


_NOTE = ("boxes of equal score (those under min_size score 0) keep their position order, which "
         "OpenVINO leaves to std::partial_sort")


@op("Proposal", versions=(1,), shape=_shape(1), notes=_NOTE)
def _proposal1(layer: Layer):
    a = Attrs(layer)
    return lambda probs, deltas, info: proposal(probs, deltas, info, a)[0]


@op("Proposal", versions=(4,), outputs=2, shape=_shape(4),
    notes=_NOTE + "; unused score rows are 0 (the CPU plugin leaves them unwritten)")
def _proposal4(layer: Layer):
    a = Attrs(layer)
    return lambda probs, deltas, info: proposal(probs, deltas, info, a)
