"""``ops.args.opset``, which takes ``registry.opset_number``'s answer, kept per spelling: what it gives
whatever the order in which spellings come, past the number it keeps, and a bad spelling
refused at each layer that has it."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops import registry
from loopdbg.ops.args import opset
from loopdbg.ops.registry import make_kernel


def _layer(version: str, op: str = "Unsqueeze", **data) -> Layer:
    return Layer(id=1, name="n", type=f"onnx.{op}", version=version, data=data)


def test_spellings_in_any_order_give_their_numbers():
    for version, n in [("opset13", 13), ("opset1", 1), ("opset", 1), ("", 1), ("opset13", 13),
                       ("opset011", 11), ("opset1", 1), ("opset011", 11)]:
        assert opset(_layer(version)) == n


def test_a_bad_spelling_is_refused_at_each_layer_and_kept_nowhere():
    for _ in range(2):
        with pytest.raises(ValueError):
            opset(_layer("opsetX"))
    assert "opsetX" not in registry._OPSETS


def test_spellings_past_those_kept_are_still_parsed(monkeypatch):
    monkeypatch.setattr(registry, "_OPSETS", {})
    for k in range(1024 + 20):
        assert opset(_layer(f"opset{k:04d}")) == k
    assert len(registry._OPSETS) == 1024


def test_a_kernel_follows_its_own_layer_s_opset():
    """Unsqueeze-11 reads its axes from an attribute, Unsqueeze-13 from an input: layers of
    both spellings, alternately, each get their own kernel."""
    x = np.zeros((2, 3), np.float32)
    for _ in range(2):
        old = make_kernel(_layer("opset11", axes=[0]), "")[0]
        new = make_kernel(_layer("opset13"), "")[0]
        assert old(x).shape == (1, 2, 3)
        assert new(x, np.array([2], np.int64)).shape == (2, 3, 1)
