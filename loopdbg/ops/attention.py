"""Attention and linear algebra: ScaledDotProductAttention, Einsum, GroupedMatMul, Inverse.

* ScaledDotProductAttention-13 follows the specification's pseudo-code: ``softmax(Q Kᵀ · scale
  + bias) V`` with ``scale`` input 4 or ``1/sqrt(E)``; the bias is an upper-triangular ``-inf``
  (``k=1`` over [L, S]) when ``causal`` (the mask is then ignored), ``-inf`` where a boolean mask
  is false, or a float mask added as it is. The optional input 5, ``sink``, is one more logit per
  row that takes part in the softmax and is dropped after it. Batch dimensions broadcast as in
  MatMul. Worked in float32 when the query, key and value are float32 (as OpenVINO's CPU
  plugin works; within 1e-6 of the float64 result at a decoder's sizes, far inside the
  comparison's 1e-5, and twice as fast, the float64 casts gone), in float64 otherwise; returned
  in the query's type.
* Einsum-7 is numpy's einsum on the equation (spaces removed); numpy and the specification agree
  on implicit mode (the output is the labels seen once, in alphabetical order) and ellipses.
* GroupedMatMul-17 multiplies per group with weights stored transposed, [G, N, K]:
  [G, M, K] → [G, M, N]; [T, K] with cumulative end offsets [G] → [T, N] (the rows of group g
  are ``offsets[g-1]:offsets[g]``; rows past the last offset are 0).
* Inverse-14 inverts each trailing [N, N] matrix; with ``adjoint`` it inverts the adjoint (the
  transpose, for real matrices), as specified. A singular matrix is an error (the specification
  allows an error or an undefined result).
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, flag
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, broadcast, same


def _softmax_last(w: np.ndarray) -> np.ndarray:
    """The softmax over the last axis of ``w``, a float temporary of the caller's that it
    overwrites (the same operations as out of place, without their temporaries). When every
    row's maximum is finite (no row masked whole, no inf or NaN), each row's sum is at least 1
    (its maximum's exp), so nothing divides by zero: no ``where``, no ``errstate``."""
    top = np.maximum.reduce(w, axis=-1, keepdims=True)
    finite = np.isfinite(top)
    if finite.all():
        np.subtract(w, top, out=w)
        np.exp(w, out=w)
        return np.divide(w, np.add.reduce(w, axis=-1, keepdims=True), out=w)
    top = np.where(finite, top, 0.0)
    np.subtract(w, top, out=w)
    np.exp(w, out=w)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.divide(w, np.add.reduce(w, axis=-1, keepdims=True), out=w)


def _attend_f32(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None,
                scale: np.ndarray) -> np.ndarray:
    """``scaled_dot_product_attention`` of float32 ``q``, ``k``, ``v`` with a float32 ``mask`` (or
    none), the constant ``scale`` (a 0-d float32) and no sink: the same operations in the same
    order, without the checks and conversions the other cases need, and the softmax's test that
    every row's maximum is finite made on their sum (finite when they all are; an overflow to
    inf only sends the rows to the general softmax, which gives the same values)."""
    w = np.matmul(q, k.swapaxes(-1, -2))
    np.multiply(w, scale, out=w)
    if mask is not None:
        try:                            # into w when the mask broadcasts to its shape
            np.add(w, mask, out=w)
        except ValueError:              # it broadcasts w up (or not at all: numpy says so)
            w = w + mask
    top = np.maximum.reduce(w, axis=-1, keepdims=True)
    if not math.isfinite(np.add.reduce(top, axis=None)):
        return np.matmul(_softmax_last(w), v)
    np.subtract(w, top, out=w)
    np.exp(w, out=w)
    np.divide(w, np.add.reduce(w, axis=-1, keepdims=True), out=w)
    return np.matmul(w, v)


_CAUSAL: dict[tuple, np.ndarray] = {}     # (L, S, type) -> the causal bias, read-only


def _causal_bias(n_l: int, n_s: int, work: np.dtype) -> np.ndarray:
    """The upper-triangular -inf (``k=1``) over [L, S] in ``work``, made once per shape (a few
    kept)."""
    key = (n_l, n_s, work)
    bias = _CAUSAL.get(key)
    if bias is None:
        bias = np.triu(np.full((n_l, n_s), -np.inf, work), k=1)
        bias.flags.writeable = False
        if len(_CAUSAL) >= 256:
            _CAUSAL.clear()
        _CAUSAL[key] = bias
    return bias


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _work_type(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.dtype:
    """float32 when the query, key and value all are, else float64 (see the module docstring)."""
    return _F32 if q.dtype == _F32 and k.dtype == _F32 and v.dtype == _F32 else _F64


def _sdpa_shape(layer: Layer, ins, consts):
    """[N..., L, Ev]: the broadcast batch dimensions, the query's L, the value's Ev."""
    q, k, v = (i.shape for i in ins[:3])
    if q is None or v is None or k is None:
        return TensorInfo(ins[0].type, None)
    return TensorInfo(ins[0].type, broadcast(q[:-2], k[:-2], v[:-2]) + (q[-2], v[-1]))


@op("ScaledDotProductAttention", versions=(13,), shape=_sdpa_shape)
def _sdpa(layer: Layer):
    causal = flag(layer, "causal", False)
    constant = [None, 0.0, None]    # a read-only scale input (a constant), its value and that
    #                                 value as a 0-d float32 array, kept
    ndarray = np.ndarray

    def scale_of(scale, q: np.ndarray, work: np.dtype):
        """The scale as a 0-d array of ``work`` (what ``w *= work.type(s)`` multiplied by)."""
        if scale is None:
            s = 1.0 / np.sqrt(float(q.shape[-1]))
        elif scale is constant[0]:
            if work == _F32:
                return constant[2]
            s = constant[1]
        else:
            flat = np.asarray(scale).reshape(-1)
            if flat.size != 1:
                raise ValueError(f"scale must be a scalar, got shape {np.shape(scale)}")
            s = float(flat[0])
            if type(scale) is ndarray and not scale.flags.writeable:
                typed = np.array(s, _F32)
                typed.flags.writeable = False
                constant[:] = scale, s, typed
        return np.array(s, work)

    def scaled_dot_product_attention(q, k, v, mask=None, scale=None, sink=None):
        if type(q) is ndarray and type(k) is ndarray and type(v) is ndarray and \
                q.dtype == _F32 and k.dtype == _F32 and v.dtype == _F32:
            if sink is None and not causal and (mask is None or (
                    type(mask) is ndarray and mask.dtype == _F32)) and \
                    scale is constant[0] and scale is not None:
                return _attend_f32(q, k, v, mask, constant[2])     # a decoder's, every block
            q_type = work = _F32                # (the usual case: no conversions to make)
        else:
            q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
            q_type, work = q.dtype, _work_type(q, k, v)
            q, k, v = q.astype(work, copy=False), k.astype(work, copy=False), \
                v.astype(work, copy=False)
        w = np.matmul(q, k.swapaxes(-1, -2))
        np.multiply(w, scale_of(scale, q, work), out=w)
        n_l, n_s = w.shape[-2], w.shape[-1]
        if causal:
            w += _causal_bias(n_l, n_s, work)
        elif mask is not None:
            m = np.asarray(mask)
            if m.dtype == np.bool_:
                w = np.where(m, w, work.type(-np.inf))
            elif m.dtype == work:
                try:                    # into w when the mask broadcasts to its shape
                    np.add(w, m, out=w)
                except ValueError:      # it broadcasts w up (or not at all: numpy says so)
                    w = w + m
            else:
                w = w + m.astype(work, copy=False)
        if sink is not None:
            sk = np.broadcast_to(np.asarray(sink, work), w.shape[:-1] + (1,))
            w = _softmax_last(np.concatenate([w, sk], axis=-1))[..., :-1]
        else:
            w = _softmax_last(w)
        out = np.matmul(w, v)
        return out if out.dtype == q_type else out.astype(q_type)

    return scaled_dot_product_attention


def _einsum_shape(layer: Layer, ins, consts):
    """The equation's output labels, sized from the inputs (ellipsis dims broadcast)."""
    equation = "".join(attr(layer, "equation").split())
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ins) or any(i.shape is None for i in ins):
        return TensorInfo(ins[0].type if ins else None, None)
    sizes: dict[str, int] = {}
    ellipsis: list[tuple[int, ...]] = []
    for term, info in zip(terms, ins):
        head, dots, tail = term.partition("...")
        n_ell = len(info.shape) - len(head) - len(tail) if dots else 0
        ellipsis.append(tuple(info.shape[len(head):len(head) + n_ell]))
        for label, dim in zip(head + "." * n_ell + tail, info.shape):
            if label != "." and sizes.get(label, 1) in (1, -1):
                sizes[label] = dim
    if "->" not in equation:
        once = [c for c in sorted(set(lhs)) if c.isalpha() and lhs.count(c) == 1]
        rhs = ("..." if "..." in lhs else "") + "".join(once)
    head, dots, tail = rhs.partition("...")
    middle = broadcast(*ellipsis) if dots else ()
    return TensorInfo(ins[0].type, tuple(sizes[c] for c in head) + tuple(middle)
                      + tuple(sizes[c] for c in tail))


@op("Einsum", versions=(7,), shape=_einsum_shape)
def _einsum(layer: Layer):
    equation = "".join(attr(layer, "equation").split())
    if not equation:
        raise ValueError("equation is empty")

    def einsum(*operands):
        out = np.einsum(equation, *operands)
        return np.asarray(out, dtype=np.result_type(*operands))

    return einsum


def _grouped_shape(layer: Layer, ins, consts):
    """[G, M, N] for 3-D × 3-D, [T, N] for 2-D × 3-D (the weights are [G, N, K])."""
    a, b = ins[0].shape, ins[1].shape
    if a is None or b is None:
        return TensorInfo(ins[0].type, None)
    if len(b) == 3 and len(a) in (2, 3):
        return TensorInfo(ins[0].type, a[:-1] + (b[1],))
    raise ValueError("GroupedMatMul takes 3-D × 3-D or 2-D × 3-D")


def _bounds(offsets, total: int) -> list[tuple[int, int]]:
    ends = np.asarray(offsets).reshape(-1).astype(np.int64).tolist()
    out, start = [], 0
    for end in ends:
        if not start <= end <= total:
            raise ValueError(f"offsets {ends} must rise from 0 to at most {total}")
        out.append((start, end))
        start = end
    return out


@op("GroupedMatMul", versions=(17,), shape=_grouped_shape,
    notes="3-D × 3-D and 2-D × 3-D with offsets, weights [G, N, K], as OpenVINO 2026.4's "
          "documentation and shape inference have them; OpenVINO 2026.4 itself runs it nowhere "
          "(no CPU kernel, no reference), so it is tested by hand only")
def _grouped_matmul(layer: Layer):
    def grouped_matmul(a, b, offsets=None):
        a, b = np.asarray(a), np.asarray(b)
        dtype = np.result_type(a, b)
        if b.ndim != 3 or a.ndim not in (2, 3) or a.shape[-1] != b.shape[2]:
            raise ValueError(f"shapes {a.shape} and {b.shape} are not [G, M, K] or [T, K] "
                             f"with [G, N, K]")
        weights = np.swapaxes(b, 1, 2)                      # [G, K, N]
        if a.ndim == 3:
            if a.shape[0] != b.shape[0]:
                raise ValueError(f"{a.shape[0]} groups of inputs for {b.shape[0]} of weights")
            return np.matmul(a, weights).astype(dtype, copy=False)
        if offsets is None:
            raise ValueError("a 2-D × 3-D GroupedMatMul needs offsets")
        groups = _bounds(offsets, a.shape[0])
        if len(groups) > b.shape[0]:
            raise ValueError(f"{len(groups)} offsets for {b.shape[0]} groups of weights")
        out = np.zeros((a.shape[0], b.shape[1]), dtype)
        for g, (lo, hi) in enumerate(groups):
            out[lo:hi] = a[lo:hi] @ weights[g]
        return out

    return grouped_matmul


@op("Inverse", versions=(14,), shape=same)
def _inverse(layer: Layer):
    adjoint = flag(layer, "adjoint", False)

    def inverse(x):
        x = np.asarray(x)
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise ValueError(f"input of shape {x.shape} is not a batch of square matrices")
        xf = x.astype(np.float64)
        try:
            out = np.linalg.inv(xf)
        except np.linalg.LinAlgError:
            raise ValueError("a matrix is singular, so it has no inverse") from None
        if adjoint:
            out = np.swapaxes(out, -1, -2)
        return out.astype(x.dtype, copy=False)

    return inverse
