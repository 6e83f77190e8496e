"""``loopdbg plot`` and the series it draws: one number per iteration, from a model or a trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopdbg.cli import main
from loopdbg.debug.series import choose_loop, collect
from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.errors import LoopdbgError
from loopdbg.ir.load import read_model

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "loopdbg" / "demos"


def run_events(name):
    model = read_model(DEMOS / name / "model.xml")
    return Engine(model).run(load_npz(DEMOS / name / "inputs.npz"))


def test_series_of_a_while_loop():
    s = collect(run_events("while_loop"), ["i", "x[0] * 2", "changed(x)"], "doubling")
    assert s.x == list(range(7)) and s.executions == 1
    assert s.values["x[0] * 2"] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]   # x at each start
    assert s.values["changed(x)"] == [0.0] + [1.0] * 6


def test_series_of_a_nested_loop_keeps_each_execution_apart():
    s = collect(run_events("nested_loop"), ["i"], "rows_loop/cols_loop")
    assert s.executions == 3 and s.starts == [0, 4, 8]
    assert s.outers == [(0,), (1,), (2,)]
    one = collect(run_events("nested_loop"), ["i"], "rows_loop/cols_loop", outer=(1,))
    assert one.x == [0, 1, 2, 3] and one.outers == [(1,)]


def test_an_expression_that_is_not_one_number_is_refused_with_a_hint():
    with pytest.raises(LoopdbgError, match=r"'h' gives shape \(1, 4\) at iteration 0 .* "
                                           r"one number per iteration"):
        collect(run_events("ti_lstm"), ["h"], "lstm_over_time")
    with pytest.raises(LoopdbgError, match="'nope' at iteration 0"):
        collect(run_events("ti_lstm"), ["nope"], "lstm_over_time")


def test_choosing_the_loop():
    paths = ["outer", "outer/inner"]
    assert choose_loop(paths, "inner", "m") == "outer/inner"
    assert choose_loop(["only"], None, "m") == "only"
    with pytest.raises(LoopdbgError, match="choose one with --loop"):
        choose_loop(paths, None, "m")
    with pytest.raises(LoopdbgError, match="no loop named 'x'"):
        choose_loop(paths, "x", "m")


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib")


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"),
                                           (".pdf", b"%PDF")])
def test_plot_a_model_to_each_format(tmp_path, mpl, capsys, suffix, magic):
    out = tmp_path / f"p{suffix}"
    assert main(["plot", str(DEMOS / "ti_lstm" / "model.xml"), "mean(h)", "norm(c)",
                 "-o", str(out)]) == 0
    assert out.read_bytes().startswith(magic)
    assert "6 iterations of loop 'lstm_over_time' plotted in" in capsys.readouterr().err


def test_plot_a_trace_and_a_nested_loop(tmp_path, mpl):
    trace = tmp_path / "run.ltrace"
    assert main(["run", str(DEMOS / "nested_loop" / "model.xml"), "--trace", str(trace),
                 "-q"]) == 0
    out = tmp_path / "inner.svg"
    assert main(["plot", str(trace), "i", "--loop", "cols_loop", "--outer", "1",
                 "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"<?xml")


def test_plot_with_inputs_and_a_limit(tmp_path, mpl):
    out = tmp_path / "x.png"
    assert main(["plot", str(DEMOS / "infinite_loop" / "model.xml"),
                 str(DEMOS / "infinite_loop" / "inputs.npz"), "i", "--max-iterations", "30",
                 "-o", str(out)]) == 0
    assert out.stat().st_size > 0


@pytest.mark.parametrize("argv, message", [
    ([str(DEMOS / "ti_lstm" / "inputs.npz"), "-o", "x.png"], "give at least one expression"),
    (["i", "-o", "x.gif"], "say which format"),
    (["h", "-o", "x.png"], "one number per iteration"),
    (["i", "--outer", "a", "-o", "x.png"], "--outer 'a'"),
])
def test_plot_errors_are_one_sentence(tmp_path, mpl, capsys, argv, message):
    argv = [a if a != "x.png" else str(tmp_path / "x.png") for a in argv]
    if "-o" not in argv:
        argv = ["-o"] + argv
    code = main(["plot", str(DEMOS / "ti_lstm" / "model.xml"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and err[-1].startswith("loopdbg: ") and message in err[-1]


def test_plot_never_overwrites_what_it_reads(tmp_path, mpl, capsys):
    inputs = tmp_path / "in.npz"
    inputs.write_bytes((DEMOS / "ti_lstm" / "inputs.npz").read_bytes())
    before = inputs.read_bytes()
    code = main(["plot", str(DEMOS / "ti_lstm" / "model.xml"), str(inputs), "mean(h)",
                 "-o", str(tmp_path / "in.npz")])
    assert code != 0 and inputs.read_bytes() == before


def test_plot_without_matplotlib_says_how_to_install_it(monkeypatch, capsys, tmp_path):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = main(["plot", str(DEMOS / "ti_lstm" / "model.xml"), "mean(h)",
                 "-o", str(tmp_path / "p.png")])
    assert code != 0 and "pip install 'loopdbg[plot]'" in capsys.readouterr().err
