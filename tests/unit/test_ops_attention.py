"""ScaledDotProductAttention-13 against the specification's formula written out element by element
(test_ops_oracle.py compares it with OpenVINO's CPU plugin)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel


def kernel(causal: bool = False):
    layer = Layer(0, "sdpa", "ScaledDotProductAttention", "opset13",
                  data={"causal": "true" if causal else "false"},
                  inputs=tuple(Port(i, i) for i in range(5)), outputs=(Port(5, 0),))
    return make_kernel(layer)[0]


def by_hand(q, k, v, mask=None, scale=None, causal=False):
    """The specification's pseudo-code, one row of one batch at a time, in float64."""
    n, length, e = q.shape
    source = k.shape[1]
    scale = 1 / math.sqrt(e) if scale is None else float(scale)
    out = np.zeros((n, length, v.shape[2]))
    for b in range(n):
        for i in range(length):
            w = []
            for j in range(source):
                x = float(np.dot(q[b, i].astype(np.float64), k[b, j])) * scale
                if causal:
                    x = -math.inf if j > i else x
                elif mask is not None:
                    x = (x if mask[i, j] else -math.inf) if mask.dtype == bool else x + mask[i, j]
                w.append(x)
            top = max(w)
            if top == -math.inf:
                out[b, i] = math.nan
                continue
            ex = [math.exp(x - top) for x in w]
            total = sum(ex)
            out[b, i] = sum(ex[j] / total * v[b, j].astype(np.float64) for j in range(source))
    return out.astype(np.float32)


RNG = np.random.default_rng(3)
Q, K, V = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 2)))


@pytest.mark.parametrize("mask,scale,causal", [
    (None, None, False), (None, None, True),
    (np.array([[1, 0, 1, 1, 0], [0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], bool), None, False),
    (RNG.standard_normal((3, 5)).astype(np.float32), np.float32(0.7), False)])
def test_sdpa_follows_the_specification(mask, scale, causal):
    got = kernel(causal)(Q, K, V, mask, scale)
    assert got.shape == (2, 3, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got, by_hand(Q, K, V, mask, scale, causal), rtol=1e-5, atol=1e-6)


def test_a_row_masked_everywhere_is_nan_and_a_rank_2_query_is_refused():
    mask = np.array([[False] * 5, [True] * 5, [True] * 5])
    got = kernel()(Q, K, V, mask)
    assert np.isnan(got[:, 0]).all() and np.isfinite(got[:, 1:]).all()
    with pytest.raises(ValueError, match="at least 3 dims"):
        kernel()(Q[0], K[0], V[0])
