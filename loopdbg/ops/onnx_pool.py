"""ONNX MaxPool, AveragePool and LpPool on loopdbg's own window arithmetic (``loopdbg.ops.conv``).

onnx.reference pools with Python loops (a [1, 16, 112, 112] AveragePool took five seconds) and
departs from the specification where onnxruntime follows it: MaxPool's ``auto_pad=SAME_LOWER``
output was a row short, its indices ignored ``storage_order`` (and were wrong in places), int8
data and 1-D windows with pads failed, and LpPool's ``ceil_mode`` windows disagreed. Here:

* ``kernel_shape`` (required), ``strides``, ``dilations`` (1 each by default) and ``pads``
  ([begins..., ends...]) or ``auto_pad``: VALID pads nothing, SAME_UPPER / SAME_LOWER give
  ``ceil(in / stride)`` outputs with the odd pad at the end / the beginning.
* ``ceil_mode`` rounds the output length up, but a window that would start in the end padding
  is dropped (``(out - 1) * stride >= in + pad_begin``), as the specification and onnxruntime say.
* MaxPool never picks a padded element; ties go to the first element in row-major window order.
  Its second output is each maximum's index into the whole tensor, flattened row-major
  (``storage_order=0``) or with the spatial axes column-major (``storage_order=1``).
* AveragePool divides by the input elements in the window (``count_include_pad=0``) or by the
  window's taps inside the padded input (``count_include_pad=1``).
* LpPool is ``(sum |x|^p) ^ (1/p)`` over the window, padding counting as 0.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, declared_outputs
from loopdbg.ops.conv import out_size, resolve_pads, windows
from loopdbg.ops.registry import op

_AUTO_PADS = {"NOTSET": "explicit", "VALID": "valid", "SAME_UPPER": "same_upper",
              "SAME_LOWER": "same_lower"}


def _ints(layer: Layer, name: str) -> list[int]:
    value = a(layer, name)
    return [] if value is None else [int(v) for v in np.ravel(value)]


class Window:
    """A pooling node's window attributes, parsed once; ``plan`` lays them on a data shape."""

    def __init__(self, layer: Layer, dilations: bool = True):
        self.kernel = _ints(layer, "kernel_shape")
        if not self.kernel:
            raise ValueError(f"{layer.type[5:]} needs kernel_shape")
        n = len(self.kernel)
        self.strides = _ints(layer, "strides") or [1] * n
        self.dilations = (_ints(layer, "dilations") if dilations else []) or [1] * n
        pads = _ints(layer, "pads") or [0] * 2 * n
        for name, values, count in (("strides", self.strides, n), ("dilations", self.dilations, n),
                                    ("pads", pads, 2 * n)):
            if len(values) != count:
                raise ValueError(f"{name} has {len(values)} values; kernel_shape {self.kernel} "
                                 f"needs {count}")
        if min(self.kernel + self.strides + self.dilations) < 1 or min(pads) < 0:
            raise ValueError("kernel_shape, strides and dilations must be positive and pads "
                             "not negative")
        self.begin, self.end = pads[:n], pads[n:]
        mode = a(layer, "auto_pad", "NOTSET")
        mode = (mode.decode() if isinstance(mode, bytes) else str(mode)).upper()
        if mode not in _AUTO_PADS:
            raise ValueError(f"auto_pad={mode!r} is not NOTSET, VALID, SAME_UPPER or SAME_LOWER")
        self.auto_pad = _AUTO_PADS[mode]
        self.ceil = bool(int(a(layer, "ceil_mode", 0)))

    def plan(self, x: np.ndarray) -> tuple[list[int], list[int], list[int]]:
        """(pads_begin, pads_end, output lengths) for data ``x`` [N, C, *spatial]."""
        sizes = x.shape[2:]
        if x.ndim < 3 or len(sizes) != len(self.kernel):
            raise ValueError(f"kernel_shape {self.kernel} pools {len(self.kernel)} spatial axes; "
                             f"the data has shape {list(x.shape)}")
        k, st, di = self.kernel, self.strides, self.dilations
        pb, pe = resolve_pads(self.auto_pad, sizes, k, st, di, self.begin, self.end)
        if self.auto_pad.startswith("same"):
            return pb, pe, [-(-size // s) for size, s in zip(sizes, st)]
        outs = []
        for size, kk, s, r, b, e in zip(sizes, k, st, di, pb, pe):
            o = out_size(size, kk, s, r, b, e, self.ceil)
            if self.ceil and o > 1 and (o - 1) * s >= size + b:
                o -= 1                                   # it would start in the end padding
            outs.append(o)
        return pb, pe, outs

    def taps(self, sizes, pb, outs):
        """Per spatial axis, each output's tap positions in the input [out, kernel]."""
        return [(np.arange(o) * s - b)[:, None] + np.arange(k) * r
                for o, s, b, k, r in zip(outs, self.strides, pb, self.kernel, self.dilations)]


def _lowest(dtype: np.dtype):
    """Below every value of the type: padding a MaxPool never picks."""
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def max_pool(win: Window, x: np.ndarray, with_indices: bool, column_major: bool = False):
    pb, pe, outs = win.plan(x)
    work = x if x.dtype.kind == "f" else x.astype(np.int64)     # room below the type's minimum
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(np.int64).min
    view = windows(work, win.kernel, win.strides, win.dilations, pb, pe, outs, pad_value=low)
    n_sp = len(win.kernel)
    if not with_indices:
        return np.max(view, axis=tuple(range(x.ndim, x.ndim + n_sp))).astype(x.dtype)
    flat = view.reshape(*view.shape[:x.ndim], -1)
    arg = np.argmax(flat, axis=-1)
    values = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    offsets = np.unravel_index(arg, win.kernel)
    sizes = x.shape[2:]
    order = range(n_sp - 1, -1, -1) if column_major else range(n_sp)
    index = np.zeros(arg.shape, dtype=np.int64)
    for d in order:
        start = np.arange(outs[d]) * win.strides[d] - pb[d]
        coord = start.reshape((-1,) + (1,) * (n_sp - 1 - d)) + offsets[d] * win.dilations[d]
        index = index * sizes[d] + coord
    plane = math.prod(sizes)
    base = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2]) * plane
    return values.astype(x.dtype), index + base.reshape(base.shape + (1,) * n_sp)


def _inside(win: Window, sizes, pb, pe, outs, padded: bool) -> np.ndarray:
    """How many taps of each window fall inside the input (or the padded input) [*outs]."""
    counts = np.ones((), dtype=np.float64)
    for t, size, b, e in zip(win.taps(sizes, pb, outs), sizes, pb, pe):
        lo, hi = (-b, size + e) if padded else (0, size)
        counts = counts[..., None] * ((t >= lo) & (t < hi)).sum(axis=1)
    return counts


def _sum_pool(win: Window, x: np.ndarray, pb, pe, outs) -> np.ndarray:
    work = np.float32 if x.dtype == np.float16 else x.dtype
    view = windows(x.astype(work, copy=False), win.kernel, win.strides, win.dilations, pb, pe,
                   outs)
    return np.sum(view, axis=tuple(range(x.ndim, x.ndim + len(win.kernel))))


def average_pool(win: Window, x: np.ndarray, count_pad: bool) -> np.ndarray:
    pb, pe, outs = win.plan(x)
    total = _sum_pool(win, x, pb, pe, outs)
    counts = _inside(win, x.shape[2:], pb, pe, outs, count_pad)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / counts.astype(total.dtype)).astype(x.dtype)


def lp_pool(win: Window, x: np.ndarray, p: float) -> np.ndarray:
    pb, pe, outs = win.plan(x)
    total = _sum_pool(win, np.abs(x) ** x.dtype.type(p), pb, pe, outs)
    return (total ** (1 / p)).astype(x.dtype)


@op("onnx.MaxPool", versions=(1, 8, 10, 11, 12, 22), outputs=declared_outputs)
def _max_pool(layer: Layer):
    win = Window(layer)
    column_major = int(a(layer, "storage_order", 0)) == 1
    with_indices = declared_outputs(layer) > 1

    def max_pool_(x):
        if x.dtype.kind not in "fiu":
            raise ValueError(f"MaxPool takes float or 8-bit integer data, not {x.dtype}")
        return max_pool(win, x, with_indices, column_major)

    return max_pool_


@op("onnx.AveragePool", versions=(1, 7, 10, 11, 19, 22))
def _average_pool(layer: Layer):
    win = Window(layer)
    count_pad = int(a(layer, "count_include_pad", 0)) == 1
    return lambda x: average_pool(win, x, count_pad)


@op("onnx.LpPool", versions=(1, 2, 11, 18, 22))
def _lp_pool(layer: Layer):
    win = Window(layer)
    p = float(a(layer, "p", 2))
    if p <= 0:
        raise ValueError(f"LpPool p={p:g} must be positive")
    return lambda x: lp_pool(win, x, p)
