"""Models written by OpenVINO's converters from Keras, TensorFlow, TorchScript and ONNX (made by
make_models.py in a separate venv; see README.md here): loopdbg runs each and matches OpenVINO
CPU's outputs, and explains and draws each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loopdbg.cli import main
from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model

HERE = Path(__file__).resolve().parent
MODELS = sorted(p.name for p in HERE.iterdir() if (p / "model.xml").exists())


def test_the_converted_models_are_there():
    assert len(MODELS) >= 8, MODELS


@pytest.mark.parametrize("name", MODELS)
def test_loopdbg_matches_openvino(name):
    folder = HERE / name
    outputs = Engine(read_model(folder / "model.xml")).run_to_end(
        load_npz(folder / "inputs.npz")).outputs
    for key, want in load_npz(folder / "expected.npz").items():
        got = outputs[key]
        assert got.shape == want.shape, key
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=key)
        else:
            np.testing.assert_array_equal(got, want, err_msg=key)


@pytest.mark.parametrize("name", MODELS)
def test_explain_and_graph(name, tmp_path, capsys):
    xml = str(HERE / name / "model.xml")
    assert main(["explain", xml]) == 0
    engine = Engine(read_model(xml))
    loop = next(iter(engine.loops))
    assert main(["graph", xml, "--loop", loop, "-o", str(tmp_path / "g.dot")]) == 0
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
