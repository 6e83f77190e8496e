"""ONNX Conv and ConvTranspose on loopdbg's own convolution kernels (``loopdbg.ops.conv``).

onnx.reference convolves with Python loops over images and channels: a refinement loop of 3x3
convolutions spent most of its time there. These kernels lay ONNX's attributes on the im2col
convolution and the scattered transposed convolution that OpenVINO's Convolution layers use:

* Conv: ``W`` [M, C/group, *K] is the grouped filter [group, M/group, C/group, *K]; ``pads`` is
  [begins..., ends...]; ``auto_pad`` NOTSET reads the pads, VALID pads nothing, SAME_UPPER /
  SAME_LOWER pad to ``ceil(in / stride)`` outputs with the odd pad at the end / the beginning;
  ``kernel_shape``, when given, must be W's; the bias ``B`` [M] is added per channel.
* ConvTranspose: ``W`` [C, M/group, *K]; the output is the full transposed convolution from
  ``pads``' begins on, ``output_shape`` long when given (else the full length plus
  ``output_padding`` less both pads); SAME_UPPER / SAME_LOWER without pads aim at
  ``in * stride`` (or ``output_shape``) and split the total padding with the odd one at the
  beginning for SAME_LOWER, as onnx.reference does.

float16 is computed in float32 and rounded once; float32 and float64 in their own type.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a
from loopdbg.ops.conv import dilated, grouped_conv, out_size, resolve_pads, transposed_conv
from loopdbg.ops.registry import op


def _ints(layer: Layer, name: str) -> list[int] | None:
    value = a(layer, name)
    return None if value is None else [int(v) for v in np.ravel(value)]


def _spatial(values: list[int] | None, n: int, name: str, fill: int) -> list[int]:
    if values is None or not values:
        return [fill] * n
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} values for {n} spatial axes")
    return values


def _mode(layer: Layer) -> str:
    mode = a(layer, "auto_pad", "NOTSET")
    mode = (mode.decode() if isinstance(mode, bytes) else str(mode)).upper()
    if mode not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"auto_pad={mode!r} is not NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    return mode


class _Attrs:
    """The attributes both operators share, parsed once."""

    def __init__(self, layer: Layer):
        self.mode = _mode(layer)
        self.group = int(a(layer, "group", 1))
        if self.group < 1:
            raise ValueError(f"group={self.group} must be positive")
        self.strides, self.dilations = _ints(layer, "strides"), _ints(layer, "dilations")
        self.pads, self.kernel_shape = _ints(layer, "pads"), _ints(layer, "kernel_shape")
        for name in ("strides", "dilations"):
            if any(v <= 0 for v in getattr(self, name) or ()):
                raise ValueError(f"{name} must hold positive integers")

    def check(self, x: np.ndarray, w: np.ndarray, what: str) -> int:
        """The number of spatial axes, after checking the ranks and the kernel shape."""
        if x.ndim < 3 or w.ndim != x.ndim:
            raise ValueError(f"{what} takes X and W of one rank, at least 3 (got {x.ndim} and "
                             f"{w.ndim})")
        n = x.ndim - 2
        if self.kernel_shape and list(self.kernel_shape) != list(w.shape[2:]):
            raise ValueError(f"kernel_shape {self.kernel_shape} is not W's {list(w.shape[2:])}")
        return n

    def axes(self, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
        """(strides, dilations, pads_begin, pads_end) for ``n`` spatial axes."""
        st = _spatial(self.strides, n, "strides", 1)
        di = _spatial(self.dilations, n, "dilations", 1)
        pads = _spatial(self.pads, 2 * n, "pads", 0)
        return st, di, pads[:n], pads[n:]


def _bias(y: np.ndarray, b, channels: int) -> np.ndarray:
    if b is None:
        return y
    b = np.asarray(b)
    if b.size != channels:
        raise ValueError(f"B has {b.size} values for {channels} output channels")
    return (y + b.reshape(1, -1, *[1] * (y.ndim - 2))).astype(y.dtype, copy=False)


@op("onnx.Conv", versions=(1, 11, 22))
def _conv(layer: Layer):
    attrs = _Attrs(layer)
    mode = {"NOTSET": "explicit", "VALID": "valid"}.get(attrs.mode, attrs.mode.lower())

    def conv(x, w, b=None):
        n = attrs.check(x, w, "Conv")
        g = attrs.group
        if w.shape[0] % g or w.shape[1] * g != x.shape[1]:
            raise ValueError(f"W {w.shape} with group={g} does not fit X's {x.shape[1]} "
                             f"channels")
        st, di, begin, end = attrs.axes(n)
        kernel = w.shape[2:]
        pb, pe = resolve_pads(mode, x.shape[2:], kernel, st, di, begin, end)
        outs = [out_size(*v) for v in zip(x.shape[2:], kernel, st, di, pb, pe)]
        wg = w.reshape(g, w.shape[0] // g, *w.shape[1:])
        return _bias(grouped_conv(x, wg, st, di, pb, pe, outs), b, w.shape[0])

    return conv


@op("onnx.ConvTranspose", versions=(1, 11, 22))
def _conv_transpose(layer: Layer):
    attrs = _Attrs(layer)
    output_padding = _ints(layer, "output_padding")
    output_shape = _ints(layer, "output_shape")

    def conv_transpose(x, w, b=None):
        n = attrs.check(x, w, "ConvTranspose")
        g = attrs.group
        if w.shape[0] != x.shape[1] or w.shape[0] % g:
            raise ValueError(f"W {w.shape} with group={g} does not fit X's {x.shape[1]} "
                             f"channels")
        st, di, begin, end = attrs.axes(n)
        kernel, sizes = w.shape[2:], x.shape[2:]
        op_ = _spatial(output_padding, n, "output_padding", 0)
        full = [s * (z - 1) + dilated(k, d) for z, k, s, d in zip(sizes, kernel, st, di)]
        shape = None if output_shape is None else output_shape[-n:]
        if attrs.pads is None and attrs.mode in ("SAME_UPPER", "SAME_LOWER"):
            outs = shape or [z * s for z, s in zip(sizes, st)]
            total = [f + p - o for f, p, o in zip(full, op_, outs)]
            begin = [t // 2 if attrs.mode == "SAME_UPPER" else t - t // 2 for t in total]
        else:
            outs = shape or [f + p - pb - pe for f, p, pb, pe in zip(full, op_, begin, end)]
        if any(o <= 0 for o in outs):
            raise ValueError(f"the output would have spatial shape {outs}")
        wg = w.reshape(g, w.shape[0] // g, *w.shape[1:])
        y = transposed_conv(x, wg, st, di, begin, outs)
        return _bias(y, b, w.shape[1] * g)

    return conv_transpose
