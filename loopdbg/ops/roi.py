"""ROIPooling (opset 2), PSROIPooling-1 and DeformablePSROIPooling-1: pooling over boxes given as
``[batch_index, x1, y1, x2, y2]`` rows, as OpenVINO's reference implementations compute it.

* ROIPooling ``max``: the box, scaled and rounded (half away from zero), at least 1x1 pixel and
  inclusive of its last row/column, is split into ``pooled_h x pooled_w`` bins (``floor`` / ``ceil``
  of the bin edges), each the maximum of its pixels, an empty (clipped away) bin 0.
  ``bilinear``: the box is in coordinates normalised to [0, 1]; bin ``i`` of ``n`` samples the map
  at ``start + i * (end - start) / (n - 1)`` (the centre when n = 1), 0 outside the map.
* PSROIPooling: position-sensitive, bin (i, j) of output channel c reads input channel
  ``(c * group + i) * group + j`` (``average``: mean of the bin's pixels, box rounded and scaled
  with its last pixel included, a bin outside the map 0) or averages ``spatial_bins_x x
  spatial_bins_y`` bilinear samples from channel groups (``bilinear``).
* DeformablePSROIPooling: PSROIPooling with bins made of ``spatial_bins`` bilinear sub-samples,
  each bin optionally moved by ``offsets * trans_std * box size`` (the offsets input, ``part_size``
  cells per side), sub-samples more than half a pixel outside the map left out of the mean; a
  negative batch index gives zeros.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, float_attr, int_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


def round_half_away(x) -> np.ndarray:
    x = np.asarray(x, F32)
    return (np.sign(x) * np.floor(np.abs(x) + F32(0.5))).astype(F32)


def _rois(data, rois):
    data, rois = np.asarray(data), np.asarray(rois)
    if data.ndim != 4:
        raise ValueError(f"the feature maps must be 4-D [N, C, H, W], got shape {data.shape}")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise ValueError(f"the boxes must have shape [NUM_ROIS, 5], got {rois.shape}")
    return data, rois.astype(F32)


def _batch(value, n: int, allow_negative: bool = False) -> int:
    b = int(value)
    if b >= n or (b < 0 and not allow_negative):
        raise ValueError(f"box batch index {b} is outside [0, {n})")
    return b


def _lerp4(ch: np.ndarray, y: float, x: float, top: int, bottom: int, left: int, right: int):
    """Bilinear value of [..., H, W] maps at (y, x) from the given neighbour rows/columns."""
    tl, tr = ch[..., top, left], ch[..., top, right]
    bl, br = ch[..., bottom, left], ch[..., bottom, right]
    t = tl + (tr - tl) * F32(x - left)
    b = bl + (br - bl) * F32(x - left)
    return t + (b - t) * F32(y - top)


# ---- ROIPooling ------------------------------------------------------------------------------


def roi_pooling(data, rois, *, ph: int, pw: int, scale: float, method: str) -> np.ndarray:
    data, rois = _rois(data, rois)
    n, c, h, w = data.shape
    out = np.zeros((len(rois), c, ph, pw), F32)
    for r, roi in enumerate(rois):
        fm = data[_batch(roi[0], n)].astype(F32)
        if method == "max":
            x0, y0, x1, y1 = (int(v) for v in round_half_away(roi[1:] * F32(scale)))
            bh = F32(max(y1 - y0 + 1, 1)) / F32(ph)
            bw = F32(max(x1 - x0 + 1, 1)) / F32(pw)
            for i in range(ph):
                hs = min(max(math.floor(F32(i) * bh) + y0, 0), h)
                he = min(max(math.ceil(F32(i + 1) * bh) + y0, 0), h)
                for j in range(pw):
                    ws = min(max(math.floor(F32(j) * bw) + x0, 0), w)
                    we = min(max(math.ceil(F32(j + 1) * bw) + x0, 0), w)
                    if he > hs and we > ws:
                        out[r, :, i, j] = fm[:, hs:he, ws:we].max(axis=(1, 2))
            continue
        xs, ys, xe, ye = roi[1], roi[2], roi[3], roi[4]
        rh, rw = (ye - ys) * F32(h - 1), (xe - xs) * F32(w - 1)
        sh = rh / F32(ph - 1) if ph > 1 else F32(0)
        sw = rw / F32(pw - 1) if pw > 1 else F32(0)
        for i in range(ph):
            if ph > 1:
                y = F32(h - 1) * ye if i == ph - 1 else F32(i) * sh + ys * F32(h - 1)
            else:
                y = F32(0.5 * float(ys + ye) * (h - 1))
            for j in range(pw):
                if pw > 1:
                    x = F32(w - 1) * xe if j == pw - 1 else F32(j) * sw + xs * F32(w - 1)
                else:
                    x = F32(0.5 * float(xe + xs) * (w - 1))
                if y < 0 or y > h - 1 or x < 0 or x > w - 1:
                    continue
                top, left = math.floor(y), math.floor(x)
                bottom, right = min(math.ceil(y), h - 1), min(math.ceil(x), w - 1)
                out[r, :, i, j] = _lerp4(fm, y, x, top, bottom, left, right)
    return out.astype(data.dtype)


def _pooled_shape(channels):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        n = ins[1].shape[0] if ins[1].shape else -1
        c, ph, pw = channels(layer, ins)
        return TensorInfo(ins[0].type, (n, c, ph, pw))
    return rule


def _roi_pool_dims(layer: Layer):
    ph, pw = int_attr(layer, "pooled_h"), int_attr(layer, "pooled_w")
    if ph <= 0 or pw <= 0:
        raise ValueError(f"pooled_h={ph} and pooled_w={pw} must be positive")
    return ph, pw


@op("ROIPooling", versions=(2,), shape=_pooled_shape(
    lambda layer, ins: (ins[0].shape[1] if ins[0].shape else -1,) + _roi_pool_dims(layer)))
def _roi_pooling(layer: Layer):
    ph, pw = _roi_pool_dims(layer)
    scale = float_attr(layer, "spatial_scale")
    method = choice(layer, "method", ("max", "bilinear"), "max")
    return lambda data, rois: roi_pooling(data, rois, ph=ph, pw=pw, scale=scale, method=method)


# ---- PSROIPooling ----------------------------------------------------------------------------


def psroi_pooling(data, rois, *, out_dim: int, group: int, scale: float, bins_x: int,
                  bins_y: int, mode: str) -> np.ndarray:
    data, rois = _rois(data, rois)
    n, c_in, h, w = data.shape
    need = out_dim * (group * group if mode == "average" else bins_x * bins_y)
    if c_in != need:
        raise ValueError(f"the feature maps have {c_in} channels, {mode} PSROIPooling with these "
                         f"attributes reads {need}")
    out = np.zeros((len(rois), out_dim, group, group), F32)
    s = F32(scale)
    for r, roi in enumerate(rois):
        fm = data[_batch(roi[0], n)].astype(F32)
        if mode == "average":
            x0, y0 = round_half_away(roi[1]) * s, round_half_away(roi[2]) * s
            x1 = (round_half_away(roi[3]) + F32(1)) * s
            y1 = (round_half_away(roi[4]) + F32(1)) * s
            bw, bh = (x1 - x0) / F32(group), (y1 - y0) / F32(group)
            for i in range(group):
                hs = min(max(math.floor(y0 + F32(i) * bh), 0), h)
                he = min(max(math.ceil(y0 + F32(i + 1) * bh), 0), h)
                for j in range(group):
                    ws = min(max(math.floor(x0 + F32(j) * bw), 0), w)
                    we = min(max(math.ceil(x0 + F32(j + 1) * bw), 0), w)
                    chans = (np.arange(out_dim) * group + i) * group + j
                    cnt = (he - hs) * (we - ws)
                    if cnt > 0:
                        region = fm[chans, hs:he, ws:we]
                        out[r, :, i, j] = region.sum(axis=(1, 2), dtype=F32) / F32(cnt)
            continue
        x0, y0, x1, y1 = (roi[k] * s for k in range(1, 5))
        bw, bh = (x1 - x0) / F32(bins_x), (y1 - y0) / F32(bins_y)
        wsc = bw * F32(w - 1) / F32(group - 1) if group > 1 else F32(0)
        hsc = bh * F32(h - 1) / F32(group - 1) if group > 1 else F32(0)
        for i in range(group):
            for j in range(group):
                acc = np.zeros(out_dim, F32)
                for sby in range(bins_y):
                    for sbx in range(bins_x):
                        bx, by = x0 + F32(sbx) * bw, y0 + F32(sby) * bh
                        px = (F32(j) * wsc + bx * F32(w - 1) if group > 1
                              else (bx + bx + bw) * F32(w - 1) / F32(2))
                        py = (F32(i) * hsc + by * F32(h - 1) if group > 1
                              else (by + by + bh) * F32(h - 1) / F32(2))
                        if px < w and py < h:
                            px, py = max(px, F32(0)), max(py, F32(0))
                            left, top = math.floor(px), math.floor(py)
                            right, bottom = min(math.ceil(px), w - 1), min(math.ceil(py), h - 1)
                            chans = (sby * bins_x + sbx) * out_dim + np.arange(out_dim)
                            acc += _lerp4(fm[chans], py, px, top, bottom, left, right)
                out[r, :, i, j] = acc / F32(bins_x * bins_y)
    return out.astype(data.dtype)


def _ps_params(layer: Layer):
    out_dim, group = int_attr(layer, "output_dim"), int_attr(layer, "group_size", 1)
    bx, by = int_attr(layer, "spatial_bins_x", 1), int_attr(layer, "spatial_bins_y", 1)
    if min(out_dim, group, bx, by) <= 0:
        raise ValueError(f"output_dim={out_dim}, group_size={group} and the spatial bins "
                         f"({bx}, {by}) must be positive")
    return out_dim, group, bx, by


@op("PSROIPooling", shape=_pooled_shape(
    lambda layer, ins: (_ps_params(layer)[0],) + (_ps_params(layer)[1],) * 2),
    notes="average: a bin outside the map is 0, as in R-FCN and OpenVINO's CPU plugin (the "
          "reference reads the edge pixel); bilinear: samples left of or above the map read its "
          "edge (undefined in the reference)")
def _psroi_pooling1(layer: Layer):
    out_dim, group, bx, by = _ps_params(layer)
    scale = float_attr(layer, "spatial_scale")
    mode = choice(layer, "mode", ("average", "bilinear"), "average")
    return lambda data, rois: psroi_pooling(data, rois, out_dim=out_dim, group=group,
                                            scale=scale, bins_x=bx, bins_y=by, mode=mode)


# ---- DeformablePSROIPooling ------------------------------------------------------------------


def deformable_psroi(data, rois, offsets, *, out_dim: int, group: int, scale: float,
                     bins_x: int, bins_y: int, trans_std: float, part: int) -> np.ndarray:
    data, rois = _rois(data, rois)
    n, c_in, h, w = data.shape
    if c_in < out_dim * group * group:
        raise ValueError(f"the feature maps have {c_in} channels, DeformablePSROIPooling reads "
                         f"{out_dim * group * group}")
    if offsets is not None:
        offsets = np.asarray(offsets, F32)
        if offsets.ndim != 4 or offsets.shape[0] < len(rois) or offsets.shape[1] < 2:
            raise ValueError(f"the offsets must be [NUM_ROIS, 2 * classes, part_size, part_size], "
                             f"got {offsets.shape}")
        coord_sub = offsets.shape[1] // 2
        class_sub = max(out_dim // coord_sub, 1)
        flat = offsets.reshape(-1)
        if flat.size < len(rois) * coord_sub * 2 * part * part:
            raise ValueError(f"the offsets {offsets.shape} hold fewer than part_size={part} "
                             f"cells per side")
    out = np.zeros((len(rois), out_dim, group, group), F32)
    s = F32(scale)
    for r, roi in enumerate(rois):
        b = _batch(roi[0], n, allow_negative=True)
        if b < 0:
            continue
        fm = data[b].astype(F32)
        x1 = round_half_away(roi[1]) * s - F32(0.5)
        y1 = round_half_away(roi[2]) * s - F32(0.5)
        x2 = (round_half_away(roi[3]) + F32(1)) * s - F32(0.5)
        y2 = (round_half_away(roi[4]) + F32(1)) * s - F32(0.5)
        rw, rh = max(x2 - x1, F32(0.1)), max(y2 - y1, F32(0.1))
        bw, bh = rw / F32(group), rh / F32(group)
        sbw, sbh = bw / F32(bins_x), bh / F32(bins_y)
        for c in range(out_dim):
            for i in range(group):
                for j in range(group):
                    bx, by = x1 + F32(j) * bw, y1 + F32(i) * bh
                    if offsets is not None:     # flat indices, as the reference reads them
                        oc = (r * coord_sub + c // class_sub) * 2
                        pi, pj = i * part // group, j * part // group
                        ox = flat[(oc * part + pi) * part + pj] * F32(trans_std)
                        oy = flat[((oc + 1) * part + pi) * part + pj] * F32(trans_std)
                        bx, by = bx + ox * rw, by + oy * rh
                    ch = fm[(c * group + i) * group + j]
                    total, count = F32(0), 0
                    for sy in range(bins_y):
                        y = by + F32(sy) * sbh
                        if y < -0.5 or y > h - 0.5:
                            continue
                        for sx in range(bins_x):
                            x = bx + F32(sx) * sbw
                            if x < -0.5 or x > w - 0.5:
                                continue
                            xc = min(max(x, F32(0)), F32(w - 1))
                            yc = min(max(y, F32(0)), F32(h - 1))
                            total += _lerp4(ch, yc, xc, math.floor(yc), math.ceil(yc),
                                            math.floor(xc), math.ceil(xc))
                            count += 1
                    if count:
                        out[r, c, i, j] = total / F32(count)
    return out.astype(data.dtype)


@op("DeformablePSROIPooling", shape=_pooled_shape(
    lambda layer, ins: (int_attr(layer, "output_dim"),) + (int_attr(layer, "group_size", 1),) * 2))
def _deformable_psroi1(layer: Layer):
    out_dim, group, bx, by = _ps_params(layer)
    scale = float_attr(layer, "spatial_scale")
    choice(layer, "mode", ("bilinear_deformable", "average"), "bilinear_deformable")
    trans_std = float_attr(layer, "trans_std", 1.0)
    part = int_attr(layer, "part_size", 1)
    if part <= 0:
        raise ValueError(f"part_size={part} must be positive")

    def run(data, rois, offsets=None):
        return deformable_psroi(data, rois, offsets, out_dim=out_dim, group=group, scale=scale,
                                bins_x=bx, bins_y=by, trans_std=trans_std, part=part)
    return run
