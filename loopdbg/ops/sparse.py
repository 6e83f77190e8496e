"""Sparse tensors: SparseFillEmptyRows-16.

A 2-D sparse tensor is ``indices`` [N, 2] (row, column) with ``values`` [N] and ``dense_shape``.
Every row of ``dense_shape[0]`` that holds no value gets one, ``default_value`` at column 0. The
outputs are the indices and values sorted by row then column (ties keep their input order), and
a boolean per row telling which rows were empty.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _fill_shape(layer: Layer, ins, consts):
    """[M, 2] indices, [M] values (M known only with the data), [rows] booleans."""
    rows = int(np.ravel(consts[1])[0]) if consts[1] is not None else -1
    return [TensorInfo(ins[2].type, (-1, 2)), TensorInfo(ins[0].type, (-1,)),
            TensorInfo("boolean", (rows,))]


@op("SparseFillEmptyRows", versions=(16,), outputs=3, shape=_fill_shape)
def _sparse_fill_empty_rows(layer: Layer):
    def sparse_fill_empty_rows(values, dense_shape, indices, default_value):
        values, indices = np.asarray(values), np.asarray(indices)
        shape = np.asarray(dense_shape).reshape(-1)
        if shape.size != 2 or indices.ndim != 2 or indices.shape[1] != 2 or \
                indices.shape[0] != values.size:
            raise ValueError(f"expected indices [N, 2], values [N] and a 2-D dense_shape, got "
                             f"{indices.shape}, {values.shape} and {shape.tolist()}")
        rows, cols = int(shape[0]), int(shape[1])
        if indices.size and (indices.min() < 0 or indices[:, 0].max() >= rows or
                             indices[:, 1].max() >= cols):
            raise ValueError(f"an index lies outside the dense shape {[rows, cols]}")
        empty = np.ones(rows, bool)
        empty[indices[:, 0]] = False
        new_rows = np.flatnonzero(empty).astype(indices.dtype)
        all_indices = np.concatenate([indices, np.stack([new_rows, np.zeros_like(new_rows)],
                                                        axis=1)])
        fill = np.asarray(default_value).reshape(-1)[:1].astype(values.dtype)
        all_values = np.concatenate([values.reshape(-1), np.repeat(fill, new_rows.size)])
        order = np.lexsort((all_indices[:, 1], all_indices[:, 0]))
        return all_indices[order], all_values[order], empty

    return sparse_fill_empty_rows
