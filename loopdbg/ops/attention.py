"""ScaledDotProductAttention-13: one op for a whole attention, as OpenVINO's PyTorch frontend
writes ``scaled_dot_product_attention`` (and its CPU plugin fuses a MatMul-Softmax-MatMul chain).

    weights = softmax(query @ key^T * scale + bias, axis=-1);  output = weights @ value

``query`` is ``[N, ..., L, E]``, ``key`` ``[N, ..., S, E]``, ``value`` ``[N, ..., S, Ev]`` (rank 3
at least, as OpenVINO's shape inference demands), their leading dims broadcast. ``scale`` (the
fifth input) defaults to ``1 / sqrt(E)``. ``bias`` is 0, or: with ``causal``, ``-inf`` above the
diagonal of the ``[L, S]`` matrix (the attention mask is then ignored); else the attention mask
(fourth input), added when it holds numbers, ``-inf`` where it is False when it holds booleans.
A row masked entirely gives NaN, as the specification's softmax of ``-inf`` everywhere does.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.convert import flag
from loopdbg.ops.registry import register


@register("ScaledDotProductAttention", "opset13")
def _sdpa(layer: Layer):
    causal = flag(layer, "causal")

    def sdpa(query, key, value, mask=None, scale=None, *rest):
        if rest:
            raise ValueError(f"ScaledDotProductAttention-13 takes at most 5 inputs, got "
                             f"{5 + len(rest)}")
        if query.ndim < 3 or key.ndim < 3 or value.ndim < 3:
            raise ValueError(f"query, key and value need at least 3 dims each, they have "
                             f"{query.ndim}, {key.ndim} and {value.ndim}")
        dt = query.dtype
        if scale is None:
            scale = 1.0 / np.sqrt(np.asarray(query.shape[-1], dt))
        scale = np.asarray(scale, dt)
        if scale.size != 1:
            raise ValueError(f"the scale must be one number, it has shape {scale.shape}")
        with np.errstate(all="ignore"):
            weights = np.matmul(query, np.swapaxes(key, -1, -2)) * scale.reshape(())
            length, source = query.shape[-2], key.shape[-2]
            if causal:
                above = np.triu(np.ones((length, source), bool), k=1)
                weights = np.where(above, np.asarray(-np.inf, dt), weights)
            elif mask is not None:
                if mask.dtype == np.bool_:
                    weights = np.where(mask, weights, np.asarray(-np.inf, dt))
                else:
                    weights = weights + mask.astype(dt)
            weights = np.exp(weights - np.max(weights, axis=-1, keepdims=True))
            weights = weights / np.sum(weights, axis=-1, keepdims=True)
            return np.matmul(weights.astype(dt), value).astype(dt)

    return sdpa
