"""The command line's papercuts of issue 18 (item 7), each as a user met it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import numpy as np

from loopdbg.cli import main
from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model
from loopdbg.trace import record

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "loopdbg" / "demos"


def test_options_may_come_between_the_positionals(capsys):
    demo = DEMOS / "for_loop"
    assert main(["run", str(demo / "model.xml"), "--max-iterations", "2",
                 str(demo / "inputs.npz")]) == 0
    captured = capsys.readouterr()
    assert "2 iterations" in captured.out and "iteration cap" in captured.out
    assert f"inputs: {demo / 'inputs.npz'}" not in captured.err     # the file given was used


def test_trace_show_takes_a_loop_s_short_name(tmp_path, capsys):
    demo = DEMOS / "nested_loop"
    model = read_model(demo / "model.xml")
    inputs = load_npz(demo / "inputs.npz")
    trace = tmp_path / "n.ltrace"
    record(Engine(model).run(inputs), trace, model=model, inputs=inputs)
    assert main(["trace", "show", str(trace), "--loop", "cols_loop", "--outer", "1",
                 "-i", "2"]) == 0
    assert "loop 'rows_loop/cols_loop' (outer iterations 1), iteration 2" in \
        capsys.readouterr().out
    assert main(["trace", "show", str(trace), "--loop", "nope", "-i", "0"]) == 2
    assert "no loop 'nope'; it holds: " in capsys.readouterr().err


def test_the_builtin_i_is_the_checked_loop_s_and_the_note_says_so(capsys):
    demo = DEMOS / "nested_loop"
    assert main(["run", str(demo / "model.xml"), "--break", "i == 2"]) == 0
    captured = capsys.readouterr()
    assert "the model's own i (in rows_loop) is t[\"i\"]" in captured.err
    assert "in loop rows_loop/cols_loop at iteration 2" in captured.out
    assert main(["run", str(demo / "model.xml"), "--break", "rows_loop: i == 2"]) == 0
    assert "in loop rows_loop at iteration 2" in capsys.readouterr().out
    assert main(["run", str(demo / "model.xml"), "--break", 't["i"] == 1']) == 0
    captured = capsys.readouterr()
    assert "in loop rows_loop at iteration 1" in captured.out and "note:" not in captured.err


def test_inputs_by_position(tmp_path, capsys):
    """Converters name inputs x.1, n.1: the first input is also "0" (or numpy's "arr_0")."""
    demo = DEMOS / "fibonacci"
    given = load_npz(demo / "inputs.npz")
    names = list(given)
    by_number = tmp_path / "by_number.npz"
    np.savez(by_number, **{str(k): given[n] for k, n in enumerate(names)})
    by_savez = tmp_path / "by_savez.npz"
    np.savez(by_savez, *[given[n] for n in names])
    outputs = []
    for path in (demo / "inputs.npz", by_number, by_savez):
        assert main(["run", str(demo / "model.xml"), str(path)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    np.savez(tmp_path / "short.npz", given[names[0]])
    assert main(["run", str(demo / "model.xml"), str(tmp_path / "short.npz")]) == 2
    assert "nor an array '1' or 'arr_1' for input number 1" in capsys.readouterr().err



def _help(parser, command, capsys) -> str:
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--help"])
    return capsys.readouterr().out


def test_a_command_builds_only_its_own_parser_and_says_the_same(tmp_path, capsys):
    from loopdbg.cli import COMMANDS, build_parser

    for command in COMMANDS:     # one sub-command's parser reads as it does among all ten
        alone = _help(build_parser((command,)), command, capsys)
        assert alone.startswith(f"usage: loopdbg {command}")
        assert alone == _help(build_parser(), command, capsys)
    code = ("import sys\nfrom loopdbg.cli import main\n"
            f"assert main(['run', {str(tmp_path / 'missing.xml')!r}]) != 0\n"
            "print(sorted(m for m in sys.modules if m.startswith('loopdbg.cli.cmd_')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert out.stdout.strip() == "['loopdbg.cli.cmd_run']"
    assert "missing.xml" in out.stderr


def test_the_program_leaves_its_objects_to_the_exit_and_an_in_process_call_does_not(
        monkeypatch, capsys):
    import gc

    import loopdbg.cli
    import loopdbg.engine

    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append("freeze"))
    monkeypatch.setattr(loopdbg.engine, "Engine", _Collected(loopdbg.engine.Engine, frozen))
    monkeypatch.setattr(loopdbg.cli, "PROGRAM", False)
    demo = DEMOS / "for_loop"
    argv = ["run", str(demo / "model.xml"), str(demo / "inputs.npz"), "-q"]
    assert main(argv) == 0 and frozen == [True]      # a caller's process goes on: collected
    monkeypatch.setattr(sys, "argv", ["loopdbg", *argv])
    frozen.clear()
    # the process's own command line: the model and plan are made without the collector and
    # then frozen, and so is everything else at the end
    assert main() == 0 and frozen == [False, "freeze", "freeze"] and gc.isenabled()
    monkeypatch.setattr(sys, "argv", ["loopdbg", "run", str(demo / "missing.xml")])
    frozen.clear()
    assert main() == 2 and frozen == ["freeze"] and gc.isenabled()
    assert "missing.xml" in capsys.readouterr().err
    from loopdbg.cli import cmd_explain        # any other command runs with the collector

    monkeypatch.setattr(cmd_explain, "run", lambda args: 0 if gc.isenabled() else 3)
    monkeypatch.setattr(sys, "argv", ["loopdbg", "explain", str(demo / "model.xml")])
    assert main() == 0


class _Collected:
    """Engine, noting whether the collector ran while it was made (in ``log``)."""

    def __init__(self, engine, log):
        self.engine, self.log = engine, log

    def __call__(self, *args, **kwargs):
        import gc

        self.log.append(gc.isenabled())
        return self.engine(*args, **kwargs)
