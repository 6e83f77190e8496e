"""ROIAlign-3/9 and ROIAlignRotated-15: bilinear samples on a regular grid in each bin of a box,
pooled by average or maximum.

Each box is split into ``pooled_h x pooled_w`` bins, each bin sampled at ``sampling_ratio`` points
per axis (0: ``ceil(bin size)``), at the centres of equal sub-cells. A sample farther than one pixel
outside the map (below -1 or above the size) counts as 0; otherwise coordinates below 0 are
raised to 0 and the last row/column is repeated past the end. As in OpenVINO's reference and CPU
plugin, maximum pooling starts at 0 (a bin of negative samples pools to 0).

ROIAlign boxes are ``[x1, y1, x2, y2]``; ROIAlign-3 and ``aligned_mode="asymmetric"`` scale them by
``spatial_scale`` and make them at least 1x1; ``half_pixel_for_nn`` subtracts 0.5 after scaling,
``half_pixel`` adds 0.5 before and subtracts 0.5 after (no minimum size). ROIAlignRotated boxes are
``[x_center, y_center, width, height, angle]`` (radians, counter-clockwise unless ``clockwise``);
the centre is scaled then moved by -0.5 and the samples rotated about it.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, flag, float_attr, int_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


def bilinear_weights(x: np.ndarray, y: np.ndarray, h: int, w: int):
    """For sample points (any shape): the 4 (y, x) index pairs and weights, as in ROIAlign."""
    outside = (x < -1) | (x > w) | (y < -1) | (y > h)
    x = np.maximum(x, F32(0))
    y = np.maximum(y, F32(0))
    y_lo = np.floor(y).astype(np.int64)
    x_lo = np.floor(x).astype(np.int64)
    y_last, x_last = y_lo >= h - 1, x_lo >= w - 1
    y_lo = np.where(y_last, h - 1, y_lo)
    x_lo = np.where(x_last, w - 1, x_lo)
    y = np.where(y_last, y_lo.astype(F32), y)
    x = np.where(x_last, x_lo.astype(F32), x)
    y_hi = np.where(y_last, y_lo, y_lo + 1)
    x_hi = np.where(x_last, x_lo, x_lo + 1)
    ly, lx = (y - y_lo).astype(F32), (x - x_lo).astype(F32)
    hy, hx = F32(1) - ly, F32(1) - lx
    weights = [hy * hx, hy * lx, ly * hx, ly * lx]
    weights = [np.where(outside, F32(0), wt) for wt in weights]
    zero = np.zeros_like(y_lo)
    idx = [(y_lo, x_lo), (y_lo, x_hi), (y_hi, x_lo), (y_hi, x_hi)]
    idx = [(np.where(outside, zero, a), np.where(outside, zero, b)) for a, b in idx]
    return idx, weights


def pool_box(fmap: np.ndarray, x0, y0, bw, bh, ph: int, pw: int, ratio: int, avg: bool,
              rotate=None) -> np.ndarray:
    """One box of one feature map [C, H, W] -> [C, ph, pw]."""
    _, h, w = fmap.shape
    rx = ratio if ratio > 0 else math.ceil(bw)
    ry = ratio if ratio > 0 else math.ceil(bh)
    if rx <= 0 or ry <= 0:
        return np.zeros((fmap.shape[0], ph, pw), F32)
    dx, dy = F32(bw / F32(rx)), F32(bh / F32(ry))
    # sample coordinates [ph, pw, ry, rx]
    sy = (y0 + np.arange(ph, dtype=F32)[:, None, None, None] * bh
          + dy * (np.arange(ry, dtype=F32)[None, None, :, None] + F32(0.5)))
    sx = (x0 + np.arange(pw, dtype=F32)[None, :, None, None] * bw
          + dx * (np.arange(rx, dtype=F32)[None, None, None, :] + F32(0.5)))
    sy, sx = np.broadcast_arrays(sy, sx)
    if rotate is not None:
        sy, sx = rotate(sx, sy)
    idx, wts = bilinear_weights(sx.astype(F32), sy.astype(F32), h, w)
    value = 0
    for (yy, xx), wt in zip(idx, wts):
        value = value + wt * fmap[:, yy, xx]            # [C, ph, pw, ry, rx]
    value = value.reshape(value.shape[:3] + (-1,))
    if avg:
        return (value / F32(rx * ry)).sum(axis=-1, dtype=F32)
    return np.maximum(value.max(axis=-1), F32(0))


def _check(data, rois, batch, width: int):
    data, rois, batch = np.asarray(data), np.asarray(rois), np.asarray(batch)
    if data.ndim != 4:
        raise ValueError(f"the feature maps must be 4-D [N, C, H, W], got shape {data.shape}")
    if rois.ndim != 2 or rois.shape[1] != width:
        raise ValueError(f"the boxes must have shape [NUM_ROIS, {width}], got {rois.shape}")
    if batch.shape != (rois.shape[0],):
        raise ValueError(f"the batch indices must have shape [{rois.shape[0]}], got {batch.shape}")
    if batch.size and (batch.min() < 0 or batch.max() >= data.shape[0]):
        raise ValueError(f"a batch index is outside [0, {data.shape[0]})")
    return data, rois.astype(F32), batch.astype(np.int64)


def roi_align(data, rois, batch, *, ph: int, pw: int, ratio: int, scale: float, avg: bool,
              aligned: str = "asymmetric") -> np.ndarray:
    data, rois, batch = _check(data, rois, batch, 4)
    off_src = F32(0.5) if aligned == "half_pixel" else F32(0)
    off_dst = F32(0) if aligned == "asymmetric" else F32(-0.5)
    s = F32(scale)
    out = np.zeros((rois.shape[0], data.shape[1], ph, pw), F32)
    for r, (box, b) in enumerate(zip(rois, batch)):
        x1, y1, x2, y2 = ((box + off_src) * s + off_dst).astype(F32)
        bw, bh = x2 - x1, y2 - y1
        if aligned == "asymmetric":
            bw, bh = max(bw, F32(1)), max(bh, F32(1))
        out[r] = pool_box(data[b], x1, y1, F32(bw / F32(pw)), F32(bh / F32(ph)), ph, pw,
                           ratio, avg)
    return out.astype(data.dtype)


def roi_align_rotated(data, rois, batch, *, ph: int, pw: int, ratio: int, scale: float,
                      clockwise: bool) -> np.ndarray:
    data, rois, batch = _check(data, rois, batch, 5)
    s = F32(scale)
    out = np.zeros((rois.shape[0], data.shape[1], ph, pw), F32)
    for r, (box, b) in enumerate(zip(rois, batch)):
        cx, cy = box[0] * s - F32(0.5), box[1] * s - F32(0.5)
        bw, bh = box[2] * s, box[3] * s
        angle = -box[4] if clockwise else box[4]
        cos, sin = F32(np.cos(angle)), F32(np.sin(angle))

        def rotate(px, py, cx=cx, cy=cy, cos=cos, sin=sin):
            return py * cos - px * sin + cy, py * sin + px * cos + cx

        out[r] = pool_box(data[b], -bw / F32(2), -bh / F32(2), F32(bw / F32(pw)),
                           F32(bh / F32(ph)), ph, pw, ratio, True, rotate)
    return out.astype(data.dtype)


def _shape(layer: Layer, ins, consts) -> TensorInfo:
    n = ins[1].shape[0] if ins[1].shape else -1
    c = ins[0].shape[1] if ins[0].shape else -1
    return TensorInfo(ins[0].type, (n, c, int_attr(layer, "pooled_h"), int_attr(layer, "pooled_w")))


def _common(layer: Layer):
    ph, pw = int_attr(layer, "pooled_h"), int_attr(layer, "pooled_w")
    ratio = int_attr(layer, "sampling_ratio")
    if ph <= 0 or pw <= 0 or ratio < 0:
        raise ValueError(f"pooled_h={ph}, pooled_w={pw} must be positive and sampling_ratio="
                         f"{ratio} non-negative")
    return ph, pw, ratio, float_attr(layer, "spatial_scale")


_MAX_NOTE = ("mode=max pools from 0, as OpenVINO's reference and CPU plugin do; a bin with no "
             "samples (an inverted box with sampling_ratio 0) is 0, as in the reference (the CPU "
             "plugin gives NaN)")


@op("ROIAlign", versions=(3,), shape=_shape, notes=_MAX_NOTE)
def _roi_align3(layer: Layer):
    ph, pw, ratio, scale = _common(layer)
    avg = choice(layer, "mode", ("avg", "max")) == "avg"
    return lambda data, rois, batch: roi_align(data, rois, batch, ph=ph, pw=pw, ratio=ratio,
                                               scale=scale, avg=avg)


@op("ROIAlign", versions=(9,), shape=_shape, notes=_MAX_NOTE)
def _roi_align9(layer: Layer):
    ph, pw, ratio, scale = _common(layer)
    avg = choice(layer, "mode", ("avg", "max")) == "avg"
    aligned = choice(layer, "aligned_mode", ("asymmetric", "half_pixel_for_nn", "half_pixel"),
                     "asymmetric")
    return lambda data, rois, batch: roi_align(data, rois, batch, ph=ph, pw=pw, ratio=ratio,
                                               scale=scale, avg=avg, aligned=aligned)


@op("ROIAlignRotated", versions=(15,), shape=_shape)
def _roi_align_rotated15(layer: Layer):
    ph, pw, ratio, scale = _common(layer)
    clockwise = flag(layer, "clockwise_mode", False)
    return lambda data, rois, batch: roi_align_rotated(data, rois, batch, ph=ph, pw=pw,
                                                       ratio=ratio, scale=scale,
                                                       clockwise=clockwise)
