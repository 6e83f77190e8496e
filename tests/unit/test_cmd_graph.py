"""``loopdbg graph MODEL [--loop PATH] -o FILE.svg|.png|.dot``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from loopdbg.cli import main

DEMOS = Path(__file__).resolve().parents[2] / "loopdbg" / "demos"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def test_dot_source(tmp_path, capsys):
    out = tmp_path / "g.dot"
    assert main(["graph", str(DEMOS / "while_loop" / "model.xml"), "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith('digraph "doubling"') and "x_next" in text and "next iteration" in text
    assert "Loop 'doubling' drawn in" in capsys.readouterr().err


@needs_dot
@pytest.mark.parametrize("suffix, magic", [(".svg", b"<svg"), (".png", b"\x89PNG")])
def test_rendered(tmp_path, suffix, magic):
    out = tmp_path / f"g{suffix}"
    assert main(["graph", str(DEMOS / "ti_lstm" / "model.xml"), "-o", str(out)]) == 0
    assert magic in out.read_bytes()[:400]


def test_choosing_a_loop(tmp_path, capsys):
    model = str(DEMOS / "nested_loop" / "model.xml")
    out = tmp_path / "g.dot"
    assert main(["graph", model, "-o", str(out)]) == 0          # the outermost, by default
    err = capsys.readouterr().err
    assert "has 2 loops (rows_loop/cols_loop, rows_loop): drawing 'rows_loop'" in err
    assert "--loop chooses another" in err and "table_row" in out.read_text()
    assert main(["graph", model, "--loop", "cols_loop", "-o", str(out)]) == 0
    assert "product" in out.read_text()
    assert main(["graph", model, "--loop", "rows_loop", "-o", str(out)]) == 0
    assert "table_row" in out.read_text()
    assert main(["graph", model, "--loop", "nope", "-o", str(out)]) == 2
    assert "no loop named 'nope'" in capsys.readouterr().err


def test_unknown_format_and_no_dot(tmp_path, capsys, monkeypatch):
    model = str(DEMOS / "for_loop" / "model.xml")
    assert main(["graph", model, "-o", str(tmp_path / "g.txt")]) == 2
    assert ".svg, .png or .dot" in capsys.readouterr().err
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    assert main(["graph", model, "-o", str(tmp_path / "g.svg")]) == 2
    assert "'dot' program was not found" in capsys.readouterr().err
    assert not (tmp_path / "g.svg").exists()


def test_outer_inputs_are_named_and_port_numbers_stand_clear(tmp_path, capsys):
    out = tmp_path / "v.dot"
    assert main(["graph", str(DEMOS / "vandermonde" / "model.xml"), "-o", str(out)]) == 0
    dot = out.read_text()
    assert 'label="x\\n(input 2)"' in dot and 'label="ones\\n(input 3)"' in dot
    assert "headlabel" in dot and "labeldistance=2.2" in dot
    assert "body condition" in dot and "execution condition" not in dot
