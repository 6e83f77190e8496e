"""Embedding bags: EmbeddingBagOffsetsSum, EmbeddingBagPackedSum, EmbeddingSegmentsSum (opset 3)
and EmbeddingBagOffsets, EmbeddingBagPacked (opset 15, with ``reduction`` sum or mean).

Each output row combines rows of the table ``emb_table`` [V, ...] picked by ``indices``:

* offsets form: bag b holds ``indices[offsets[b]:offsets[b+1]]`` (the last bag runs to the end);
* packed form: bag b is row b of ``indices`` [B, L];
* segments form: index j goes to segment ``segment_ids[j]`` of ``num_segments``.

Rows are summed, each multiplied by its ``per_sample_weights`` entry when given (sum only), or
averaged (``reduction="mean"``). An empty bag or segment is the ``default_index`` row when that
is given and not negative, else zeros. An index outside the table is an error.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, scalar
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _rows(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    idx = np.asarray(idx).reshape(-1).astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= table.shape[0]):
        raise ValueError(f"an index in {idx.tolist()} is outside the table's {table.shape[0]} "
                         f"rows")
    return table[idx]


def _default(table: np.ndarray, default_index):
    if default_index is None:
        return None
    d = scalar(default_index)
    if d < 0:
        return None
    if d >= table.shape[0]:
        raise ValueError(f"default_index {d} is outside the table's {table.shape[0]} rows")
    return table[d]


def _combine(table, bags, weights, default, mean: bool) -> np.ndarray:
    """One output row per bag (a list of index arrays, with their weight arrays or None)."""
    out = np.zeros((len(bags),) + table.shape[1:], table.dtype)
    for b, (idx, w) in enumerate(bags):
        if len(idx) == 0:
            if default is not None:
                out[b] = default
            continue
        rows = _rows(table, idx)
        if w is not None:
            rows = rows * np.asarray(w, table.dtype).reshape((-1,) + (1,) * (table.ndim - 1))
        out[b] = rows.mean(axis=0) if mean else rows.sum(axis=0)
    return out


def _offset_bags(indices, offsets, weights):
    idx = np.asarray(indices).reshape(-1)
    starts = np.asarray(offsets).reshape(-1).astype(np.int64).tolist()
    ends = starts[1:] + [idx.size]
    bags = []
    for lo, hi in zip(starts, ends):
        if not 0 <= lo <= hi <= idx.size:
            raise ValueError(f"offsets {starts} must rise within the {idx.size} indices")
        w = None if weights is None else np.asarray(weights).reshape(-1)[lo:hi]
        bags.append((idx[lo:hi], w))
    return bags


def _packed_bags(indices, weights):
    idx = np.asarray(indices)
    if idx.ndim != 2:
        raise ValueError(f"packed indices must be 2-D, got shape {idx.shape}")
    w = None if weights is None else np.asarray(weights).reshape(idx.shape)
    return [(idx[b], None if w is None else w[b]) for b in range(idx.shape[0])]


def _offsets_shape(layer: Layer, ins, consts):
    """[number of offsets, table.shape[1:]]."""
    t, o = ins[0].shape, ins[2].shape
    return TensorInfo(ins[0].type, None if t is None or o is None else tuple(o[:1]) + t[1:])


def _packed_shape(layer: Layer, ins, consts):
    """[indices.shape[0], table.shape[1:]]."""
    t, i = ins[0].shape, ins[1].shape
    return TensorInfo(ins[0].type, None if t is None or i is None else tuple(i[:1]) + t[1:])


def _reduction(layer: Layer) -> bool:
    return choice(layer, "reduction", ("sum", "mean"), "sum") == "mean"


def _offsets_kernel(mean: bool):
    def embedding_bag_offsets(table, indices, offsets, default_index=None, weights=None):
        table = np.asarray(table)
        if mean and weights is not None:
            raise ValueError("per_sample_weights are only allowed with reduction 'sum'")
        return _combine(table, _offset_bags(indices, offsets, weights), weights,
                        _default(table, default_index), mean)

    return embedding_bag_offsets


def _packed_kernel(mean: bool):
    def embedding_bag_packed(table, indices, weights=None):
        table = np.asarray(table)
        if mean and weights is not None:
            raise ValueError("per_sample_weights are only allowed with reduction 'sum'")
        return _combine(table, _packed_bags(indices, weights), weights, None, mean)

    return embedding_bag_packed


@op("EmbeddingBagOffsetsSum", versions=(3,), shape=_offsets_shape)
def _bag_offsets_sum(layer: Layer):
    return _offsets_kernel(False)


@op("EmbeddingBagOffsets", versions=(15,), shape=_offsets_shape)
def _bag_offsets(layer: Layer):
    return _offsets_kernel(_reduction(layer))


@op("EmbeddingBagPackedSum", versions=(3,), shape=_packed_shape)
def _bag_packed_sum(layer: Layer):
    return _packed_kernel(False)


@op("EmbeddingBagPacked", versions=(15,), shape=_packed_shape)
def _bag_packed(layer: Layer):
    return _packed_kernel(_reduction(layer))


def _segments_shape(layer: Layer, ins, consts):
    """[num_segments, table.shape[1:]] when num_segments is a constant."""
    t = ins[0].shape
    n = scalar(consts[3]) if len(consts) > 3 and consts[3] is not None else -1
    return TensorInfo(ins[0].type, None if t is None else (n,) + tuple(t[1:]))


@op("EmbeddingSegmentsSum", versions=(3,), shape=_segments_shape)
def _segments_sum(layer: Layer):
    def embedding_segments_sum(table, indices, segment_ids, num_segments, default_index=None,
                               weights=None):
        table = np.asarray(table)
        idx = np.asarray(indices).reshape(-1)
        seg = np.asarray(segment_ids).reshape(-1).astype(np.int64)
        n = scalar(num_segments)
        if seg.size != idx.size:
            raise ValueError(f"{seg.size} segment ids for {idx.size} indices")
        if seg.size and (seg.min() < 0 or seg.max() >= n):
            raise ValueError(f"a segment id in {seg.tolist()} is outside [0, {n})")
        w = None if weights is None else np.asarray(weights).reshape(-1)
        bags = [(idx[seg == s], None if w is None else w[seg == s]) for s in range(n)]
        return _combine(table, bags, w, _default(table, default_index), False)

    return embedding_segments_sum
