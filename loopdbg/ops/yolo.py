"""RegionYolo-1 and ReorgYolo (opset 2): the YOLO v2/v3 head layers.

RegionYolo sees each image's channels as ``regions x (coords + 1 + classes)`` maps. It applies the
logistic function to the box centre (the first two coordinates) and the objectness of every region;
with ``do_softmax`` (YOLO v2: ``num`` regions) it takes a softmax over the classes at each
location and flattens axes ``axis..end_axis``; without it (YOLO v3: ``len(mask)`` regions) it
applies the logistic function to the class scores too and keeps the 4-D layout. Everything else
is copied. Each image of the batch is treated alike (OpenVINO's CPU plugin reads the second and
later images from the wrong offset when the input has more channels than the masked regions use).

ReorgYolo moves ``stride x stride`` blocks of pixels to channels in Darknet's order: the input is
read as ``[N, C / stride², H * stride, W * stride]`` and written as ``[N, C * stride², H / stride,
W / stride]``, as OpenVINO's reference does.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import axis_of, flag, int_attr, int_list
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    with np.errstate(over="ignore"):
        return np.float32(1) / (np.float32(1) + np.exp(-x))


def region_yolo(x: np.ndarray, *, coords: int, classes: int, regions: int, softmax: bool,
                axis: int, end_axis: int) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"RegionYolo needs a 4-D input [N, C, H, W], got shape {x.shape}")
    n, c, h, w = x.shape
    entry = coords + 1 + classes
    if regions * entry > c:
        raise ValueError(f"{regions} regions of {entry} channels need {regions * entry} "
                         f"channels, the input has {c}")
    keep = c if softmax else regions * entry
    out = x[:, :keep].copy()
    r = out[:, :regions * entry].reshape(n, regions, entry, h, w)
    r[:, :, 0:2] = _sigmoid(r[:, :, 0:2])
    if softmax:
        r[:, :, coords] = _sigmoid(r[:, :, coords])
        cls = r[:, :, coords + 1:].astype(np.float32)
        e = np.exp(cls - cls.max(axis=2, keepdims=True))
        r[:, :, coords + 1:] = e / e.sum(axis=2, keepdims=True)
    else:
        r[:, :, coords:] = _sigmoid(r[:, :, coords:])
    out[:, :regions * entry] = r.reshape(n, regions * entry, h, w)
    if not softmax:
        return out
    a, b = axis_of(axis, 4), axis_of(end_axis, 4)
    return out.reshape(out.shape[:a] + (math.prod(out.shape[a:b + 1]),) + out.shape[b + 1:])


def _region_params(layer: Layer):
    softmax = flag(layer, "do_softmax", True)
    mask = int_list(layer, "mask")
    coords, classes = int_attr(layer, "coords"), int_attr(layer, "classes")
    regions = int_attr(layer, "num") if softmax else len(mask)
    if coords < 2 or classes < 0 or regions < 0:
        raise ValueError(f"coords={coords} must be at least 2, classes={classes} and the number "
                         f"of regions {regions} non-negative")
    return {"coords": coords, "classes": classes, "regions": regions, "softmax": softmax,
            "axis": int_attr(layer, "axis", 1), "end_axis": int_attr(layer, "end_axis", 3)}


def _region_shape(layer: Layer, ins, consts) -> TensorInfo:
    p, s = _region_params(layer), ins[0].shape
    if s is None:
        return TensorInfo(ins[0].type, None)
    if not p["softmax"]:
        return TensorInfo(ins[0].type, (s[0], (p["coords"] + 1 + p["classes"]) * p["regions"])
                          + tuple(s[2:]))
    a, b = axis_of(p["axis"], 4), axis_of(p["end_axis"], 4)
    flat = -1 if -1 in s[a:b + 1] else math.prod(s[a:b + 1])
    return TensorInfo(ins[0].type, tuple(s[:a]) + (flat,) + tuple(s[b + 1:]))


@op("RegionYolo", shape=_region_shape,
    notes="each image reads its own channels; OpenVINO's CPU plugin misreads images after the "
          "first when the input has channels beyond the masked regions (do_softmax false)")
def _region_yolo1(layer: Layer):
    p = _region_params(layer)
    return lambda x: region_yolo(x, **p)


def reorg_yolo(x: np.ndarray, stride: int) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"ReorgYolo needs a 4-D input [N, C, H, W], got shape {x.shape}")
    n, c, h, w = x.shape
    s = stride
    if c % (s * s) or h % s or w % s:
        raise ValueError(f"ReorgYolo with stride {s} needs C divisible by {s * s} and H, W by "
                         f"{s}, got shape {x.shape}")
    view = x.reshape(n, c // (s * s), h, s, w, s)
    return view.transpose(0, 3, 5, 1, 2, 4).reshape(n, c * s * s, h // s, w // s)


def _stride(layer: Layer) -> int:
    values = int_list(layer, "stride")
    if not values or len(set(values)) != 1 or values[0] <= 0:
        raise ValueError(f"stride={layer.data.get('stride')!r} must be one positive integer")
    return values[0]


def _reorg_shape(layer: Layer, ins, consts) -> TensorInfo:
    s, st = ins[0].shape, _stride(layer)
    if s is None:
        return TensorInfo(ins[0].type, (-1,) * 4)
    return TensorInfo(ins[0].type, (s[0], -1 if s[1] == -1 else s[1] * st * st,
                                    -1 if s[2] == -1 else s[2] // st,
                                    -1 if s[3] == -1 else s[3] // st))


@op("ReorgYolo", versions=(2,), shape=_reorg_shape)
def _reorg_yolo2(layer: Layer):
    stride = _stride(layer)
    return lambda x: reorg_yolo(x, stride)
