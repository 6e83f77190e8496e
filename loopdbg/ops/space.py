"""Rearrangements between depth, space and batch, and patch extraction: DepthToSpace-1,
SpaceToDepth-1, BatchToSpace-2, SpaceToBatch-2, ShuffleChannels-1, ExtractImagePatches-3 and
Col2Im-15.

All are reshapes and transposes (copies only where numpy must), as the specifications write them:

* DepthToSpace splits the channels of [N, C, D1..Dk] into C / bs^k channels and k block axes
  (``blocks_first``: the block axes come first in the channel index, ``depth_first``: last) and
  interleaves each block axis after its spatial axis; SpaceToDepth is its inverse.
* BatchToSpace moves the batch into blocks of ``block_shape`` (``block_shape[0]`` is 1) then crops;
  SpaceToBatch pads, then moves the blocks into the batch (block-major, the original batch minor).
* ShuffleChannels views ``axis`` as [group, C / group] and transposes those two.
* ExtractImagePatches gathers ``sizes`` patches, ``rates`` apart, every ``strides`` pixels into the
  channels, ordered (patch row, patch column, channel); ``same_upper`` / ``same_lower`` pad
  (with zeros) as OpenVINO does: by the total the output ``ceil(in / stride)`` needs, odd
  halves to the end or the beginning, and not at all when the total reaches the dilated patch.
* Col2Im sums the columns [N, C * kh * kw, L] back into [N, C, *output_size] (the inverse
  layout of im2col), the overlapping values added.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import axis_of, choice, int_attr, ints
from loopdbg.ops.conv import dilated, pads_attr, per_axis, positive_list, windows
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, same

# ---- DepthToSpace, SpaceToDepth --------------------------------------------------------------


def _block_size(layer: Layer) -> int:
    bs = int_attr(layer, "block_size", 1)
    if bs < 1:
        raise ValueError(f"block_size={bs} must be positive")
    return bs


def _depth_to_space(x: np.ndarray, bs: int, blocks_first: bool) -> np.ndarray:
    k = x.ndim - 2
    if k < 1:
        raise ValueError(f"DepthToSpace takes data of rank 3 or more, not {x.ndim}")
    n, c, sizes = x.shape[0], x.shape[1], x.shape[2:]
    if c % bs ** k:
        raise ValueError(f"{c} channels do not divide into blocks of {bs}^{k}")
    depth = c // bs ** k
    if blocks_first:                                    # [N, bs.., C', D..]
        y = x.reshape(n, *([bs] * k), depth, *sizes)
        order = [0, k + 1] + [a for d in range(k) for a in (k + 2 + d, 1 + d)]
    else:                                               # [N, C', bs.., D..]
        y = x.reshape(n, depth, *([bs] * k), *sizes)
        order = [0, 1] + [a for d in range(k) for a in (k + 2 + d, 2 + d)]
    return y.transpose(order).reshape(n, depth, *(s * bs for s in sizes))


def _space_to_depth(x: np.ndarray, bs: int, blocks_first: bool) -> np.ndarray:
    k = x.ndim - 2
    if k < 1:
        raise ValueError(f"SpaceToDepth takes data of rank 3 or more, not {x.ndim}")
    n, c, sizes = x.shape[0], x.shape[1], x.shape[2:]
    if any(s % bs for s in sizes):
        raise ValueError(f"spatial shape {list(sizes)} is not divisible by block_size {bs}")
    y = x.reshape(n, c, *(v for s in sizes for v in (s // bs, bs)))   # [N, C, D1', bs, ...]
    blocks = [3 + 2 * d for d in range(k)]
    spatial = [2 + 2 * d for d in range(k)]
    order = [0] + (blocks + [1] if blocks_first else [1] + blocks) + spatial
    return y.transpose(order).reshape(n, c * bs ** k, *(s // bs for s in sizes))


def _depth_shape(to_space: bool):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        shape = ins[0].shape
        if shape is None:
            return TensorInfo(ins[0].type, None)
        bs, k = _block_size(layer), len(shape) - 2
        grow = (lambda d: d * bs) if to_space else (lambda d: d // bs)
        c = shape[1]
        channels = -1 if c < 0 else (c // bs ** k if to_space else c * bs ** k)
        return TensorInfo(ins[0].type, (shape[0], channels,
                                        *(-1 if d < 0 else grow(d) for d in shape[2:])))

    return rule


_DEPTH_MODES = ("blocks_first", "depth_first")


@op("DepthToSpace", versions=(1,), shape=_depth_shape(True))
def _depth_to_space_op(layer: Layer):
    bs = _block_size(layer)
    blocks_first = choice(layer, "mode", _DEPTH_MODES) == "blocks_first"
    return lambda x: _depth_to_space(x, bs, blocks_first)


@op("SpaceToDepth", versions=(1,), shape=_depth_shape(False))
def _space_to_depth_op(layer: Layer):
    bs = _block_size(layer)
    blocks_first = choice(layer, "mode", _DEPTH_MODES) == "blocks_first"
    return lambda x: _space_to_depth(x, bs, blocks_first)


# ---- BatchToSpace, SpaceToBatch --------------------------------------------------------------


def _blocks(x: np.ndarray, block_shape, what: str) -> list[int]:
    blocks = ints(block_shape)
    if len(blocks) != x.ndim or any(b < 1 for b in blocks):
        raise ValueError(f"{what} block_shape {blocks} does not give one positive block per "
                         f"axis of data of rank {x.ndim}")
    if blocks[0] != 1:
        raise ValueError(f"{what} block_shape[0] must be 1, not {blocks[0]}")
    return blocks


def _batch_to_space(x, block_shape, crops_begin, crops_end):
    blocks = _blocks(x, block_shape, "BatchToSpace")
    begin, end = ints(crops_begin), ints(crops_end)
    n = x.ndim
    prod = math.prod(blocks)
    if x.shape[0] % prod:
        raise ValueError(f"batch {x.shape[0]} is not divisible by the block product {prod}")
    y = x.reshape(*blocks[1:], x.shape[0] // prod, *x.shape[1:])
    # [B1..B(n-1), batch', D1..D(n-1)] -> [batch', D1, B1, D2, B2, ...]
    order = [n - 1] + [a for d in range(1, n) for a in (n - 1 + d, d - 1)]
    y = y.transpose(order).reshape(x.shape[0] // prod,
                                   *(s * b for s, b in zip(x.shape[1:], blocks[1:])))
    if len(begin) != n or len(end) != n or min(begin + end) < 0:
        raise ValueError(f"BatchToSpace crops {begin} and {end} must give one non-negative "
                         f"value per axis")
    cut = tuple(slice(b, d - e) for b, e, d in zip(begin, end, y.shape))
    if any(s.start > s.stop for s in cut):
        raise ValueError(f"BatchToSpace crops {begin} and {end} exceed shape {list(y.shape)}")
    return y[cut]


def _space_to_batch(x, block_shape, pads_begin, pads_end):
    blocks = _blocks(x, block_shape, "SpaceToBatch")
    begin, end = ints(pads_begin), ints(pads_end)
    n = x.ndim
    if len(begin) != n or len(end) != n or min(begin + end) < 0:
        raise ValueError(f"SpaceToBatch pads {begin} and {end} must give one non-negative "
                         f"value per axis")
    y = np.pad(x, list(zip(begin, end)))
    if any(s % b for s, b in zip(y.shape, blocks)):
        raise ValueError(f"padded shape {list(y.shape)} is not divisible by block_shape "
                         f"{blocks}")
    y = y.reshape(y.shape[0], *(v for s, b in zip(y.shape[1:], blocks[1:]) for v in (s // b, b)))
    # [batch, D1', B1, D2', B2, ...] -> [B1, B2, ..., batch, D1', D2', ...]
    order = [2 + 2 * d for d in range(n - 1)] + [0] + [1 + 2 * d for d in range(n - 1)]
    prod = math.prod(blocks)
    return y.transpose(order).reshape(y.shape[0] * prod,
                                      *(y.shape[1 + 2 * d] for d in range(n - 1)))


def _batch_space_shape(to_space: bool):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        shape = ins[0].shape
        if shape is None or any(c is None for c in consts[1:]) or -1 in shape:
            return TensorInfo(ins[0].type, None if shape is None else (-1,) * len(shape))
        fn = _batch_to_space if to_space else _space_to_batch
        zero = np.broadcast_to(np.zeros((), np.float32), shape)
        return TensorInfo(ins[0].type, fn(zero, *consts[1:]).shape)

    return rule


@op("BatchToSpace", versions=(2,), shape=_batch_space_shape(True))
def _batch_to_space_op(layer: Layer):
    return _batch_to_space


@op("SpaceToBatch", versions=(2,), shape=_batch_space_shape(False))
def _space_to_batch_op(layer: Layer):
    return _space_to_batch


# ---- ShuffleChannels -------------------------------------------------------------------------


@op("ShuffleChannels", versions=(1,), shape=same)
def _shuffle_channels(layer: Layer):
    axis, group = int_attr(layer, "axis", 1), int_attr(layer, "group", 1)
    if group < 1:
        raise ValueError(f"group={group} must be positive")

    def shuffle(x):
        ax = axis_of(axis, x.ndim)
        c = x.shape[ax]
        if c % group:
            raise ValueError(f"axis {ax} of length {c} does not split into {group} groups")
        y = x.reshape(*x.shape[:ax], group, c // group, *x.shape[ax + 1:])
        return np.swapaxes(y, ax, ax + 1).reshape(x.shape)

    return shuffle


# ---- ExtractImagePatches ---------------------------------------------------------------------


class Patches:
    def __init__(self, layer: Layer):
        self.sizes = positive_list(layer, "sizes")
        self.strides = positive_list(layer, "strides")
        self.rates = positive_list(layer, "rates")
        for name in ("sizes", "strides", "rates"):
            per_axis(getattr(self, name), 2, name)
        self.auto_pad = choice(layer, "auto_pad", ("valid", "same_upper", "same_lower"))

    def plan(self, h: int, w: int):
        """((pad_top, pad_left), (out_h, out_w))."""
        begin, outs = [], []
        for size, k, s, r in zip((h, w), self.sizes, self.strides, self.rates):
            eff = dilated(k, r)
            if self.auto_pad == "valid":
                begin.append(0)
                outs.append(max(0, (size - eff) // s + 1) if size >= eff else 0)
                continue
            out = -(-size // s)
            total = (out - 1) * s + eff - size
            lead = 0
            if 0 < total < eff:
                lead = total // 2 if total % 2 == 0 else \
                    (total + 1) // 2 if self.auto_pad == "same_lower" else (total - 1) // 2
            begin.append(lead)
            outs.append(out)
        return begin, outs


def _patches_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape = ins[0].shape
    if shape is None or len(shape) != 4:
        return TensorInfo(ins[0].type, (-1,) * 4)
    p = Patches(layer)
    if shape[2] < 0 or shape[3] < 0:
        outs = [-1, -1]
    else:
        outs = p.plan(shape[2], shape[3])[1]
    c = -1 if shape[1] < 0 else shape[1] * p.sizes[0] * p.sizes[1]
    return TensorInfo(ins[0].type, (shape[0], c, *outs))


@op("ExtractImagePatches", versions=(3,), shape=_patches_shape)
def _extract_image_patches(layer: Layer):
    p = Patches(layer)

    def extract(x):
        if x.ndim != 4:
            raise ValueError(f"ExtractImagePatches takes 4-D data, not {x.ndim}-D")
        n, c, h, w = x.shape
        begin, outs = p.plan(h, w)
        if 0 in outs:
            return np.zeros((n, c * p.sizes[0] * p.sizes[1], *outs), dtype=x.dtype)
        view = windows(x, p.sizes, p.strides, p.rates, begin, [0, 0], outs)
        # [N, C, OH, OW, KH, KW] -> [N, KH, KW, C, OH, OW]
        return view.transpose(0, 4, 5, 1, 2, 3).reshape(n, -1, *outs)

    return extract


# ---- Col2Im ----------------------------------------------------------------------------------


def _col2im_plan(layer: Layer):
    strides = positive_list(layer, "strides", (1, 1))
    dilations = positive_list(layer, "dilations", (1, 1))
    begin, end = pads_attr(layer, "pads_begin") or [0, 0], pads_attr(layer, "pads_end") or [0, 0]
    for name, v in (("strides", strides), ("dilations", dilations), ("pads_begin", begin),
                    ("pads_end", end)):
        per_axis(v, 2, name)
    return strides, dilations, begin, end


def _col2im_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape, out, kernel = ins[0].shape, consts[1], consts[2]
    if shape is None:
        return TensorInfo(ins[0].type, None)
    lead = shape[:1] if len(shape) == 3 else ()
    rows = shape[-2]
    if kernel is None or rows < 0:
        c = -1
    else:
        c = rows // math.prod(ints(kernel))
    sizes = (-1, -1) if out is None else tuple(ints(out))
    return TensorInfo(ins[0].type, (*lead, c, *sizes))


@op("Col2Im", versions=(15,), shape=_col2im_shape)
def _col2im(layer: Layer):
    strides, dilations, begin, end = _col2im_plan(layer)

    def col2im(x, output_size, kernel_size):
        out, kernel = ints(output_size), ints(kernel_size)
        if len(out) != 2 or len(kernel) != 2 or min(out + kernel) < 1:
            raise ValueError(f"Col2Im output_size {out} and kernel_size {kernel} must each "
                             f"hold two positive sizes")
        batched = x.ndim == 3
        if x.ndim not in (2, 3):
            raise ValueError(f"Col2Im takes 2-D or 3-D data, not {x.ndim}-D")
        cols = x if batched else x[np.newaxis]
        kh, kw = kernel
        blocks = [(o + b + e - dilated(k, d)) // s + 1
                  for o, b, e, k, d, s in zip(out, begin, end, kernel, dilations, strides)]
        if cols.shape[1] % (kh * kw) or cols.shape[2] != blocks[0] * blocks[1]:
            raise ValueError(f"Col2Im data of shape {list(x.shape)} does not hold "
                             f"C*{kh}*{kw} rows of {blocks[0]}*{blocks[1]} blocks")
        n, c = cols.shape[0], cols.shape[1] // (kh * kw)
        parts = cols.reshape(n, c, kh, kw, *blocks)
        full = [o + b + e for o, b, e in zip(out, begin, end)]
        image = np.zeros((n, c, *full), dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilations[0], i * dilations[0] + (blocks[0] - 1) * strides[0]
                             + 1, strides[0])
                columns = slice(j * dilations[1], j * dilations[1] + (blocks[1] - 1)
                                * strides[1] + 1, strides[1])
                image[:, :, rows, columns] += parts[:, :, i, j]
        image = image[:, :, begin[0]:begin[0] + out[0], begin[1]:begin[1] + out[1]]
        return image if batched else image[0]

    return col2im
