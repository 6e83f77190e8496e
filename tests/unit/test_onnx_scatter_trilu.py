"""ONNX ScatterND and Trilu on loopdbg's own kernels give onnx.reference's values."""

import numpy as np
import pytest

pytest.importorskip("onnx")

from loopdbg.ops.registry import lookup  # noqa: E402
from test_onnx_conv_norm import _check  # noqa: E402


def test_the_kernels_are_loopdbgs_own():
    for t in ("onnx.ScatterND", "onnx.Trilu"):
        assert lookup(t, "opset18").factory.__module__ != "loopdbg.ops.onnx_reference"


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -2, 0, 1, 5])
def test_trilu(upper, k):
    x = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(np.float32)
    inits = [] if k is None else [("k", np.array(k, np.int64))]
    _check("Trilu", x, inits, dict(upper=upper), np.float32)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    indices = np.array([[0, 1], [-1, 2], [2, 0]], np.int64)          # a negative index too
    updates = rng.standard_normal((3, 2)).astype(np.float32)
    attrs = {} if reduction == "none" else {"reduction": reduction}
    _check("ScatterND", x, [("i", indices), ("u", updates)], attrs, np.float32, opset=18)
