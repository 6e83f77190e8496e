"""Models exported by PyTorch (tests/data/onnx_torch, written by its make.py): loops appending to
a Python list (SequenceEmpty / SequenceConstruct, Loop with SequenceInsert, ConcatFromSequence)
and nn.LSTM / nn.GRU. loopdbg's outputs must be onnxruntime's, as make.py recorded them, and
(oracle) as onnxruntime computes them now.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from loopdbg.engine import Engine, IterationDone  # noqa: E402
from loopdbg.engine.inputs import load_npz  # noqa: E402
from loopdbg.ir.load import read_model  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "onnx_torch"
MODELS = ["list_loop", "list_while", "lstm", "gru"]


def _run(name: str) -> dict:
    model = read_model(DATA / f"{name}.onnx")
    return Engine(model).run_to_end(load_npz(DATA / f"{name}.inputs.npz")).outputs


def _agree(got: dict, want: dict) -> None:
    assert set(want) <= set(got)
    for k, w in want.items():
        g = np.asarray(got[k])
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", MODELS)
def test_the_pytorch_export_gives_what_onnxruntime_gave(name):
    _agree(_run(name), load_npz(DATA / f"{name}.expected.npz"))


@pytest.mark.parametrize("name, ops", [
    ("list_loop", {"SequenceEmpty", "Loop", "ConcatFromSequence"}),
    ("list_while", {"SequenceConstruct", "Loop", "ConcatFromSequence", "SequenceLength"}),
    ("lstm", {"LSTM"}), ("gru", {"GRU"}),
])
def test_the_exports_hold_the_operators_they_are_here_for(name, ops):
    import onnx

    graph = onnx.load(str(DATA / f"{name}.onnx")).graph
    assert ops <= {n.op_type for n in graph.node}


def test_the_list_grows_by_one_tensor_per_iteration():
    """The scripted loop carries the list as a loop-carried sequence the debugger can watch."""
    model = read_model(DATA / "list_loop.onnx")
    events = Engine(model).run(load_npz(DATA / "list_loop.inputs.npz"))
    lengths = []
    for e in events:
        if isinstance(e, IterationDone):
            lengths.append([len(v) for v in e.back_edges.values() if isinstance(v, list)])
    assert lengths == [[1], [2], [3], [4], [5]]


@pytest.mark.oracle
@pytest.mark.parametrize("name", MODELS)
def test_the_pytorch_export_agrees_with_onnxruntime_now(name):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(DATA / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    feeds = load_npz(DATA / f"{name}.inputs.npz")
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(None, {i.name: feeds[i.name] for i in sess.get_inputs()})))
    _agree(_run(name), want)
