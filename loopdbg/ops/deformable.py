"""DeformableConvolution-1/8 and BinaryConvolution-1: 2-D convolutions that sample or compare
their input before the usual window sum.

DeformableConvolution moves every kernel tap of every output position by a learned offset:
``offsets`` is [N, DG * 2 * KH * KW, OH, OW], holding (dy, dx) for tap t = ky * KW + kx of
deformable group g at channels g * 2K + 2t and g * 2K + 2t + 1; input channel c belongs to group
c // (C / DG). The input is read at the moved point by bilinear interpolation, as OpenVINO's
reference does:

* without ``bilinear_interpolation_pad`` (version 1 always): a point outside [0, H) x [0, W) adds
  nothing; inside, the four neighbours are clamped into the image;
* with it (version 8): a point is skipped only when its coordinates truncate outside the image
  (beyond (-1, H) x (-1, W)), and neighbours outside read 0.

Version 8's optional ``mask`` [N, DG * KH * KW, OH, OW] scales each sampled tap. The samples are
gathered for every output position and tap at once (one loop over the KH * KW taps), then
multiplied with the filters as an im2col matrix, per group (``group``), in float32.

BinaryConvolution (mode ``xnor-popcount``) adds +1 where an input value equals its filter bit and
-1 where it does not, over the window: ``2 * matches - C * KH * KW``. The filters are ``u1``
(loopdbg reads them as 0/1); the padding holds ``pad_value``. Inputs other than 0 and 1 match no
bit, as in OpenVINO's reference.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, flag, float_attr, int_attr
from loopdbg.ops.conv import (
    auto_pad_attr,
    grouped_conv,
    out_size,
    pads_attr,
    per_axis,
    positive_list,
    resolve_pads,
)
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


class Window2D:
    """strides, dilations, pads and auto_pad of a 2-D convolution layer, parsed once."""

    def __init__(self, layer: Layer):
        self.strides = per_axis(positive_list(layer, "strides"), 2, "strides")
        self.dilations = per_axis(positive_list(layer, "dilations"), 2, "dilations")
        self.pads_begin, self.pads_end = pads_attr(layer, "pads_begin"), pads_attr(layer,
                                                                                   "pads_end")
        self.auto_pad = auto_pad_attr(layer)

    def plan(self, sizes, kernel):
        pb, pe = resolve_pads(self.auto_pad, sizes, kernel, self.strides, self.dilations,
                              self.pads_begin, self.pads_end)
        outs = [out_size(*a) for a in zip(sizes, kernel, self.strides, self.dilations, pb, pe)]
        return pb, pe, outs


def _check_4d(what: str, **arrays):
    for name, a in arrays.items():
        if a is not None and a.ndim != 4:
            raise ValueError(f"{what} takes a 4-D {name}, not {a.ndim}-D")


# ---- DeformableConvolution -------------------------------------------------------------------


def _bilinear(plane: np.ndarray, y: np.ndarray, x: np.ndarray, pad: bool) -> np.ndarray:
    """``plane`` [N, G, Cg, H, W] read at float32 points ``y``, ``x`` [N, G, 1, P]."""
    height, width = plane.shape[-2], plane.shape[-1]
    fy, fx = np.floor(y), np.floor(x)
    if pad:
        y1, x1 = fy.astype(np.int64), fx.astype(np.int64)
        y2, x2 = y1 + 1, x1 + 1
    else:
        y1, x1 = np.maximum(fy, 0).astype(np.int64), np.maximum(fx, 0).astype(np.int64)
        y2 = np.minimum(np.ceil(y), height - 1).astype(np.int64)
        x2 = np.minimum(np.ceil(x), width - 1).astype(np.int64)
    dx, dy = x - x1.astype(F32), y - y1.astype(F32)
    one = F32(1)
    flat = plane.reshape(*plane.shape[:-2], height * width)

    def read(yy, xx, ok):
        ok = ok & (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
        idx = np.where(ok, yy * width + xx, 0)
        values = np.take_along_axis(flat, np.broadcast_to(idx, (*flat.shape[:-1],
                                                                idx.shape[-1])), axis=-1)
        return np.where(ok, values, F32(0))

    v11 = read(y1, x1, (y1 >= 0) & (x1 >= 0))
    v21 = read(y1, x2, (y1 >= 0) & (x2 < width))
    v12 = read(y2, x1, (y2 < height) & (x1 >= 0))
    v22 = read(y2, x2, (y2 < height) & (x2 < width))
    return ((one - dx) * (one - dy) * v11 + (one - dx) * dy * v12 + dx * (one - dy) * v21
            + dx * dy * v22)


def deformable_conv(x, offsets, w, mask, win: Window2D, groups: int, deformable_groups: int,
                    pad: bool):
    _check_4d("DeformableConvolution", data=x, offsets=offsets, filters=w, mask=mask)
    n, c, height, width = x.shape
    o, cg, kh, kw = w.shape
    taps = kh * kw
    if c % groups or o % groups or cg * groups != c:
        raise ValueError(f"filters {list(w.shape)} do not fit {c} input channels in {groups} "
                         f"groups")
    if c % deformable_groups or offsets.shape[1] != deformable_groups * 2 * taps:
        raise ValueError(f"offsets of {offsets.shape[1]} channels do not fit "
                         f"{deformable_groups} deformable groups of {taps} taps")
    pb, _, outs = win.plan((height, width), (kh, kw))
    if list(offsets.shape[2:]) != outs or (mask is not None and (
            list(mask.shape[2:]) != outs or mask.shape[1] != deformable_groups * taps)):
        raise ValueError(f"offsets {list(offsets.shape)} or mask do not match the output "
                         f"positions {outs} and {taps} taps")
    dg = deformable_groups
    planes = x.astype(F32).reshape(n, dg, c // dg, height, width)
    off = offsets.astype(F32).reshape(n, dg, taps, 2, -1)
    scale = None if mask is None else mask.astype(F32).reshape(n, dg, taps, -1)
    base_y = (np.arange(outs[0]) * win.strides[0] - pb[0])[:, None]
    base_x = (np.arange(outs[1]) * win.strides[1] - pb[1])[None, :]
    cols = np.empty((n, dg, c // dg, taps, outs[0] * outs[1]), dtype=F32)
    for t in range(taps):
        ky, kx = divmod(t, kw)
        y = np.broadcast_to(base_y + ky * win.dilations[0], outs).reshape(-1)
        xx = np.broadcast_to(base_x + kx * win.dilations[1], outs).reshape(-1)
        py = (y.astype(F32) + off[:, :, t, 0])[:, :, None, :]           # [N, DG, 1, P]
        px = (xx.astype(F32) + off[:, :, t, 1])[:, :, None, :]
        if pad:
            inside = ((np.trunc(px) > -1) & (np.trunc(px) < width)
                      & (np.trunc(py) > -1) & (np.trunc(py) < height))
        else:
            inside = (px >= 0) & (px < width) & (py >= 0) & (py < height)
        sample = _bilinear(planes, py, px, pad)
        if scale is not None:
            sample = sample * scale[:, :, t][:, :, None, :]
        cols[:, :, :, t] = np.where(inside, sample, F32(0))
    # [N, C, K, P] -> per group [N*P, Cg*K] @ [Cg*K, Og]
    cols = cols.reshape(n, groups, cg, taps, -1).transpose(1, 0, 4, 2, 3)
    cols = cols.reshape(groups, -1, cg * taps)
    filters = w.astype(F32).reshape(groups, o // groups, cg * taps).transpose(0, 2, 1)
    y = np.matmul(cols, filters).reshape(groups, n, *outs, o // groups)
    return y.transpose(1, 0, 4, 2, 3).reshape(n, o, *outs).astype(x.dtype)


def _deformable_shape(layer: Layer, ins, consts) -> TensorInfo:
    x, w = ins[0].shape, ins[2].shape
    if x is None or w is None or len(x) != 4 or len(w) != 4:
        return TensorInfo(ins[0].type, (-1,) * 4)
    if min(x[2:]) < 0 or min(w[2:]) < 0:
        return TensorInfo(ins[0].type, (x[0], w[0], -1, -1))
    return TensorInfo(ins[0].type, (x[0], w[0], *Window2D(layer).plan(x[2:], w[2:])[2]))


def _deformable_factory(version: int):
    def factory(layer: Layer):
        win = Window2D(layer)
        groups = int_attr(layer, "group", 1)
        deformable_groups = int_attr(layer, "deformable_group", 1)
        if groups < 1 or deformable_groups < 1:
            raise ValueError("group and deformable_group must be positive")
        pad = version >= 8 and flag(layer, "bilinear_interpolation_pad")

        def run(x, offsets, w, mask=None):
            return deformable_conv(x, offsets, w, mask, win, groups, deformable_groups, pad)

        return run

    return factory


for _v in (1, 8):
    op("DeformableConvolution", versions=(_v,), shape=_deformable_shape)(_deformable_factory(_v))


# ---- BinaryConvolution -----------------------------------------------------------------------


def _binary_shape(layer: Layer, ins, consts) -> TensorInfo:
    x, w = ins[0].shape, ins[1].shape
    if x is None or w is None or len(x) != 4 or len(w) != 4:
        return TensorInfo(ins[0].type, (-1,) * 4)
    if min(x[2:]) < 0 or min(w[2:]) < 0:
        return TensorInfo(ins[0].type, (x[0], w[0], -1, -1))
    return TensorInfo(ins[0].type, (x[0], w[0], *Window2D(layer).plan(x[2:], w[2:])[2]))


@op("BinaryConvolution", versions=(1,), shape=_binary_shape,
    notes="loopdbg follows the specification and OpenVINO's reference implementation; the CPU "
          "plugin departs: it reads each byte of u1 filter bits least significant bit first, "
          "and agrees only on 0/1 data, pad_value 1 and channel counts that are multiples of 8.")
def _binary_convolution(layer: Layer):
    win = Window2D(layer)
    choice(layer, "mode", ("xnor-popcount",))
    pad_value = float_attr(layer, "pad_value")

    def binary(x, w):
        _check_4d("BinaryConvolution", data=x, filters=w)
        if w.shape[1] != x.shape[1]:
            raise ValueError(f"the filters expect {w.shape[1]} input channels, the data has "
                             f"{x.shape[1]}")
        pb, pe, outs = win.plan(x.shape[2:], w.shape[2:])
        padded = np.pad(x, [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])],
                        constant_values=np.asarray(pad_value).astype(x.dtype))
        bits = (np.asarray(w) != 0).astype(F32)[None]              # [1, O, C, KH, KW]
        ones = grouped_conv((padded == 1).astype(F32), bits, win.strides, win.dilations,
                            [0, 0], [0, 0], outs)
        zeros = grouped_conv((padded == 0).astype(F32), 1 - bits, win.strides, win.dilations,
                             [0, 0], [0, 0], outs)
        total = math.prod(w.shape[1:])
        return (2 * (ones + zeros) - total).astype(x.dtype)

    return binary
