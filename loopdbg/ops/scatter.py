"""Writing by index: ScatterUpdate, ScatterNDUpdate and ScatterElementsUpdate.

Negative indices count from the end, as in OpenVINO. The kernels copy ``data`` first: inputs may be
constants shared by every iteration. ScatterNDUpdate-3 is first held by opset4 (OpenVINO's tables
put it there), so that is where it is registered.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import axis_of, choice, flag, scalar, wrap_negative
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import same


# ---- Scatter family --------------------------------------------------------------------------


@op("ScatterUpdate", versions=(3,), shape=same)
def _scatter_update(layer: Layer):
    def scatter_update(data, indices, updates, axis):
        ax = axis_of(scalar(axis), data.ndim)
        out = data.copy()
        idx = wrap_negative(np.asarray(indices), data.shape[ax])
        out[(slice(None),) * ax + (idx,)] = updates
        return out

    return scatter_update


_ND_REDUCTIONS = {"sum": np.add, "sub": np.subtract, "prod": np.multiply,
                  "min": np.minimum, "max": np.maximum}


def scatter_nd_kernel(reduction: str):
    """ScatterNDUpdate's kernel with ``reduction`` (none or a key of ``_ND_REDUCTIONS``); ONNX's
    ScatterND runs it too."""
    ufunc = _ND_REDUCTIONS.get(reduction)

    def scatter_nd_update(data, indices, updates):
        idx = np.asarray(indices)
        k = idx.shape[-1]
        idx = wrap_negative(idx, data.shape[:k])
        where = tuple(idx[..., j] for j in range(k))
        out = data.copy()
        if ufunc is None:
            out[where] = updates
        else:
            ufunc.at(out, where, updates)
        return out

    return scatter_nd_update


@op("ScatterNDUpdate", versions=(4,), shape=same)
def _scatter_nd_update3(layer: Layer):
    return scatter_nd_kernel("none")


@op("ScatterNDUpdate", versions=(15,), shape=same)
def _scatter_nd_update15(layer: Layer):
    return scatter_nd_kernel(choice(layer, "reduction", ("none", *_ND_REDUCTIONS), "none"))


def _along_axis(indices: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Full coordinates for every element of ``indices``, with ``indices`` on ``axis``."""
    grids = list(np.indices(indices.shape, sparse=True))
    grids[axis] = indices
    return tuple(grids)


def scatter_elements_kernel(reduction: str, use_init_val: bool):
    def scatter_elements_update(data, indices, updates, axis):
        ax = axis_of(scalar(axis), data.ndim)
        idx = wrap_negative(np.asarray(indices), data.shape[ax])
        updates = np.broadcast_to(updates, idx.shape)
        out = data.copy()
        where = _along_axis(idx, ax)
        if reduction == "none":
            out[where] = updates
            return out
        if reduction == "mean":
            total = out.astype(np.float64) if use_init_val else np.zeros(out.shape)
            count = np.ones(out.shape) if use_init_val else np.zeros(out.shape)
            np.add.at(total, where, updates)
            np.add.at(count, where, 1)
            hit = np.zeros(out.shape, bool)
            hit[where] = True
            mean = total / np.maximum(count, 1)
            if out.dtype.kind in "iu":
                mean = np.trunc(mean)
            out[hit] = mean[hit].astype(out.dtype)
            return out
        ufunc = _ND_REDUCTIONS[reduction]
        if not use_init_val:
            out[where] = _identity(ufunc, out.dtype)
        ufunc.at(out, where, updates)
        return out

    return scatter_elements_update


def _identity(ufunc, dtype: np.dtype):
    """The value a reduction starts from when the data's own value is not used."""
    if ufunc is np.add:
        return 0
    if ufunc is np.multiply:
        return 1
    if dtype.kind == "f":
        return np.inf if ufunc is np.minimum else -np.inf
    if dtype.kind == "b":
        return ufunc is np.minimum
    info = np.iinfo(dtype)
    return info.max if ufunc is np.minimum else info.min


@op("ScatterElementsUpdate", versions=(3,), shape=same)
def _scatter_elements_update3(layer: Layer):
    return scatter_elements_kernel("none", True)


@op("ScatterElementsUpdate", versions=(12,), shape=same)
def _scatter_elements_update12(layer: Layer):
    reduction = choice(layer, "reduction", ("none", "sum", "prod", "min", "max", "mean"), "none")
    return scatter_elements_kernel(reduction, flag(layer, "use_init_val", True))
