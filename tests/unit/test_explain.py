"""loopdbg explain: modes of every demo and corpus model, golden text, pitfalls, the CLI.

* The mode of every loop of every demo (``loopdbg/demos/``) and every corpus model (``tests/corpus``),
  decided with the model's inputs; without inputs an input-dependent mode is said to depend on
  them, with what it would be either way.
* The text of two demos word for word (``while_loop`` and ``zero_trip``).
* Each pitfall on a small built model: undefined last values after zero iterations, scan pieces of
  varying shape, infinite loops, non-canonical TensorIterator slicing, a condition that is not a
  boolean scalar, a reversed Loop concatenation.
* ``loopdbg explain MODEL [INPUTS] [--loop PATH] [--format text|json]``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from loopdbg.cli import main
from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.builder import GraphBuilder
from loopdbg.ir.load import read_model
from loopdbg.teach.explain import explain
from loopdbg.teach.explain_text import format_text

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "loopdbg" / "demos"
CORPUS = ROOT / "tests" / "corpus"

DEMO_MODES = {
    "for_loop": {"sum_of_squares": "for"},
    "for_break": {"savings": "for-with-condition"},
    "while_loop": {"doubling": "while"},
    "do_while": {"count_digits": "do-while"},
    "infinite_loop": {"clock": "infinite"},
    "zero_trip": {"never": "for"},
    "never_runs": {"guarded": "for"},
    "fibonacci": {"fib": "for"},
    "prefix_sum": {"running_sum": "for"},
    "vandermonde": {"powers": "for"},
    "ti_lstm": {"lstm_over_time": "tensor-iterator"},
    "ti_reverse": {"suffix_sum": "tensor-iterator"},
    "ti_pairs": {"pairwise_mean": "tensor-iterator"},
    "nested_loop": {"rows_loop": "for", "rows_loop/cols_loop": "for"},
    "onnx_loop": {"loop": "for-with-condition"},
}

CORPUS_MODES = {
    "loop_for_accum_scan": "for",
    "loop_int32_tripcount": "for",
    "loop_invariant_input": "for",
    "loop_no_current_iteration": "for",
    "loop_scan_axis1": "for",
    "loop_sliced_input": "for",
    "loop_trip_and_cond_early_stop": "for-with-condition",
    "loop_while_iter": "do-while",
    "loop_zero_iter_cond_false": "for-with-condition",
    "onnx_loop_spec_example": "for-with-condition",
    "ti_gru": "tensor-iterator",
    "ti_invariant_reverse_out": "tensor-iterator",
    "ti_lstm_forward": "tensor-iterator",
}


def _facts(xml: Path, with_inputs: bool = True) -> dict:
    inputs = load_npz(xml.with_name("inputs.npz")) if with_inputs else None
    return explain(Engine(read_model(xml)), inputs)


def _modes(facts: dict) -> dict[str, str]:
    return {loop["path"]: loop["mode"] for loop in facts["loops"]}


def test_every_demo_is_listed():
    built = sorted(p.parent.name for p in DEMOS.glob("*/model.xml"))
    assert built == sorted(DEMO_MODES)


@pytest.mark.parametrize("name", sorted(DEMO_MODES))
def test_demo_mode(name):
    facts = _facts(DEMOS / name / "model.xml")
    assert _modes(facts) == DEMO_MODES[name]
    assert "run_error" not in facts or name == "infinite_loop"


def test_every_corpus_model_is_listed():
    assert sorted(p.parent.name for p in CORPUS.glob("*/model.xml")) == sorted(CORPUS_MODES)


@pytest.mark.parametrize("name", sorted(CORPUS_MODES))
def test_corpus_mode(name):
    xml = CORPUS / name / "model.xml"
    for with_inputs in (True, False):
        modes = set(_modes(_facts(xml, with_inputs)).values())
        assert modes == {CORPUS_MODES[name]}, with_inputs


def test_input_dependent_mode_without_inputs_says_so():
    facts = _facts(DEMOS / "nested_loop" / "model.xml", with_inputs=False)
    outer = facts["loops"][0]
    assert outer["path"] == "rows_loop"                  # the enclosing loop comes first
    assert outer["mode"] is None and outer["depends_on_inputs"]
    assert outer["mode_if"] == {"rows >= 0": "for", "rows < 0": "infinite"}
    text = format_text(facts)
    assert "mode: depends on the inputs: for when rows >= 0; infinite when rows < 0; give INPUTS " \
           "to decide" in text
    with_inputs = format_text(_facts(DEMOS / "nested_loop" / "model.xml"))
    assert "mode: for  (decided by the given inputs)" in with_inputs
    assert with_inputs.count("4 iterations, stopped because the trip count was reached") == 3


def test_sections_begin_with_type_and_name_then_mode():
    for xml in sorted(DEMOS.glob("*/model.xml")) + sorted(CORPUS.glob("*/model.xml")):
        facts = _facts(xml, with_inputs=False)
        lines = format_text(facts).splitlines()
        for loop in facts["loops"]:
            head = next(k for k, line in enumerate(lines)
                        if line.startswith(f"{loop['type']} '{loop['name']}'"))
            assert lines[head + 1].startswith("mode: "), xml


GOLDEN_WHILE_LOOP = """Loop 'doubling'
mode: while
  trip count: -1 (negative: no limit)
  execution condition: computed by 'x0_below_limit', true with the given inputs
  body condition: computed by 'keep_going'

    lim = limit;  // invariant
    x = x0;  // merged: x <- x_next after each iteration
    x_trace = [];  // concatenated on axis 0
    cond = x0_below_limit;  // the execution condition
    while (cond) {
        x_next = Multiply(x, 2.0);
        keep_going = Less(x_next, lim);
        x_trace.append(x_next);
        cond = keep_going;  // if false: this iteration still counts, then stop
        x <- x_next;
    }
    x_final = x;  // x_next of the last iteration, carried into x (x0 if none ran)
    x_trace = concat(x_trace, axis=0);

inputs:
  x    merged: starts as x0, then x <- x_next
  lim  invariant: limit, the same in every iteration
outputs:
  x_final  last value of x_next (fed back: the initial value if no iteration runs)
  x_trace  x_next of every iteration, concatenated on axis 0 (iteration order)
with the given inputs:
  7 iterations, stopped because the body condition became false
pitfalls:
  none found
"""

GOLDEN_ZERO_TRIP = """Loop 'never'
mode: for
  trip count: 0
  execution condition: true
  body condition: true

    acc = acc0;  // merged: acc <- acc_next after each iteration
    acc_rows = [];  // concatenated on axis 0
    for (i = 0; i < 0; i++) {
        acc_next = Add(acc, 1.0);
        doubled = Multiply(acc_next, 2.0);
        acc_row = Unsqueeze(acc_next, 0);
        acc_rows.append(acc_row);
        acc <- acc_next;
    }
    acc_final = acc;  // acc_next of the last iteration, carried into acc (acc0 if none ran)
    doubled_final = doubled;  // its value in the last iteration (undefined if none ran)
    acc_rows = concat(acc_rows, axis=0);

inputs:
  acc  merged: starts as acc0, then acc <- acc_next
outputs:
  acc_final      last value of acc_next (fed back: the initial value if no iteration runs)
  doubled_final  last value of doubled (not fed back: undefined if no iteration runs)
  acc_rows       acc_row of every iteration, concatenated on axis 0 (iteration order)
with the given inputs:
  0 iterations, stopped because the trip count was 0, so the body never ran
pitfalls:
  - output 'doubled_final' (the last value of doubled) is not fed by a back edge; the trip count is 0, so no iteration runs and its value is undefined by the specification (loopdbg gives zeros, OpenVINO's CPU plugin whatever is in memory).
"""


@pytest.mark.parametrize("name, golden", [("while_loop", GOLDEN_WHILE_LOOP),
                                          ("zero_trip", GOLDEN_ZERO_TRIP)])
def test_golden_text(name, golden, capsys):
    """Without INPUTS, explain reads the inputs.npz beside the model, as run does."""
    assert main(["explain", str(DEMOS / name / "model.xml")]) == 0
    captured = capsys.readouterr()
    assert captured.out == golden
    assert f"inputs: {DEMOS / name / 'inputs.npz'}" in captured.err


# ---------------------------------------------------------------------------------------------
# Pitfalls


def _kinds(model) -> list[str]:
    facts = explain(Engine(model))
    return [p["kind"] for loop in facts["loops"] for p in loop["pitfalls"]]


def test_demo_pitfalls():
    assert _kinds(read_model(DEMOS / "zero_trip" / "model.xml")) == \
        ["undefined_after_zero_iterations"]
    assert _kinds(read_model(DEMOS / "infinite_loop" / "model.xml")) == ["infinite"]
    for name in ("for_loop", "while_loop", "do_while", "fibonacci", "ti_lstm", "ti_reverse",
                 "ti_pairs", "onnx_loop", "never_runs", "vandermonde", "prefix_sum"):
        assert _kinds(read_model(DEMOS / name / "model.xml")) == [], name


def _counter_loop(trip=3, cond=True, *, body_cond=None, last_from="x_next", scan=None):
    b = GraphBuilder("pit")
    x0 = b.parameter("x0", "f32", [2])
    loop = b.loop("loop", trip=trip, cond=cond(b) if callable(cond) else cond)
    x = loop.merged_input(x0, "x")
    body = loop.body
    x_next = body.op("Add", [x, np.float32(1)], name="x_next")
    twice = body.op("Multiply", [x_next, np.float32(2)], name="twice")
    loop.back_edge(x_next, x)
    if body_cond is not None:
        loop.condition(body_cond(body, x_next))
    b.result(loop.output_last(x_next if last_from == "x_next" else twice, name="out"))
    if scan is not None:
        b.result(scan(loop, body, x_next))
    return b.build()


def test_pitfall_undefined_after_zero_iterations_when_the_condition_is_an_input():
    def exec_cond(b):
        return b.parameter("go", "boolean", [])
    facts = explain(Engine(_counter_loop(3, exec_cond, last_from="twice")))
    [p] = facts["loops"][0]["pitfalls"]
    assert p["kind"] == "undefined_after_zero_iterations"
    assert "if the execution condition ('go') is false, no iteration runs" in p["message"]
    assert _kinds(_counter_loop(3, exec_cond)) == []        # fed back: the initial value
    assert _kinds(_counter_loop(3, True, last_from="twice")) == []   # cannot run zero times


def test_pitfall_condition_not_a_boolean_scalar():
    def vector_cond(body, x_next):
        return body.op("Greater", [x_next, np.float32(2)], name="bigger")

    def float_cond(body, x_next):
        return body.op("ReduceSum", [x_next, np.array([0], np.int64)], name="total")
    facts = explain(Engine(_counter_loop(body_cond=vector_cond)))
    [p] = facts["loops"][0]["pitfalls"]
    assert p["kind"] == "condition_not_boolean_scalar" and "shape is [2]" in p["message"]
    facts = explain(Engine(_counter_loop(body_cond=float_cond)))
    [p] = facts["loops"][0]["pitfalls"]
    assert p["kind"] == "condition_not_boolean_scalar" and "FP32" in p["message"]


def test_pitfall_concat_shape_may_vary_and_reversed_loop_concat():
    def dynamic_piece(loop, body, x_next):
        nz = body.op("NonZero", [x_next], name="nonzero")
        return loop.output_concat(nz, axis=0, name="where")

    def reversed_scan(loop, body, x_next):
        row = body.op("Unsqueeze", [x_next, np.array([0], np.int64)], name="row")
        return loop.output_concat(row, axis=0, name="rev", start=-1, end=0, stride=-1)

    def wide_piece(loop, body, x_next):
        return loop.output_concat(x_next, axis=0, name="flat")
    assert _kinds(_counter_loop(scan=dynamic_piece)) == ["concat_shape_may_vary"]
    assert _kinds(_counter_loop(scan=reversed_scan)) == ["reversed_loop_concat"]
    assert _kinds(_counter_loop(scan=wide_piece)) == ["concat_piece_not_one"]


def test_pitfall_infinite_loop_and_input_trip_count():
    assert _kinds(_counter_loop(trip=-1)) == ["infinite"]
    b = GraphBuilder("maybe")
    n = b.parameter("n", "i64", [])
    loop = b.loop("loop", trip=n, cond=True)
    it = loop.current_iteration("i", "i64", [1])
    b.result(loop.output_concat(it, axis=0, name="seen"))
    assert _kinds(b.build()) == ["may_be_infinite"]


@pytest.mark.parametrize("start, end, stride, canonical", [
    (0, -1, 1, True), (-1, 0, -1, True), (1, -1, 1, False), (0, 3, 1, False),
    (-2, 0, -1, False), (4, 0, -1, True)])
def test_pitfall_non_canonical_tensor_iterator_slicing(start, end, stride, canonical):
    b = GraphBuilder("ti")
    X = b.parameter("X", "f32", [5, 2])
    ti = b.tensor_iterator("ti")
    x_t = ti.sliced_input(X, "x_t", axis=0, start=start, end=end, stride=stride)
    b.result(ti.output_concat(ti.body.op("Relu", [x_t], name="r"), axis=0, name="Y"))
    kinds = _kinds(b.build())
    assert kinds == ([] if canonical else ["non_canonical_slicing"])


# ---------------------------------------------------------------------------------------------
# The command


def test_json_has_the_same_facts(capsys):
    xml = DEMOS / "ti_reverse" / "model.xml"
    assert main(["explain", str(xml), "--format", "json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    [loop] = facts["loops"]
    assert loop["type"] == "TensorIterator" and loop["mode"] == "tensor-iterator"
    assert loop["inputs"] == [
        {"name": "x_t", "role": "sliced", "from": "x", "axis": 0, "start": -1, "end": 0,
         "stride": -1, "part_size": 1, "order": "backward"},
        {"name": "acc", "role": "merged", "from": "0.0", "back_edge": "acc <- acc_next"}]
    assert [(o["name"], o["kind"], o.get("order")) for o in loop["outputs"]] == [
        ("suffix_sums", "concat", "reversed"), ("visit_order", "concat", "iteration order")]
    assert "    x_t = x[L-1 - i : L - i];  // sliced on axis 0, backward: start=-1 end=0 " \
           "stride=-1 part_size=1, L = length of the axis" in loop["pseudocode"]
    assert "    suffix_sums.prepend(acc_next);" in loop["pseudocode"]


def test_loop_option_and_inputs(capsys):
    xml = DEMOS / "nested_loop" / "model.xml"
    assert main(["explain", str(xml), str(xml.with_name("inputs.npz")), "--loop", "cols_loop",
                 "--format", "json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert [(l["path"], l["mode"]) for l in facts["loops"]] == [("rows_loop/cols_loop", "for")]
    assert facts["loops"][0]["trip_count"]["value"] == 4
    assert main(["explain", str(xml), "--loop", "nope"]) != 0
    assert "no loop named 'nope'" in capsys.readouterr().err


def test_infinite_loop_with_inputs_is_capped(capsys):
    xml = DEMOS / "infinite_loop" / "model.xml"
    assert main(["explain", str(xml), str(xml.with_name("inputs.npz"))]) == 0
    out = capsys.readouterr().out
    assert "mode: infinite" in out and "iteration cap" in out


@pytest.mark.parametrize("trip, rows, flagged", [(4, 4, False), (5, 4, True), (-1, 4, True)])
def test_pitfall_slices_may_run_out(trip, rows, flagged):
    b = GraphBuilder("sl")
    seq = b.parameter("seq", "f32", [rows, 2])
    loop = b.loop("loop", trip=trip, cond=True)
    x_t = loop.sliced_input(seq, "x_t", axis=0)
    it = loop.current_iteration("i", "i64", [1])
    if trip < 0:
        loop.condition(loop.body.op("Less", [it, np.array([2], np.int64)], name="more"))
    b.result(loop.output_concat(loop.body.op("Relu", [x_t], name="r"), axis=0, name="Y"))
    assert ("slices_may_run_out" in _kinds(b.build())) == flagged


def test_runs_with_inputs_are_summarised():
    facts = _facts(DEMOS / "while_loop" / "model.xml")
    assert facts["loops"][0]["runs"] == [
        {"iterations": 7, "stopped": "condition",
         "stopped_because": "the body condition became false"}]
    facts = _facts(ROOT / "tests" / "data" / "failing_loop" / "model.xml") \
        if (ROOT / "tests" / "data" / "failing_loop" / "inputs.npz").exists() else None
    if facts is not None:
        assert "run_error" in facts and "note: the run on the given inputs failed" in \
            format_text(facts)


def test_after_the_loop_agrees_with_the_demo_lessons_and_with_zero_iterations(capsys):
    """A last-value output carried by a back edge is read from the Parameter it is carried into:
    what the zero_trip lesson writes (acc_final = acc;), true for zero iterations too."""
    assert main(["explain", str(DEMOS / "zero_trip" / "model.xml")]) in (0, None)
    text = capsys.readouterr().out
    lesson = (DEMOS / "zero_trip" / "README.md").read_text()
    assert "acc_final = acc;" in text and "acc_final = acc;" in lesson
    assert "doubled_final = doubled;" in text and "undefined if none ran" in text
    engine = Engine(read_model(DEMOS / "zero_trip" / "model.xml"))
    out = engine.run_to_end(load_npz(DEMOS / "zero_trip" / "inputs.npz")).outputs
    acc0 = load_npz(DEMOS / "zero_trip" / "inputs.npz")["acc0"]
    np.testing.assert_array_equal(out["acc_final"], acc0)      # = acc, its initial value


def test_onnx_invariant_read_by_its_own_name_is_not_assigned_to_itself(tmp_path, capsys):
    import onnx

    import _onnx_models as om

    m, _, _ = om.nested_with_if_and_outer_values()
    path = tmp_path / "nested.onnx"
    onnx.save(m, str(path))
    assert main(["explain", str(path)]) in (0, None)
    text = capsys.readouterr().out
    for line in text.splitlines():
        left, _, right = line.strip().partition(" = ")
        assert not (right and right.split(";")[0] == left), line


# ---------------------------------------------------------------------------------------------
# TorchScript's while loops (issue 30): INT64_MAX trip count, a counter named by a number

def test_a_torchscript_while_loop_reads_as_a_while_with_a_counter_called_i(capsys):
    xml = Path(__file__).resolve().parents[1] / "converted" / "tacotron_decoder" / "model.xml"
    if not xml.exists():
        pytest.skip("no converted model")
    assert main(["explain", str(xml)]) == 0
    out = capsys.readouterr().out
    assert "mode: while" in out
    assert "trip count: 9223372036854775807 (INT64_MAX: no limit, a while loop)" in out
    assert "for (i = 0; cond; i++) {" in out
    assert "// i: the iteration counter (the model names it '57')" in out
    assert "57 <" not in out and "9223372036854775807 &&" not in out


def test_trip_text_says_no_limit_for_the_largest_integers():
    from loopdbg.engine.trip import trip_text

    assert trip_text(2**63 - 1) == trip_text(2**31 - 1) == "no limit (while)"
    assert trip_text(None) == "no limit" and trip_text(7) == "7" and trip_text(2**31) == str(2**31)


# ---------------------------------------------------------------------------------------------
# Models whose control flow is If only, or none (issue 30)

IF_ONLY = Path(__file__).resolve().parents[1] / "data" / "if_only" / "model.onnx"


def test_an_if_only_model_shows_each_if_and_the_branch_its_run_took(capsys):
    pytest.importorskip("onnx")
    assert main(["explain", str(IF_ONLY)]) == 0           # inputs.npz beside: x = [1, 2]
    out = capsys.readouterr().out
    assert out.startswith(f"{IF_ONLY}: no Loop, Scan or TensorIterator; its control flow is 1 If")
    assert "If sign_gate: condition pos = true, ran the then branch" in out


def test_a_model_without_control_flow_says_so_and_shows_its_outputs(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "plain", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "plain.onnx")
    np.savez(tmp_path / "inputs.npz", x=np.array([1.0, -2.0], np.float32))
    assert main(["explain", str(tmp_path / "plain.onnx")]) == 0
    out = capsys.readouterr().out
    assert "no control flow (no Loop, Scan, TensorIterator or If)" in out
    assert "  y  float32, shape [2]" in out


def test_ifs_inside_a_loop_count_their_branches():
    pytest.importorskip("onnx")
    from _onnx_models import nested_with_if_and_outer_values
    from loopdbg.ir.onnx_reader import from_proto

    built = nested_with_if_and_outer_values()
    model = built[0] if isinstance(built, tuple) else built
    inputs = {"n": np.array(3, np.int64), "acc0": np.array(0, np.float32),
              "step": np.array(1.0, np.float32)}
    facts = explain(Engine(from_proto(model)), inputs)
    (fact,) = facts["ifs"]
    assert fact["loop"] and fact["then_runs"] + fact["else_runs"] == 3
    assert "ran 3 times" in format_text(facts)


def test_explain_code_prints_the_generated_python(capsys):
    """``explain --code``: the top graph's and each loop's generated code, one line per layer
    naming it, each under the file name tracebacks show."""
    assert main(["explain", str(ROOT / "tests" / "data" / "nested_loop" / "model.xml"),
                 "--code"]) == 0
    out = capsys.readouterr().out
    assert "# the model's graph: <loopdbg plan " in out
    assert "# loop 'outer': <loopdbg loop code " in out
    assert "# loop 'outer/inner': <loopdbg loop code " in out
    assert "def run_events(ctx, finish, fail, p0):" in out and "def loop_run(ctx, args):" in out
    assert "(yield from k0(ctx, c0, c1, p0))  # Loop 'outer'" in out
    compile(out.split("# loop 'outer/inner': ")[1].split("\n", 1)[1].split("\n# ")[0], "x", "exec")


def test_explain_code_says_when_a_body_is_interpreted(capsys, monkeypatch):
    """A body too big to compile runs interpreted inside its loop's compiled code."""
    from loopdbg.engine import loopcode, plan

    monkeypatch.setattr(plan, "COMPILE_LIMIT", 2)
    monkeypatch.setattr(loopcode, "COMPILE_LIMIT", 2)
    assert main(["explain", str(CORPUS / "loop_while_iter" / "model.xml"), "--code"]) == 0
    out = capsys.readouterr().out
    assert "# loop 'loop': <loopdbg loop code " in out
    assert "_L_r0, _L_r1, _L_r2, = _L_body_run(ctx, p0, p1, p2, p3)  # the body: 5 steps, " \
        "interpreted" in out, out
