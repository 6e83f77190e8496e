"""`loopdbg run MODEL [INPUTS] --break EXPR --loop NAME --watch EXPR --on-nan`: headless stops.

Runs ``loopdbg.cli.main([...])`` in-process and checks the exit code, the first line and the report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loopdbg.cli import main

TESTS = Path(__file__).resolve().parent.parent
CORPUS = TESTS / "corpus"
DATA = TESTS / "data"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # log(0), overflow on purpose


def model(case: str) -> str:
    folder = DATA if (DATA / case).is_dir() else CORPUS
    return str(folder / case / "model.xml")


def run(capsys, *argv):
    code = main(["run", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


# -- a breakpoint hits ---------------------------------------------------------------------------
def test_break_prints_the_stop_report(capsys):
    code, out, err = run(capsys, model("loop_while_iter"), "--break", "i == 3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "stopped: breakpoint 1 (i == 3) in loop loop at iteration 3"
    assert lines[1] == "  loop:          loop (Loop, trip count no limit)"
    assert lines[2] == "  condition:     true -> iteration 4 runs next"
    assert "  back edges:" in lines and "  concatenated:" in lines
    assert any(line.startswith("    x_trace so far      float32 (4,)") for line in lines)
    assert "outputs:" not in out                         # it stopped: no run summary
    assert "inputs: " in err                             # inputs.npz beside the model was used


def test_explicit_inputs_and_a_watch(capsys, tmp_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x0=np.array([2.0], np.float32), limit=np.array([1000.0], np.float32))
    code, out, _ = run(capsys, model("loop_while_iter"), inputs, "--break", "Result_5536[0] > 100",
                       "--watch", "body_count", "--watch", "t['body_x'] * 2")
    assert code == 0
    lines = out.splitlines()
    # x <- 1.5 x + i from 2: 3, 5.5, 10.25, 18.375, 31.56, 52.34, 84.51, 133.77
    assert lines[0] == "stopped: breakpoint 1 (Result_5536[0] > 100) in loop loop at iteration 7"
    assert "  watches:" in lines
    assert "    1: body_count       int64 () 7" in lines
    assert any(line.startswith("    2: t['body_x'] * 2  float32 (1,) [") for line in lines)


def test_several_breaks_are_numbered_in_order(capsys):
    code, out, _ = run(capsys, model("loop_for_accum_scan"), "--break", "i == 3",
                       "--break", "i >= 1")
    assert code == 0
    assert out.splitlines()[0] == "stopped: breakpoint 2 (i >= 1) in loop loop at iteration 1"


def test_break_in_a_tensor_iterator(capsys):
    code, out, _ = run(capsys, model("ti_lstm_forward"), "--break", "i == 2 and norm(body_H) > 0")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == ("stopped: breakpoint 1 (i == 2 and norm(body_H) > 0) in loop lstm_ti "
                        "at iteration 2")
    assert lines[1] == "  loop:          lstm_ti (TensorIterator, trip count 5)"
    assert "  sliced inputs:" in lines


@pytest.mark.parametrize("loop, first", [
    (None, "stopped: breakpoint 1 (i == 1) in loop outer/inner at iteration 1"),
    ("inner", "stopped: breakpoint 1 (i == 1) in loop outer/inner at iteration 1"),
    ("outer", "stopped: breakpoint 1 (i == 1) in loop outer at iteration 1"),
])
def test_break_with_loop_in_a_nested_loop(capsys, loop, first):
    extra = ["--loop", loop] if loop else []
    code, out, _ = run(capsys, model("nested_loop"), "--break", "i == 1", *extra)
    assert code == 0 and out.splitlines()[0] == first


def test_break_on_a_value_of_the_inner_loop_only(capsys):
    code, out, _ = run(capsys, model("nested_loop"), "--break", "inner_add[1] >= 9")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "stopped: breakpoint 1 (inner_add[1] >= 9) in loop outer/inner at iteration 0"
    assert lines[1] == "  loop:          outer/inner (Loop, trip count 2, outer iterations [1])"


def test_a_condition_that_raises_stops_and_says_why(capsys):
    code, out, _ = run(capsys, model("loop_trip_and_cond_early_stop"), "--break", "body_v > 1")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("stopped: error in breakpoint 1 (body_v > 1): ValueError: the truth of "
                            "an array of shape (4,) is ambiguous")
    assert first.endswith("in loop loop at iteration 0")


# -- nothing hits ------------------------------------------------------------------------------
def test_no_hit_finishes_as_a_plain_run(capsys):
    code, out, _ = run(capsys, model("loop_while_iter"), "--break", "i == 30")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "no breakpoint was hit; the run finished."
    assert lines[1:3] == ["loops:", "  loop: 7 iterations, stopped because the body condition "
                                    "became false"]
    assert "outputs:" in lines and any(line.startswith("  x_final") for line in lines)
    code, plain, _ = run(capsys, model("loop_while_iter"))
    assert code == 0 and out == lines[0] + "\n" + plain


def test_no_hit_on_a_loop_that_never_runs(capsys):
    code, out, _ = run(capsys, model("loop_zero_iter_cond_false"), "--break", "True")
    assert code == 0
    assert out.splitlines()[:2] == ["no breakpoint was hit; the run finished.", "loops:"]


def test_max_iterations_ends_the_loop_before_the_breakpoint(capsys):
    code, out, _ = run(capsys, model("loop_while_iter"), "--break", "i == 5",
                       "--max-iterations", "3")
    assert code == 0
    assert out.splitlines()[0] == "no breakpoint was hit; the run finished."
    assert "3 iterations, stopped because the iteration cap" in out


# -- --on-nan ----------------------------------------------------------------------------------
def test_on_nan_names_the_tensor(capsys, tmp_path):
    inputs = tmp_path / "huge.npz"
    np.savez(inputs, x0=np.array([1e30], np.float32), limit=np.array([np.inf], np.float32))
    code, out, _ = run(capsys, model("loop_while_iter"), inputs, "--on-nan")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("stopped: Inf in back edge 'body_x' in loop loop at iteration ")
    k = int(first.rsplit(" ", 1)[1])
    assert 0 < k < 100
    edge = next(line for line in out.splitlines() if line.startswith("    body_x <- "))
    assert "inf" in edge                                 # the back edge line shows the Inf


def test_on_nan_in_a_last_value_output(capsys):
    code, out, _ = run(capsys, model("nan_loop"), "--on-nan")
    assert code == 0
    assert out.splitlines()[0] == "stopped: Inf in output 'y_last' in loop shrink at iteration 1"


def test_on_nan_and_a_break_whichever_comes_first(capsys):
    code, out, _ = run(capsys, model("nan_loop"), "--on-nan", "--break", "i == 0")
    assert out.splitlines()[0] == "stopped: breakpoint 1 (i == 0) in loop shrink at iteration 0"
    code, out, _ = run(capsys, model("nan_loop"), "--on-nan", "--break", "i == 4")
    assert out.splitlines()[0] == "stopped: Inf in output 'y_last' in loop shrink at iteration 1"


def test_on_nan_without_a_nan(capsys):
    code, out, _ = run(capsys, model("ti_gru"), "--on-nan")
    assert code == 0 and out.splitlines()[0] == "no NaN or Inf appeared; the run finished."


# -- refused before the run ----------------------------------------------------------------------
@pytest.mark.parametrize("option, text, message", [
    ("--break", "__import__('os').system('ls')", "calling anything but a listed function"),
    ("--break", "__import__('os')", "the function '__import__' is not allowed"),
    ("--break", "body_x.T", "the attribute '.T' (only .shape is)"),
    ("--break", "lambda: 1", "lambdas"),
    ("--break", "[v for v in body_x]", "comprehensions"),
    ("--break", "exp(body_x) > 1", "the function 'exp' is not allowed; the functions are abs, all"),
    ("--break", "h > 0", "'h' is not a name in any loop of the model; names there: "),
    ("--break", "i ==", "is not a valid expression"),
    ("--watch", "body_x.dtype", "the attribute '.dtype'"),
    ("--watch", 't["nope"]', "'nope' is not a name"),
])
def test_refused_expressions_exit_2_before_running(capsys, option, text, message):
    code, out, err = run(capsys, model("loop_while_iter"), option, text)
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == err.splitlines()[-1].strip()
    assert f"loopdbg: '{text}'" in err and message in err


def test_nothing_of_a_refused_expression_is_executed(capsys, tmp_path):
    marker = tmp_path / "hacked"
    for text in (f"__import__('os').system('touch {marker}')",
                 f"open('{marker}', 'w')", f"[open('{marker}', 'w') for _ in 'x']"):
        code, out, err = run(capsys, model("loop_while_iter"), "--break", text)
        assert code == 2 and "is not allowed" in err
    assert not marker.exists()


def test_an_unknown_loop_is_refused(capsys):
    code, out, err = run(capsys, model("nested_loop"), "--break", "i == 1", "--loop", "middle")
    assert code == 2 and out == ""
    assert "loopdbg: the model has no loop 'middle'; its loops are " in err
    assert sorted(err.split("its loops are ")[1].strip().rstrip(".").split(", ")) == \
        ["outer", "outer/inner"]


def test_a_name_of_another_loop_is_refused_with_loop(capsys):
    code, out, err = run(capsys, model("nested_loop"), "--break", "ox[0] > 1", "--loop", "inner")
    assert code == 2 and out == ""
    assert "'ox' is not a name in loop 'inner'" in err


# -- errors and quiet ---------------------------------------------------------------------------
def test_a_run_error_before_the_breakpoint_exits_non_zero(capsys):
    code, out, err = run(capsys, model("loop_while_iter"), "--break", "i == 5",
                         "--max-memory", "16")
    assert code == 2 and out == ""
    assert "loopdbg: " in err and "memory budget" in err


def test_quiet_still_prints_the_stop_report(capsys):
    code, out, err = run(capsys, model("loop_while_iter"), "--break", "i == 1", "-q")
    assert code == 0 and err == ""
    assert out.splitlines()[0] == "stopped: breakpoint 1 (i == 1) in loop loop at iteration 1"
