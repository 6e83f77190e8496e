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


@op("onnx.Trilu", versions=(14,))
def _trilu(layer: Layer):
    upper = bool(int(a(layer, "upper", 1)))
    cut = np.triu if upper else np.tril

    def trilu(x, k=None):
        if x.ndim < 2:
            raise ValueError(f"Trilu takes a tensor of rank 2 or more, got rank {x.ndim}")
        diag = 0
        if k is not None:
            k = np.asarray(k)
            if k.size != 1:
                raise ValueError(f"k must be a scalar, got shape {k.shape}")
            diag = int(k.reshape(-1)[0])
        return cut(x, diag)

    return trilu
