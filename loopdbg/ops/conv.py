"""Convolution-1 and GroupConvolution-1, and the sliding-window arithmetic every windowed op shares.

A convolution is one matrix product per image and group: the padded input is viewed as its
windows (``sliding_window_view``, strided and dilated by slicing the view), copied once into an
im2col matrix ``[C*kernel, out]`` (one copy per kernel offset) and multiplied by the filters
``[O, C*kernel]``, which gives the output in its own layout; no Python loop runs over output
pixels. float16 is computed in float32 and rounded once at the end; float32 and the
integer types are computed in their own type, as OpenVINO does.

Padding (``auto_pad``), as in OpenVINO's shape inference and the specification:

* ``explicit`` (and the old spelling ``notset``): ``pads_begin`` / ``pads_end``;
* ``valid``: no padding;
* ``same_upper`` / ``same_lower``: the total padding that makes the output ``ceil(in / stride)``
  long, ``max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in)``, split in two halves with
  the odd one at the end (upper) or at the beginning (lower); ``pads_begin`` / ``pads_end`` are
  ignored.

The output length along a spatial axis is ``floor((in + pads - (kernel - 1) * dilation - 1) /
stride) + 1``; a padded input shorter than the dilated kernel is an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, int_list
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

AUTO_PADS = ("explicit", "notset", "same_upper", "same_lower", "valid")


# ---- attributes (plan time) ------------------------------------------------------------------


def auto_pad_attr(layer: Layer) -> str:
    """``auto_pad``, lowercased; ``notset`` (an old spelling) reads as ``explicit``."""
    mode = choice(layer, "auto_pad", AUTO_PADS, "explicit") if layer.data.get("auto_pad") else \
        "explicit"
    return "explicit" if mode == "notset" else mode


def positive_list(layer: Layer, name: str, default: Sequence[int] = ()) -> list[int]:
    values = int_list(layer, name, default)
    if any(v <= 0 for v in values):
        raise ValueError(f"{name}={layer.data.get(name)!r} must hold positive integers")
    return values


def pads_attr(layer: Layer, name: str) -> list[int]:
    return int_list(layer, name, ())


def per_axis(values: Sequence[int], n: int, name: str, fill: int | None = None) -> list[int]:
    """``values`` checked to hold one entry per spatial axis (``fill`` stands in for an empty
    list)."""
    if not values and fill is not None:
        return [fill] * n
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} values for {n} spatial axes")
    return list(values)


# ---- window arithmetic (run time, and the shape rules) ---------------------------------------


def dilated(kernel: int, dilation: int) -> int:
    return (kernel - 1) * dilation + 1


def same_pads(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    """(begin, end) padding of ``same_upper`` / ``same_lower`` along one axis."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + dilated(kernel, dilation) - size)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def resolve_pads(auto_pad: str, sizes: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int],
                 pads_begin: Sequence[int], pads_end: Sequence[int]) -> tuple[list[int], list[int]]:
    """The (pads_begin, pads_end) ``auto_pad`` gives for these spatial sizes (-1: unknown, whose
    same_* pads are -1 too)."""
    n = len(sizes)
    if auto_pad == "valid":
        return [0] * n, [0] * n
    if auto_pad in ("same_upper", "same_lower"):
        pairs = [(-1, -1) if d < 0 else same_pads(d, k, s, r, auto_pad == "same_upper")
                 for d, k, s, r in zip(sizes, kernel, strides, dilations)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return per_axis(pads_begin, n, "pads_begin", 0), per_axis(pads_end, n, "pads_end", 0)


def out_size(size: int, kernel: int, stride: int, dilation: int, begin: int, end: int,
             ceil: bool = False) -> int:
    """The output length along one axis (-1 when ``size`` or a pad is unknown)."""
    if min(size, begin, end) < 0:
        return -1
    span = size + begin + end - dilated(kernel, dilation)
    if span < 0:
        raise ValueError(f"the dilated kernel ({dilated(kernel, dilation)}) is longer than the "
                         f"padded input ({size + begin + end})")
    return (-(-span // stride) if ceil else span // stride) + 1


def windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int], pads_begin: Sequence[int], pads_end: Sequence[int],
            outs: Sequence[int], pad_value=0) -> np.ndarray:
    """The windows of ``x``'s trailing spatial axes: a view ``[*lead, *outs, *kernel]``.

    ``x`` is padded with ``pad_value`` by ``pads_begin`` and at least ``pads_end`` (more when
    ``outs`` asks for windows past it, as ceil rounding does); negative pads crop.
    """
    n = len(kernel)
    lead = x.ndim - n
    widths, crop = [(0, 0)] * lead, [slice(None)] * lead
    for d, (b, e, o, k, s, r) in enumerate(zip(pads_begin, pads_end, outs, kernel, strides,
                                               dilations)):
        size = x.shape[lead + d]
        e = max(e, (o - 1) * s + dilated(k, r) - size - b)     # what the last window reaches
        widths.append((max(b, 0), max(e, 0)))
        crop.append(slice(max(-b, 0), size + max(b, 0) + e) if min(b, e) < 0 else slice(None))
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, mode="constant", constant_values=pad_value)
    if any(c != slice(None) for c in crop):
        x = x[tuple(crop)]
    view = sliding_window_view(x, [dilated(k, r) for k, r in zip(kernel, dilations)],
                               axis=tuple(range(lead, lead + n)))
    pick = [slice(None)] * lead + [slice(0, (o - 1) * s + 1, s) for o, s in zip(outs, strides)] \
        + [slice(None, None, r) for r in dilations]
    return view[tuple(pick)]


# ---- the convolution -------------------------------------------------------------------------


def grouped_conv(x: np.ndarray, w: np.ndarray, strides, dilations, pads_begin, pads_end,
                 outs) -> np.ndarray:
    """``x`` [N, G*Cg, *S] convolved with ``w`` [G, Og, Cg, *K]: [N, G*Og, *outs].

    The im2col matrix is laid out [Cg*K, P] per image and group (P: the output pixels), built by
    one strided copy per kernel offset, so the product is ``filters [Og, Cg*K] @ cols`` with
    the output already in [N, G, Og, P] order: one BLAS GEMM per image and group, and no copy
    after it."""
    groups, og, cg = w.shape[:3]
    kernel = w.shape[3:]
    work = np.float32 if x.dtype == np.float16 else x.dtype
    batch = x.shape[0]
    xg = x.astype(work, copy=False).reshape(batch, groups, cg, *x.shape[2:])
    view = windows(xg, kernel, strides, dilations, pads_begin, pads_end, outs)  # [N,G,Cg,*o,*K]
    cols = np.empty((batch, groups, cg, *kernel, *outs), dtype=work)
    lead = (slice(None),) * 3
    for kk in np.ndindex(*kernel):
        cols[lead + kk] = view[(Ellipsis, *kk)]
    cols = cols.reshape(batch, groups, cg * math.prod(kernel), math.prod(outs))
    mat = w.astype(work, copy=False).reshape(groups, og, cg * math.prod(kernel))
    y = np.matmul(mat, cols)                                            # [N, G, Og, P]
    return y.reshape(batch, groups * og, *outs).astype(x.dtype, copy=False)


def _conv_factory(layer: Layer, grouped: bool):
    strides = positive_list(layer, "strides")
    dilations = positive_list(layer, "dilations")
    pads_begin, pads_end = pads_attr(layer, "pads_begin"), pads_attr(layer, "pads_end")
    auto_pad = auto_pad_attr(layer)

    def conv(x, w):
        if grouped:
            if w.ndim != x.ndim + 1:
                raise ValueError(f"GroupConvolution filters of rank {w.ndim} do not fit data of "
                                 f"rank {x.ndim} (expected {x.ndim + 1})")
        else:
            if w.ndim != x.ndim:
                raise ValueError(f"Convolution filters of rank {w.ndim} do not fit data of rank "
                                 f"{x.ndim}")
            w = w[np.newaxis]
        n_sp = x.ndim - 2
        if n_sp < 1:
            raise ValueError(f"convolution data of rank {x.ndim} has no spatial axis")
        if w.shape[0] * w.shape[2] != x.shape[1]:
            raise ValueError(f"the filters expect {w.shape[0] * w.shape[2]} input channels, the "
                             f"data has {x.shape[1]}")
        kernel = w.shape[3:]
        st, di = per_axis(strides, n_sp, "strides"), per_axis(dilations, n_sp, "dilations")
        pb, pe = resolve_pads(auto_pad, x.shape[2:], kernel, st, di, pads_begin, pads_end)
        outs = [out_size(*a) for a in zip(x.shape[2:], kernel, st, di, pb, pe)]
        return grouped_conv(x, w, st, di, pb, pe, outs)

    return conv


def _conv_shape(grouped: bool):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        x, w = ins[0].shape, ins[1].shape
        if x is None or w is None:
            return TensorInfo(ins[0].type, None)
        n_sp = len(x) - 2
        kernel = w[3:] if grouped else w[2:]
        channels = w[0] * w[1] if grouped and min(w[0], w[1]) >= 0 else \
            (-1 if grouped else w[0])
        st = per_axis(positive_list(layer, "strides"), n_sp, "strides")
        di = per_axis(positive_list(layer, "dilations"), n_sp, "dilations")
        pb, pe = resolve_pads(auto_pad_attr(layer), x[2:], kernel, st, di,
                              pads_attr(layer, "pads_begin"), pads_attr(layer, "pads_end"))
        outs = [-1 if k < 0 else out_size(*a)
                for k, a in zip(kernel, zip(x[2:], kernel, st, di, pb, pe))]
        return TensorInfo(ins[0].type, (x[0], channels, *outs))

    return rule


@op("Convolution", versions=(1,), shape=_conv_shape(False))
def _convolution(layer: Layer):
    return _conv_factory(layer, grouped=False)


@op("GroupConvolution", versions=(1,), shape=_conv_shape(True))
def _group_convolution(layer: Layer):
    return _conv_factory(layer, grouped=True)


# ---- ConvolutionBackpropData, GroupConvolutionBackpropData -----------------------------------


def transposed_conv(x: np.ndarray, w: np.ndarray, strides, dilations, begin: Sequence[int],
                    outs: Sequence[int]) -> np.ndarray:
    """``x`` [N, G*Ci, *S] through the transpose of the convolution by ``w`` [G, Ci, Co, *K]:
    every input element scatters ``x * w`` to ``i * stride + k * dilation``; the output is that
    full result from ``begin`` on, ``outs`` long (zeros past either end)."""
    groups, ci, co = w.shape[:3]
    kernel = w.shape[3:]
    sizes = x.shape[2:]
    n_sp, batch = len(kernel), x.shape[0]
    work = np.float32 if x.dtype == np.float16 else x.dtype
    xs = x.astype(work, copy=False).reshape(batch, groups, ci, -1)          # [N, G, Ci, P]
    rows = xs.transpose(1, 0, 3, 2).reshape(groups, -1, ci)                 # [G, N*P, Ci]
    parts = np.matmul(rows, w.astype(work, copy=False).reshape(groups, ci, -1))
    parts = parts.reshape(groups, batch, *sizes, co, *kernel)               # [G, N, *S, Co, *K]
    parts = parts.transpose(1, 0, 2 + n_sp, *range(2, 2 + n_sp), *range(3 + n_sp, 3 + 2 * n_sp))
    full = [s * (n - 1) + dilated(k, d) for n, k, s, d in zip(sizes, kernel, strides, dilations)]
    buf = np.zeros((batch, groups, co, *full), dtype=work)
    for kk in np.ndindex(*kernel):
        where = tuple(slice(k * d, k * d + s * (n - 1) + 1, s)
                      for k, d, s, n in zip(kk, dilations, strides, sizes))
        buf[(Ellipsis, *where)] += parts[(Ellipsis, *kk)]
    out = np.zeros((batch, groups, co, *outs), dtype=work)
    src, dst = [], []
    for b, o, f in zip(begin, outs, full):
        lo, hi = max(b, 0), min(b + o, f)
        src.append(slice(lo, max(hi, lo)))
        dst.append(slice(lo - b, lo - b + max(hi - lo, 0)))
    out[(Ellipsis, *dst)] = buf[(Ellipsis, *src)]
    return out.reshape(batch, groups * co, *outs).astype(x.dtype, copy=False)


class Backprop:
    """The attributes of (Group)ConvolutionBackpropData, parsed once; ``plan`` lays them on the
    data, filter and output_shape."""

    def __init__(self, layer: Layer):
        self.strides = positive_list(layer, "strides")
        self.dilations = positive_list(layer, "dilations")
        self.pads_begin, self.pads_end = pads_attr(layer, "pads_begin"), pads_attr(layer,
                                                                                   "pads_end")
        self.output_padding = int_list(layer, "output_padding", ())
        self.auto_pad = auto_pad_attr(layer)

    def plan(self, sizes, kernel, output_shape=None):
        """(strides, dilations, begin, outs); -1 where a size is unknown."""
        n = len(sizes)
        st = per_axis(self.strides, n, "strides")
        di = per_axis(self.dilations, n, "dilations")
        op_ = per_axis(self.output_padding, n, "output_padding", fill=0)
        full = [-1 if min(z, k) < 0 else s * (z - 1) + dilated(k, d)
                for z, k, s, d in zip(sizes, kernel, st, di)]
        if output_shape is not None:
            outs = per_axis(list(output_shape), n, "output_shape")
            if self.auto_pad in ("same_upper", "same_lower"):
                begin = []
                for f, o, p in zip(full, outs, op_):
                    total = max(f + p - o, 0)
                    begin.append(-1 if f < 0 else
                                 total - total // 2 if self.auto_pad == "same_upper" else
                                 total // 2)
            elif self.auto_pad == "valid":
                begin = [0] * n
            else:
                begin = per_axis(self.pads_begin, n, "pads_begin", 0)
            return st, di, begin, outs
        if self.auto_pad == "explicit":
            pb = per_axis(self.pads_begin, n, "pads_begin", 0)
            pe = per_axis(self.pads_end, n, "pads_end", 0)
        else:
            pb = pe = [0] * n
        outs = [-1 if f < 0 else f - b - e + p for f, b, e, p in zip(full, pb, pe, op_)]
        if any(o == 0 or o < -1 for o in outs):
            raise ValueError(f"the output would have spatial shape {outs}")
        return st, di, pb, outs


def _backprop_factory(layer: Layer, grouped: bool):
    plan = Backprop(layer)
    what = "GroupConvolutionBackpropData" if grouped else "ConvolutionBackpropData"

    def backprop(x, w, output_shape=None):
        if w.ndim != x.ndim + int(grouped):
            raise ValueError(f"{what} filters of rank {w.ndim} do not fit data of rank {x.ndim}")
        if x.ndim < 3:
            raise ValueError(f"{what} data of rank {x.ndim} has no spatial axis")
        if not grouped:
            w = w[np.newaxis]
        if w.shape[0] * w.shape[1] != x.shape[1]:
            raise ValueError(f"the filters expect {w.shape[0] * w.shape[1]} input channels, the "
                             f"data has {x.shape[1]}")
        shape = None if output_shape is None else np.asarray(output_shape).reshape(-1).tolist()
        st, di, begin, outs = plan.plan(x.shape[2:], w.shape[3:], shape)
        if any(o < 0 for o in outs):
            raise ValueError(f"output_shape {outs} is negative")
        return transposed_conv(x, w, st, di, begin, outs)

    return backprop


def _backprop_shape(grouped: bool):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        x, w = ins[0].shape, ins[1].shape
        if x is None or w is None:
            return TensorInfo(ins[0].type, None)
        channels = (w[0] * w[2] if min(w[0], w[2]) >= 0 else -1) if grouped else w[1]
        kernel = w[3:] if grouped else w[2:]
        if len(ins) > 2:
            if consts[2] is None:
                return TensorInfo(ins[0].type, (x[0], channels) + (-1,) * (len(x) - 2))
            outs = [int(v) for v in np.ravel(consts[2])]
        else:
            outs = Backprop(layer).plan(x[2:], kernel)[3]
        return TensorInfo(ins[0].type, (x[0], channels, *outs))

    return rule


_BACKPROP_NOTES = ("With an output_shape input and auto_pad explicit or valid, the output begins "
                   "at pads_begin (0 for valid) and is cut or zero-extended at the end, as "
                   "OpenVINO's CPU plugin and reference implementation do; the specification "
                   "would ignore the pads and split the difference in halves.")


@op("ConvolutionBackpropData", versions=(1,), shape=_backprop_shape(False),
    notes=_BACKPROP_NOTES)
def _convolution_backprop_data(layer: Layer):
    return _backprop_factory(layer, grouped=False)


@op("GroupConvolutionBackpropData", versions=(1,), shape=_backprop_shape(True),
    notes=_BACKPROP_NOTES)
def _group_convolution_backprop_data(layer: Layer):
    return _backprop_factory(layer, grouped=True)
