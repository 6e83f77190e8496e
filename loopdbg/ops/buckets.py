"""Sorting values into places: Bucketize, SearchSorted, Unique, SegmentMax.

* Bucketize-3: the index of each value's bucket among the sorted boundaries; with
  ``with_right_bound`` bucket i is (b[i-1], b[i]], without it [b[i-1], b[i]).
* SearchSorted-15: the insertion index of each value in the sorted last axis of
  ``sorted_sequence`` (1-D, or with the values' leading dimensions): the first place whose
  element is >= the value, or > it with ``right_mode``.
* Unique-10: the distinct elements (of the flattened input, or slices along ``axis``), sorted
  ascending (slices lexicographically) or in order of first appearance; then the index of each
  one's first occurrence, each input element's (slice's) index among them, and their counts.
* SegmentMax-16: the maximum of each segment of rows named by the sorted ``segment_ids``;
  ``num_segments`` (default max id + 1) rows, empty ones filled with 0 or the type's lowest
  finite value (``fill_mode``).
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, axis_of, choice, flag, index_dtype, scalar
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _like_input(n: int, type_attr: str, default: str):
    def rule(layer: Layer, ins, consts):
        return TensorInfo(attr(layer, type_attr, default), ins[n].shape)

    rule.__doc__ = f"The shape of input {n}, in {type_attr}."
    return rule


@op("Bucketize", versions=(3,), shape=_like_input(0, "output_type", "i64"))
def _bucketize(layer: Layer):
    dtype = index_dtype(layer, "output_type", "i64")
    side = "left" if flag(layer, "with_right_bound", True) else "right"

    def bucketize(data, buckets):
        edges = np.asarray(buckets).reshape(-1)
        return np.searchsorted(edges, np.asarray(data), side=side).astype(dtype)

    return bucketize


@op("SearchSorted", versions=(15,), shape=_like_input(1, "output_type", "i64"))
def _search_sorted(layer: Layer):
    dtype = index_dtype(layer, "output_type", "i64")
    side = "right" if flag(layer, "right_mode", False) else "left"

    def search_sorted(sorted_sequence, values):
        seq, vals = np.asarray(sorted_sequence), np.asarray(values)
        if seq.ndim == 1:
            return np.searchsorted(seq, vals, side=side).astype(dtype)
        if seq.shape[:-1] != vals.shape[:-1]:
            raise ValueError(f"sorted_sequence {seq.shape} and values {vals.shape} differ in "
                             f"their leading dimensions")
        lead = seq.shape[:-1]
        flat_seq = seq.reshape(-1, seq.shape[-1])
        flat_vals = vals.reshape(-1, vals.shape[-1])
        out = np.empty(flat_vals.shape, dtype)
        for row in range(flat_seq.shape[0]):
            out[row] = np.searchsorted(flat_seq[row], flat_vals[row], side=side)
        return out.reshape(lead + vals.shape[-1:])

    return search_sorted


# ---- Unique ----------------------------------------------------------------------------------

def _unique_shape(layer: Layer, ins, consts):
    """The unique values' count is known only when the data is."""
    idx = attr(layer, "index_element_type", "i64")
    return [TensorInfo(ins[0].type, None), TensorInfo(idx, (-1,)), TensorInfo(idx, (-1,)),
            TensorInfo(attr(layer, "count_element_type", "i64"), (-1,))]


@op("Unique", versions=(10,), outputs=4, shape=_unique_shape,
    notes="equal slices along an axis are always merged; OpenVINO's CPU plugin sometimes keeps "
          "two equal slices apart when sorting along an axis")
def _unique(layer: Layer):
    ascending = flag(layer, "sorted", True)
    index_type = index_dtype(layer, "index_element_type", "i64")
    count_type = index_dtype(layer, "count_element_type", "i64")

    def unique(data, axis=None):
        data = np.asarray(data)
        if axis is None:
            flat = data.reshape(-1)
            values, first, inverse, counts = np.unique(flat, return_index=True,
                                                       return_inverse=True, return_counts=True)
            ax = None
        else:
            ax = axis_of(scalar(axis), data.ndim)
            rows = np.moveaxis(data, ax, 0).reshape(data.shape[ax], -1)
            _, first, inverse, counts = np.unique(rows, axis=0, return_index=True,
                                                  return_inverse=True, return_counts=True)
            values = None
        inverse = inverse.reshape(-1)
        if not ascending:             # order of first appearance
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            first, counts, inverse = first[order], counts[order], rank[inverse]
        if ax is None:
            values = data.reshape(-1)[first]
        else:
            values = np.take(data, first, axis=ax)
        return (values, first.astype(index_type), inverse.astype(index_type),
                counts.astype(count_type))

    return unique


# ---- SegmentMax ------------------------------------------------------------------------------

def _segment_shape(layer: Layer, ins, consts):
    """[num_segments, data.shape[1:]]: known when num_segments (or the ids) are constants."""
    s = ins[0].shape
    if s is None:
        return TensorInfo(ins[0].type, None)
    n = -1
    if len(consts) > 2 and consts[2] is not None:
        n = scalar(consts[2])
    elif consts[1] is not None:
        ids = np.asarray(consts[1]).reshape(-1)
        n = int(ids.max()) + 1 if ids.size else 0
    return TensorInfo(ins[0].type, (n,) + tuple(s[1:]))


@op("SegmentMax", versions=(16,), shape=_segment_shape)
def _segment_max(layer: Layer):
    lowest = choice(layer, "fill_mode", ("zero", "lowest")) == "lowest"

    def segment_max(data, segment_ids, num_segments=None):
        data = np.asarray(data)
        ids = np.asarray(segment_ids).reshape(-1).astype(np.int64)
        if data.ndim == 0 or ids.size != data.shape[0]:
            raise ValueError(f"segment_ids has {ids.size} elements for {data.shape[:1]} rows")
        if ids.size and (ids.min() < 0 or np.any(np.diff(ids) < 0)):
            raise ValueError("segment_ids must be non-negative and sorted")
        n = scalar(num_segments) if num_segments is not None else (
            int(ids.max()) + 1 if ids.size else 0)
        if n < 0:
            raise ValueError(f"num_segments {n} is negative")
        if data.dtype.kind == "f":
            bottom, lowest_value = -np.inf, np.finfo(data.dtype).min
        elif data.dtype.kind == "b":
            bottom = lowest_value = False
        else:
            bottom = lowest_value = np.iinfo(data.dtype).min
        out = np.full((n,) + data.shape[1:], bottom, data.dtype)
        keep = ids < n
        np.maximum.at(out, ids[keep], data[keep])
        empty = np.ones(n, bool)
        empty[ids[keep]] = False
        out[empty] = lowest_value if lowest else 0
        return out

    return segment_max
