"""Models that OpenVINO's converters wrote from Keras, TensorFlow, PyTorch and ONNX code run in
loopdbg as in OpenVINO, and ``explain`` and ``graph`` read them.

Each folder holds model.xml/.bin (``openvino.convert_model`` output), inputs.npz, expected.npz
(OpenVINO CPU's outputs) and manifest.json (what the converter produced); make_models.py wrote
them (see its docstring for the command and README.md for what each model is). No TensorFlow,
PyTorch or OpenVINO is needed here.

A model that uses an operation loopdbg has no kernel for fails its test with the one sentence
naming every such operation: the test is meant to fail until the kernels exist.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from loopdbg.cli import main
from loopdbg.engine import Engine, RunFinished
from loopdbg.engine.inputs import load_npz
from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.load import read_model

HERE = Path(__file__).parent
CASES = sorted(p.name for p in HERE.iterdir() if (p / "model.xml").exists())
TOLERANCE = 1e-4          # rtol and atol for float32 outputs of real layers


def manifest(case: str) -> dict:
    return json.loads((HERE / case / "manifest.json").read_text())


def test_every_model_is_here():
    assert CASES == ["attention_decoder", "conv1d_forecaster", "convlstm", "crnn_text",
                     "lstm_go_backwards", "nms_loop", "scan_bigru_tagger", "speech_conv_gru",
                     "tacotron_decoder"]


@pytest.mark.parametrize("case", CASES)
def test_runs_and_matches_openvino(case):
    model = read_model(HERE / case / "model.xml")
    missing = None
    try:
        engine = Engine(model)
    except UnsupportedOperation as exc:
        missing = str(exc)
    if missing is not None:
        pytest.fail(missing, pytrace=False)
    final = engine.run_to_end(load_npz(HERE / case / "inputs.npz"))
    assert isinstance(final, RunFinished)
    expected = load_npz(HERE / case / "expected.npz")
    assert sorted(final.outputs) == sorted(expected)
    for name, want in expected.items():
        got = final.outputs[name]
        assert (got.shape, got.dtype) == (want.shape, want.dtype), name
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_loopdbg_reads_the_loops_the_converter_wrote(case):
    """The same Loops and TensorIterators, each with as many body layers, as OpenVINO counted."""
    engine = Engine(read_model(HERE / case / "model.xml"), require_kernels=False)
    written = Counter((s["type"], s["body_layers"]) for s in manifest(case)["subgraphs"]
                      if s["type"] != "If")
    read = Counter((s.kind, len(s.layer.body.graph.layers)) for s in engine.loops.values())
    assert read == written


@pytest.mark.parametrize("case", CASES)
def test_explain(case, capsys):
    xml, inputs = HERE / case / "model.xml", HERE / case / "inputs.npz"
    assert main(["explain", str(xml)]) == 0
    text = capsys.readouterr().out
    kinds = Counter(s["type"] for s in manifest(case)["subgraphs"] if s["type"] != "If")
    for kind, n in kinds.items():
        assert sum(line.startswith(f"{kind} '") for line in text.splitlines()) == n
    assert main(["explain", str(xml), str(inputs), "--format", "json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert Counter(loop["type"] for loop in facts["loops"]) == kinds
    assert "run_error" not in facts, facts["run_error"]
    if "cannot_run" not in facts:        # a model loopdbg runs: every loop ran on the inputs
        assert all(loop["runs"] for loop in facts["loops"])


@pytest.mark.parametrize("case", CASES)
def test_graph_draws_every_loop(case, tmp_path, capsys):
    xml = HERE / case / "model.xml"
    paths = list(Engine(read_model(xml), require_kernels=False).loops)
    assert paths
    for k, path in enumerate(paths):
        out = tmp_path / f"loop{k}.dot"
        assert main(["graph", str(xml), "--loop", path, "-o", str(out)]) == 0, \
            capsys.readouterr().err
        assert out.read_text().startswith("digraph")
