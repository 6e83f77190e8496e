"""ONNX Trilu: the upper (``upper=1``, the default) or lower triangle of the last two axes, from
diagonal ``k`` (an optional scalar input, default 0; positive above the main diagonal), as
``np.triu`` / ``np.tril`` give it; every other element is zero. A causal mask is one per decoder
iteration, so it runs here rather than through onnx.reference.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a
from loopdbg.ops.registry import op


_DIAGONALS = 1 << 52        # |k| below: the mask's aranges hold it exactly


@op("onnx.Trilu", versions=(14,))
def _trilu(layer: Layer):
    upper = bool(int(a(layer, "upper", 1)))
    cut = np.triu if upper else np.tril
    zeros = {}                                  # by dtype: the 0 np.triu/np.tril write

    def trilu(x, k=None):
        if x.ndim < 2:
            raise ValueError(f"Trilu takes a tensor of rank 2 or more, got rank {x.ndim}")
        diag = 0
        if k is not None:
            k = np.asarray(k)
            if k.size != 1:
                raise ValueError(f"k must be a scalar, got shape {k.shape}")
            diag = int(k.reshape(-1)[0])
        if type(x) is not np.ndarray or not -_DIAGONALS < diag < _DIAGONALS:
            return cut(x, diag)
        # np.triu/np.tril's own mask and where, without their Python layers (np.tri's, the
        # zero's): the kept side of diagonal ``diag`` is j - i <= diag (tril), >= diag (triu)
        rows, cols = x.shape[-2:]
        shift = diag - 1 if upper else diag
        below = np.greater_equal.outer(np.arange(rows), np.arange(-shift, cols - shift))
        zero = zeros.get(x.dtype)
        if zero is None:
            zero = zeros[x.dtype] = np.zeros(1, x.dtype)
        return np.where(below, zero, x) if upper else np.where(below, x, zero)

    return trilu
