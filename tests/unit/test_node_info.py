"""The Inspector's node facts (loopdbg.teach.node_info): operation, attributes, inputs with
their sources, outputs declared and as they are now."""

from __future__ import annotations

from pathlib import Path

from loopdbg.debug import Session
from loopdbg.teach.node_info import node_lines

ROOT = Path(__file__).resolve().parents[2]


def test_a_node_is_described_as_netron_would():
    base = ROOT / "loopdbg" / "demos" / "ti_lstm"
    s = Session.open(base / "model.xml", base / "inputs.npz")
    s.next()
    e = s.current
    lines = node_lines(e.spec, "cell", s.values(e))
    assert lines[0].startswith("LSTMCell (LSTMCell opset") and "'cell'" in lines[0]
    assert "attributes:" in lines and any(line.strip().startswith("hidden_size = ")
                                          for line in lines)
    assert any(line.startswith("input 1: h") and "float32" in line for line in lines)
    assert any(line.startswith("output 1 (cell:1)") and "now float32" in line for line in lines)
    assert node_lines(e.spec, "no such node", {}) is None
