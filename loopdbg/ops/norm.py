"""Normalisations: MVN, BatchNormInference, GroupNormalization, NormalizeL2, LRN and GRN.

Statistics are taken in float64 and the result cast back to the input's element type, so a
float32 model gets the exactly rounded answer (OpenVINO's CPU plugin accumulates in float32; the
two agree to far inside the tests' 1e-5). Every formula is the one of the operation's
specification, checked against OpenVINO's reference implementation:

* MVN-1 (opset 2) reduces over ``reduction_axes`` when the IR gives them, else over every axis
  from 1 (``across_channels``) or from 2; ``eps`` is added inside the square root. MVN-6 takes
  the axes as input 1 and ``eps_mode`` inside_sqrt / outside_sqrt.
* BatchNormInference-1 takes (gamma, beta, data, mean, variance), -5 takes data first; the
  channel axis is 1.
* GroupNormalization-12 normalises each of ``num_groups`` groups of consecutive channels of each
  batch item, then applies the per-channel scale and bias.
* NormalizeL2-1 with empty axes divides every element by itself (1, or 0 where the element is 0).
* LRN-1 sums squares over a window of ``size`` centred on each element along every axis of
  input 1, clipped to the tensor, scaled by ``alpha / size**len(axes)``.
* GRN-1 divides by ``sqrt(sum over the channel axis 1 of x² + bias)``.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import (SHAPES, axis_of, choice, const_input, flag, float_attr, int_attr,
                             int_list, ints)
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import same


def _axes(values, rank: int) -> tuple[int, ...]:
    return tuple(sorted({axis_of(a, rank) for a in ints(values)}))


def _float(x) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype != np.float64 else x


def _mvn(x: np.ndarray, axes: tuple[int, ...], variance: bool, eps: float,
         inside: bool) -> np.ndarray:
    xf = _float(x)
    if not axes:
        centred = xf - xf
        if variance:
            var = centred * centred
            centred = centred / (np.sqrt(var + eps) if inside else np.sqrt(var) + eps)
        return centred.astype(x.dtype, copy=False)
    # numpy's mean, without its Python layers: the sum divided by the count (the same values);
    # the count and eps as float64 0-d arrays (what numpy converts the Python numbers to)
    count, eps_ = _float64s(math.prod(xf.shape[a] for a in axes), eps)
    return _normalised(x, xf, axes, count, eps_, variance, inside)


def _normalised(x: np.ndarray, xf: np.ndarray, axes: tuple[int, ...], count: np.ndarray,
                eps_: np.ndarray, variance: bool, inside: bool) -> np.ndarray:
    """``_mvn`` over non-empty ``axes`` of ``x`` (``xf``: it in float64), its numbers given."""
    mean = np.add.reduce(xf, axis=axes, keepdims=True)
    np.divide(mean, count, out=mean)
    centred = np.subtract(xf, mean)
    if variance:
        square = np.multiply(centred, centred)
        var = np.add.reduce(square, axis=axes, keepdims=True)
        np.divide(var, count, out=var)
        if inside:
            np.add(var, eps_, out=var)
            np.sqrt(var, out=var)
        else:
            np.sqrt(var, out=var)
            np.add(var, eps_, out=var)
        np.divide(centred, var, out=centred)
    return centred.astype(x.dtype, copy=False)


_FLOAT64S: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _float64s(count: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``count`` and ``eps`` as read-only float64 0-d arrays, kept per pair."""
    found = _FLOAT64S.get((count, eps))
    if found is None:
        if len(_FLOAT64S) >= 1024:
            _FLOAT64S.clear()
        found = _FLOAT64S[(count, eps)] = (np.array(count, np.float64), np.array(eps, np.float64))
        for v in found:
            v.flags.writeable = False
    return found


@op("MVN", versions=(2,), shape=same,
    notes="MVN-1 is held from opset 2 on (opset 1 has no MVN)")
def _mvn1(layer: Layer):
    variance = flag(layer, "normalize_variance", False)
    eps = float_attr(layer, "eps")
    given = int_list(layer, "reduction_axes") if "reduction_axes" in layer.data else None
    first = 1 if flag(layer, "across_channels", False) else 2

    def mvn1(x):
        rank = np.ndim(x)
        axes = _axes(given, rank) if given is not None else tuple(range(first, rank))
        return _mvn(x, axes, variance, eps, True)

    return mvn1


@op("MVN", versions=(6,), shape=same, constants=True)
def _mvn6(layer: Layer, consts=None):
    variance = flag(layer, "normalize_variance")
    eps = float_attr(layer, "eps")
    inside = choice(layer, "eps_mode", ("inside_sqrt", "outside_sqrt")) == "inside_sqrt"

    def mvn6(x, axes):
        return _mvn(x, _axes(axes, np.ndim(x)), variance, eps, inside)

    given = const_input(consts, 1)
    if given is None:
        return mvn6
    # constant axes: (axes, count, eps) once per shape, in a table shared by every MVN of the
    # same axes and eps (args.SharedMemo: each of a decoder's layer norms sees each new shape once)
    memo = SHAPES.table(("MVN", tuple(ints(given)), eps))
    remember = SHAPES.remember

    def numbers(shape: tuple) -> tuple:
        found = _axes(given, len(shape))                        # raises as mvn6 would
        return (found, *_float64s(math.prod(shape[a] for a in found), eps))

    def mvn6_constant_axes(x, axes):
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        found = memo.get(x.shape)
        if found is None:
            found = remember(memo, x.shape, numbers)
        if not found[0]:
            return _mvn(x, (), variance, eps, inside)
        xf = x if x.dtype == np.float64 else x.astype(np.float64)
        return _normalised(x, xf, *found, variance, inside)

    return mvn6_constant_axes


# ---- BatchNormInference ------------------------------------------------------------------------

def _per_channel(v, rank: int) -> np.ndarray:
    v = _float(v).reshape(-1)
    return v.reshape((1, -1) + (1,) * max(rank - 2, 0)) if rank >= 2 else v


def _batch_norm(x, gamma, beta, mean, var, eps: float) -> np.ndarray:
    x = np.asarray(x)
    r = x.ndim
    scale = _per_channel(gamma, r) / np.sqrt(_per_channel(var, r) + eps)
    out = (_float(x) - _per_channel(mean, r)) * scale + _per_channel(beta, r)
    return out.astype(x.dtype, copy=False)


def _batch_norm_shape(data_input: int):
    def rule(layer: Layer, ins, consts):
        return ins[data_input]

    rule.__doc__ = f"Like input {data_input} (the data)."
    return rule


@op("BatchNormInference", versions=(1,), shape=_batch_norm_shape(2))
def _batch_norm1(layer: Layer):
    eps = float_attr(layer, "epsilon")

    def batch_norm_inference1(gamma, beta, x, mean, var):
        return _batch_norm(x, gamma, beta, mean, var, eps)

    return batch_norm_inference1


@op("BatchNormInference", versions=(5,), shape=same)
def _batch_norm5(layer: Layer):
    eps = float_attr(layer, "epsilon")

    def batch_norm_inference5(x, gamma, beta, mean, var):
        return _batch_norm(x, gamma, beta, mean, var, eps)

    return batch_norm_inference5


# ---- GroupNormalization ------------------------------------------------------------------------

@op("GroupNormalization", versions=(12,), shape=same)
def _group_norm(layer: Layer):
    groups = int_attr(layer, "num_groups")
    eps = float_attr(layer, "epsilon")
    if groups <= 0:
        raise ValueError(f"num_groups must be positive, got {groups}")

    def group_normalization(x, scale, bias):
        x = np.asarray(x)
        if x.ndim < 2 or x.shape[1] % groups:
            raise ValueError(f"the channel dimension of shape {x.shape} does not split into "
                             f"{groups} groups")
        n = x.shape[0]
        g = _float(x).reshape(n, groups, -1)
        centred = g - g.mean(axis=2, keepdims=True)
        normed = centred / np.sqrt(np.mean(centred * centred, axis=2, keepdims=True) + eps)
        normed = normed.reshape(x.shape)
        out = normed * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim)
        return out.astype(x.dtype, copy=False)

    return group_normalization


# ---- NormalizeL2, LRN, GRN ---------------------------------------------------------------------

@op("NormalizeL2", versions=(1,), shape=same)
def _normalize_l2(layer: Layer):
    eps = float_attr(layer, "eps")
    add = choice(layer, "eps_mode", ("add", "max")) == "add"

    def normalize_l2(x, axes):
        x = np.asarray(x)
        ax = _axes(axes, x.ndim)
        if not ax:
            return (x != 0).astype(x.dtype)
        xf = _float(x)
        total = np.sum(xf * xf, axis=ax, keepdims=True)
        total = total + eps if add else np.maximum(total, eps)
        return (xf / np.sqrt(total)).astype(x.dtype, copy=False)

    return normalize_l2


@op("LRN", versions=(1,), shape=same,
    notes="as specified, a float bias and any axes; OpenVINO's CPU plugin truncates bias to an "
          "integer (1.5 runs as 1), runs axes [1, 2, 3] as [2, 3] and refuses axes other than "
          "[1] and [2, 3]; its reference has no LRN")
def _lrn(layer: Layer):
    alpha = float_attr(layer, "alpha")
    beta = float_attr(layer, "beta")
    bias = float_attr(layer, "bias")
    size = int_attr(layer, "size")
    if size <= 0:
        raise ValueError(f"size must be positive, got {size}")
    half = (size - 1) // 2

    def lrn(x, axes):
        x = np.asarray(x)
        ax = _axes(axes, x.ndim)
        squares = _float(x) ** 2
        for a in ax:       # a window sum along each axis in turn is the sum over the box
            n = x.shape[a]
            csum = np.concatenate([np.zeros_like(squares.take([0], axis=a)),
                                   np.cumsum(squares, axis=a)], axis=a)
            i = np.arange(n)
            lo, hi = np.maximum(i - half, 0), np.minimum(i + half + 1, n)
            squares = csum.take(hi, axis=a) - csum.take(lo, axis=a)
        scale = alpha / float(size) ** len(ax)
        return (_float(x) / (bias + scale * squares) ** beta).astype(x.dtype, copy=False)

    return lrn


@op("GRN", versions=(1,), shape=same)
def _grn(layer: Layer):
    bias = float_attr(layer, "bias")

    def grn(x):
        x = np.asarray(x)
        xf = _float(x)
        axis = 1 if x.ndim > 1 else 0
        norm = np.sqrt(np.sum(xf * xf, axis=axis, keepdims=True) + bias)
        return (xf / norm).astype(x.dtype, copy=False)

    return grn
