"""A model with operations loopdbg cannot run: every missing (type, version) in one sentence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from loopdbg.cli import main
from loopdbg.engine import Engine
from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.load import read_model

DEMO = Path(__file__).resolve().parents[2] / "loopdbg" / "demos" / "while_loop"


def edited(tmp_path, **types) -> Path:
    text = (DEMO / "model.xml").read_text()
    for old, new in types.items():
        text = text.replace(f'type="{old}" version="opset1"', new)
    (tmp_path / "m.xml").write_text(text)
    shutil.copy(DEMO / "model.bin", tmp_path / "m.bin")
    return tmp_path / "m.xml"


def test_every_missing_operation_is_named_at_once(tmp_path):
    xml = edited(tmp_path, Multiply='type="Frobnicate" version="opset1"',
                 Less='type="Defrobnicate" version="opset6"')
    with pytest.raises(UnsupportedOperation) as info:
        Engine(read_model(xml))
    text = str(info.value)
    assert text.startswith(f"{xml} uses 2 operations loopdbg cannot run: ")
    assert "Frobnicate opset1 (layer 3 'x_next' (Frobnicate) in the body of loop 'doubling')" \
        in text
    assert "Defrobnicate opset6 (2 layers)" in text
    assert text.endswith("docs/ops.md lists what loopdbg runs.")
    assert len(text) < 400 and "\n" not in text


def test_the_cli_says_it_in_one_line(tmp_path, capsys):
    xml = edited(tmp_path, Multiply='type="Frobnicate" version="opset1"')
    assert main(["run", str(xml), str(DEMO / "inputs.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "uses an operation loopdbg cannot run: Frobnicate opset1" in err[0]
