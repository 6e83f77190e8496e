"""Cutting and padding: StridedSlice, Slice and Pad.

OpenVINO behaviour that numpy does not give for free (checked against the 2026.4 wheel):

* StridedSlice masks say which begin/end values to *ignore* (bit 1 = ignore); with them the op is
  numpy basic slicing, so ``::-1`` with end_mask includes index 0 and begin == end is empty.
* Slice-8 clamps start/stop like Python slices and accepts INT64_MAX/INT64_MIN as "to the end".
* Pad-12 accepts negative pads, which crop.

The shape rules of StridedSlice and Slice run the kernel itself on a zero-size-in-memory array of
the input's shape (``shape_rules.by_slicing``), so they cannot disagree with it.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import axis_of, choice, int_list, ints
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, by_slicing, dims, same_rank


# ---- StridedSlice, Slice ---------------------------------------------------------------------


@op("StridedSlice", shape=by_slicing)
def _strided_slice(layer: Layer):
    masks = {name: int_list(layer, name) for name in
             ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")}
    if sum(masks["ellipsis_mask"]) > 1:
        raise ValueError(f"ellipsis_mask {masks['ellipsis_mask']} sets more than one bit")

    def bit(name: str, i: int) -> bool:
        m = masks[name]
        return i < len(m) and m[i] != 0

    def strided_slice(x, begin, end, strides=None):
        b, e = ints(begin), ints(end)
        s = ints(strides) if strides is not None else [1] * len(b)
        if not len(b) == len(e) == len(s):
            raise ValueError(f"begin {b}, end {e} and strides {s} differ in length")
        index = []
        for i in range(len(b)):
            if bit("ellipsis_mask", i):
                index.append(Ellipsis)
            elif bit("new_axis_mask", i):
                index.append(None)
            elif bit("shrink_axis_mask", i):
                index.append(0 if bit("begin_mask", i) else b[i])
            else:
                if s[i] == 0:
                    raise ValueError(f"stride {i} is zero")
                index.append(slice(None if bit("begin_mask", i) else b[i],
                                   None if bit("end_mask", i) else e[i], s[i]))
        return x[tuple(index)]

    return strided_slice


@op("Slice", versions=(8,), shape=by_slicing)
def _slice(layer: Layer):
    def slice_(x, start, stop, step, axes=None):
        starts, stops, steps = ints(start), ints(stop), ints(step)
        which = ints(axes) if axes is not None else list(range(len(starts)))
        if not len(starts) == len(stops) == len(steps) == len(which):
            raise ValueError(f"start {starts}, stop {stops}, step {steps} and axes {which} differ "
                             f"in length")
        index = [slice(None)] * x.ndim
        seen = set()
        for a, lo, hi, st in zip(which, starts, stops, steps):
            a = axis_of(a, x.ndim)
            if a in seen:
                raise ValueError(f"axis {a} appears twice in axes {which}")
            if st == 0:
                raise ValueError("Slice step is zero")
            seen.add(a)
            index[a] = slice(lo, hi, st)
        return x[tuple(index)]

    return slice_


# ---- Pad -----------------------------------------------------------------------------------

_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect",
              "symmetric": "symmetric"}


def _pad_kernel(layer: Layer, allow_negative: bool):
    mode = _PAD_MODES[choice(layer, "pad_mode", tuple(_PAD_MODES), "constant")]

    def pad(x, pads_begin, pads_end, pad_value=None):
        begin, end = ints(pads_begin), ints(pads_end)
        if len(begin) != x.ndim or len(end) != x.ndim:
            raise ValueError(f"pads_begin {begin} and pads_end {end} need {x.ndim} entries")
        if min(begin + end, default=0) < 0:
            if not allow_negative:
                raise ValueError(f"Pad-1 does not accept negative pads ({begin}, {end})")
            x = x[tuple(slice(-min(b, 0), d + min(e, 0))
                        for b, e, d in zip(begin, end, x.shape))]
        widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
        if mode == "constant":
            value = 0 if pad_value is None else np.asarray(pad_value).reshape(()).item()
            return np.pad(x, widths, mode="constant", constant_values=value)
        return np.pad(x, widths, mode=mode)

    return pad


def _pad_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape, begin, end = ins[0].shape, dims(consts[1]), dims(consts[2])
    if shape is None or begin is None or end is None:
        return same_rank(ins[0])
    if not len(begin) == len(end) == len(shape):
        raise ValueError("pads do not match the rank")
    return TensorInfo(ins[0].type, tuple(-1 if d < 0 else d + b + e
                                         for d, b, e in zip(shape, begin, end)))


@op("Pad", shape=_pad_shape)
def _pad1(layer: Layer):
    return _pad_kernel(layer, allow_negative=False)


@op("Pad", versions=(12,), shape=_pad_shape)
def _pad12(layer: Layer):
    return _pad_kernel(layer, allow_negative=True)
