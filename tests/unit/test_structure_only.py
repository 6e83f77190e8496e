"""A model with operations loopdbg cannot run still opens for ``explain`` and ``graph``.

``Engine(model, require_kernels=False)`` gives each such layer a placeholder that raises
UnsupportedOperation if it is ever run; ``engine.unsupported`` is the one sentence naming them all.
The model here is the while_loop demo with one layer's type changed to an operation no kernel will
ever serve (``Frobnicate``, as a user's extension op would be): once in the loop's body, once in
the top graph before the loop.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from loopdbg.cli import main
from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.load import read_model
from loopdbg.teach.explain import explain

DEMO = Path(__file__).resolve().parents[2] / "loopdbg" / "demos" / "while_loop"
INPUTS = DEMO / "inputs.npz"


def with_frobnicate(tmp_path: Path, layer: str) -> Path:
    """The demo with layer ``layer``'s type made Frobnicate (version 'extension')."""
    text, n = re.subn(rf'(name="{re.escape(layer)}" )type="\w+" version="\w+"',
                      r'\1type="Frobnicate" version="extension"', (DEMO / "model.xml").read_text())
    assert n == 1
    (tmp_path / "m.xml").write_text(text)
    shutil.copy(DEMO / "model.bin", tmp_path / "m.bin")
    return tmp_path / "m.xml"


@pytest.fixture
def in_body(tmp_path) -> Path:
    return with_frobnicate(tmp_path, "x_next")            # the loop body's Multiply


@pytest.fixture
def before_loop(tmp_path) -> Path:
    return with_frobnicate(tmp_path, "x0_below_limit")    # the Less feeding the condition


def test_an_engine_still_refuses_such_a_model_by_default(in_body):
    with pytest.raises(UnsupportedOperation, match="uses an operation loopdbg cannot run: "
                                                   "Frobnicate extension"):
        Engine(read_model(in_body))


def test_without_kernels_the_structure_is_there_and_the_placeholder_refuses_to_run(in_body):
    engine = Engine(read_model(in_body), require_kernels=False)
    assert engine.unsupported.startswith(f"{in_body} uses an operation loopdbg cannot run: "
                                         f"Frobnicate extension (layer 3 'x_next'")
    assert list(engine.loops) == ["doubling"]
    spec = engine.loops["doubling"]
    assert [s.layer.name for s in spec.body.steps] == ["x_next", "keep_going"]
    with pytest.raises(UnsupportedOperation, match=r"layer 3 'x_next' \(Frobnicate\)"):
        engine.run_to_end(load_npz(INPUTS))


def test_without_kernels_a_runnable_model_runs_as_before():
    model = read_model(DEMO / "model.xml")
    plain = Engine(model).run_to_end(load_npz(INPUTS))
    relaxed = Engine(model, require_kernels=False)
    assert relaxed.unsupported is None
    again = relaxed.run_to_end(load_npz(INPUTS))
    assert plain.outputs.keys() == again.outputs.keys()
    for name, value in plain.outputs.items():
        np.testing.assert_array_equal(again.outputs[name], value)


def test_explain_without_inputs_says_it_reads_the_structure(in_body, capsys):
    assert main(["explain", str(in_body)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Loop 'doubling'")
    assert "x_next = Frobnicate(x, 2.0);" in out
    assert ("note: loopdbg cannot run this model, so this is read from its structure: "
            f"{in_body} uses an operation loopdbg cannot run: Frobnicate extension") in out
    assert "The inputs decided" not in out and "the run on the given inputs failed" not in out


def test_explain_with_inputs_decides_what_runs_before_the_missing_operation(in_body, capsys):
    # The execution condition is computed before the loop, so the inputs decide it even though
    # the body cannot run; the run itself is no error of the model's.
    assert main(["explain", str(in_body), str(INPUTS), "--format", "json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["cannot_run"].startswith(f"{in_body} uses an operation loopdbg cannot run")
    assert "run_error" not in facts
    loop, = facts["loops"]
    assert loop["execution_condition"] == {"kind": "computed", "source": "x0_below_limit",
                                           "value": True}
    assert loop["runs"] == [{"iterations": 0, "stopped": "error",
                             "stopped_because": "an error stopped it"}]


def test_explain_with_inputs_when_the_loop_is_never_reached(before_loop, capsys):
    assert main(["explain", str(before_loop), str(INPUTS)]) == 0
    out = capsys.readouterr().out
    assert "with the given inputs:\n  never started" in out
    assert out.rstrip().endswith("The inputs decided only the loops that start before the "
                                 "first of them.")


def test_explain_facts_of_a_model_that_runs_have_no_note():
    facts = explain(Engine(read_model(DEMO / "model.xml")), load_npz(INPUTS))
    assert "cannot_run" not in facts and "run_error" not in facts


@pytest.mark.parametrize("fixture", ["in_body", "before_loop"])
def test_graph_draws_a_model_it_cannot_run(fixture, request, tmp_path, capsys):
    xml = request.getfixturevalue(fixture)
    out = tmp_path / "x.dot"
    assert main(["graph", str(xml), "-o", str(out)]) == 0
    source = out.read_text()
    assert source.startswith("digraph") and "x_next" in source
    if fixture == "in_body":
        assert "Frobnicate" in source
    assert "drawn in" in capsys.readouterr().err


def test_run_still_refuses_in_one_line(in_body, capsys):
    assert main(["run", str(in_body), str(INPUTS)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "uses an operation loopdbg cannot run: Frobnicate extension" in err[0]
