"""Matrix products shaped so numpy hands them to BLAS: what MatMul, ONNX MatMul and Gemm run.

numpy's ``matmul`` calls BLAS's GEMM once for two 2-D operands (either may be a transposed view:
BLAS takes the transpose flag), but a stacked product, ``(B, M, K) @ (K, N)``, goes through its
broadcasting loop, which calls GEMM per stack entry only when every operand is laid out as BLAS
wants and otherwise multiplies in its own, much slower loop (a transposed weight, ``w.T`` of a
``(N, K)`` array, takes it there: 4x-40x slower at the sizes of a decoder's linear layers). So:

* a stack of matrices times one matrix is one 2-D GEMM: ``(*B, M, K)`` is viewed as
  ``(B*M, K)`` (copied once if it is not contiguous), multiplied, and viewed back; a
  C-contiguous stack of one, ``(1, M, K)`` (an exporter's linear layer), times a C-contiguous
  matrix, numpy's matmul already hands to that GEMM as it is, without the views;
* of a big enough matrix (``WEIGHT_FIRST_SIZE`` elements: a decoder's linear layers) and
  ``WEIGHT_FIRST_ROWS`` rows or more, the product is taken the other way round,
  ``(Wᵀ · Aᵀ)ᵀ``: the same products summed by the same GEMM, which OpenBLAS runs 1.5x-2.5x faster
  for the few rows of a generation step (measured at 12-24 rows against 192x576, 192x768 and
  768x192 weights in cache, one thread; the transposes are views, handed to BLAS as flags,
  and the result is copied once into C order). In a whole decoder run, whose weights come
  from L3 or memory, the products gain less: 7% over gpt_mid's. Fewer rows are nearer a
  matrix-vector product, where the usual order is faster, as it is for small weights;
* otherwise numpy's matmul, with a strided stack of the second operand made contiguous once
  when it is big (``STRIDED_COPY_SIZE`` elements): the copy costs more than it saves on the
  small stacks of a small model's attention, (1, 4, 12, T) keys (measured with numpy 2.4,
  whose own loop is as fast there; numpy 1's leaves BLAS, which matters only for big ones).

The results are numpy's (and BLAS's) sums of the same products: equal to the stacked product
within float rounding, bit for bit from one run to the next.
"""

from __future__ import annotations

import numpy as np

WEIGHT_FIRST_ROWS = 8           # rows of A from which a big matrix goes first (see above)
WEIGHT_FIRST_SIZE = 32768       # elements of the matrix: 192x192 and up
STRIDED_COPY_SIZE = 16384       # elements of a strided stack worth a contiguous copy (see above)
STORED_FIRST_ROWS = 2           # the same, for a weight read as stored (with_transposed_constant):
#                                 (W · Aᵀ)ᵀ is faster from 2 rows (1.1x-1.3x at 3-7 rows, 576x192
#                                 to 1024x192 weights, one thread), A · Wᵀ (transpose flag) at 1


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)``, on BLAS's fast path where the shapes allow."""
    b_rank, a_rank = b.ndim, a.ndim
    if b_rank == 2 and a_rank >= 2:
        # both of one float type BLAS multiplies (float32, float64): one GEMM; asked once
        blas = a.dtype == b.dtype and a.dtype.kind == "f" and a.dtype.itemsize >= 4
        if b.size >= WEIGHT_FIRST_SIZE and blas and a.size >= WEIGHT_FIRST_ROWS * b.shape[0] \
                and a.shape[-1] == b.shape[0]:
            lead = a.shape[:-1]
            a2 = a.reshape(-1, a.shape[-1])
            out = np.ascontiguousarray(np.matmul(b.T, a2.T).T)
            return out.reshape(*lead, b.shape[-1])
        if a_rank > 2 and blas:
            if a_rank == 3 and a.shape[0] == 1 and a.flags.c_contiguous and b.flags.c_contiguous:
                return np.matmul(a, b)          # a stack of one: that GEMM itself, no views
            lead = a.shape[:-1]
            out = np.matmul(a.reshape(-1, a.shape[-1]), b)
            return out.reshape(*lead, b.shape[-1])
        return np.matmul(a, b)
    if b_rank > 2 and b.size >= STRIDED_COPY_SIZE and not (b.flags.c_contiguous
                                                           or b.flags.f_contiguous):
        b = np.ascontiguousarray(b)
    return np.matmul(a, b)


def with_constant(b: np.ndarray):
    """``kernel(a, _b) = matmul(a, b)`` for a constant 2-D ``b``: what ``matmul`` decides from
    ``b`` alone is decided once. A float operand of ``b``'s type and rank 2 or 3 takes the path
    ``matmul`` would take for it, inline (a decoder's linear layer on a few rows costs little
    more than the Python around it); anything else is ``matmul``'s."""
    if b.ndim != 2 or b.dtype.kind != "f" or b.dtype.itemsize < 4 or b.size >= WEIGHT_FIRST_SIZE:
        return lambda a, _b=None: matmul(a, b)
    dtype, n = b.dtype, b.shape[1]
    ndarray, np_matmul = np.ndarray, np.matmul

    def matmul_constant(a, _b=None):
        if type(a) is ndarray and a.dtype == dtype:
            if a.ndim == 2:
                return np_matmul(a, b)
            if a.ndim == 3:                     # matmul's stack as one GEMM, as it does
                lead, rows, k = a.shape
                if lead == 1 and a.flags.c_contiguous:      # a stack of one: that GEMM itself
                    return np_matmul(a, b)
                return np_matmul(a.reshape(-1, k), b).reshape(lead, rows, n)
        return matmul(a, b)

    return matmul_constant


def with_transposed_constant(w: np.ndarray):
    """``kernel(a, _b) = matmul(a, wᵀ)`` for a constant 2-D ``w`` stored (N, K), as converters
    write a linear layer's weight (MatMul's ``transpose_b``). A big float weight is never
    transposed into a copy (the copy of a decoder's weights cost as much as their decompression,
    at every plan): GEMM reads it as it is stored, with the transpose flag, both ways round
    (see the module docstring; the same products as ``matmul`` of the transposed copy, from
    ``STORED_FIRST_ROWS`` rows weight first). Another ``w`` is transposed once
    (``transposed_constant``) for ``with_constant``."""
    if w.ndim != 2 or w.dtype.kind != "f" or w.dtype.itemsize < 4 or w.size < WEIGHT_FIRST_SIZE:
        return with_constant(transposed_constant(w))
    dtype, (n, k) = w.dtype, w.shape
    wt = w.T                                    # (K, N), a view
    ndarray, np_matmul = np.ndarray, np.matmul

    def matmul_transposed(a, _b=None):
        if type(a) is ndarray and a.dtype == dtype and a.ndim >= 2 and a.shape[-1] == k:
            lead = a.shape[:-1]
            a2 = a.reshape(-1, k)
            if a2.shape[0] >= STORED_FIRST_ROWS:       # (W · Aᵀ)ᵀ, into C order
                out = np.ascontiguousarray(np_matmul(w, a2.T).T)
            else:
                out = np_matmul(a2, wt)
            return out.reshape(*lead, n)
        return matmul(a, wt)

    return matmul_transposed


def matmul_t(a: np.ndarray, b: np.ndarray, ta: bool, tb: bool) -> np.ndarray:
    """``matmul`` of ``a`` and ``b`` with their last two axes swapped as ``ta``/``tb`` say (a 1-D
    operand is never transposed)."""
    if ta and a.ndim > 1:
        a = np.swapaxes(a, -1, -2)
    if tb and b.ndim > 1:
        b = np.swapaxes(b, -1, -2)
    return matmul(a, b)


def transposed_constant(b: np.ndarray) -> np.ndarray:
    """A constant second operand stored transposed (converters write weights so), transposed
    once into C order, read-only."""
    out = np.ascontiguousarray(b.swapaxes(-1, -2))
    out.setflags(write=False)           # (at plan time, for each weight: half flags' cost)
    return out
