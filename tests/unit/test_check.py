"""loopdbg check: outputs and every body iteration compared with OpenVINO (issue 8).

Tests marked ``oracle`` run OpenVINO (the dev extra installs it); the others check what needs no
OpenVINO: the comparison rule, the standalone bodies, the one-line message without OpenVINO, and
that the package imports neither OpenVINO nor a UI library.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loopdbg.check.compare import compare
from loopdbg.check.extract import NODE, RESULT, standalone_body
from loopdbg.cli import main
from loopdbg.engine import Engine, IterationDone
from loopdbg.engine.inputs import load_npz
from loopdbg.builder import GraphBuilder
from loopdbg.ir.load import read_model
from loopdbg.ir.xml_reader import read_ir
from loopdbg.ir.xml_writer import write_ir

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "model.xml").exists())


@pytest.fixture(autouse=True)
def _openvino_for_oracle_tests(request, monkeypatch):
    """Tests marked ``oracle`` need OpenVINO: skipped when it is missing or cannot answer.

    Every check they run (through ``check`` or the CLI) is skipped with the reason when OpenVINO
    crashed, hung or ran out of memory on this host (its CPU plugin dies with SIGFPE on some
    CPUs); a disagreement with a working OpenVINO still fails.
    """
    if request.node.get_closest_marker("oracle") is None:
        return
    from loopdbg.check import checker
    from loopdbg.oracle import testing as ovt

    ovt.openvino()
    run = checker._Check.run

    def run_or_skip(self, *args, **kwargs):
        report = run(self, *args, **kwargs)
        ovt.skip_unless_compared(report)
        return report
    monkeypatch.setattr(checker._Check, "run", run_or_skip)


# ----------------------------------------------------------------------------------------------
# Models built with the IR builder


def ti_model(start: int = 0):
    """A TensorIterator over x[5, 2] (axis 0, from ``start``): h <- h + x_t; outputs h and all h."""
    b = GraphBuilder("ti_sum")
    x = b.parameter("x", "f32", [5, 2])
    h0 = b.parameter("h0", "f32", [1, 2])
    ti = b.tensor_iterator("ti")
    x_t = ti.sliced_input(x, "x_t", axis=0, start=start)
    h = ti.merged_input(h0, "h")
    h_scaled = ti.body.op("Multiply", [h, np.float32(1.0)], name="h_scaled")
    h_new = ti.body.op("Add", [h_scaled, x_t], name="h_new")
    ti.back_edge(h_new, h)
    b.result(ti.output_last(h_new, name="h_last"))
    b.result(ti.output_concat(h_new, axis=0, name="h_seq"))
    return b.build()


TI_INPUTS = {"x": np.arange(10, dtype=np.float32).reshape(5, 2),
             "h0": np.zeros((1, 2), np.float32)}


def nested_model(start: int = 0):
    """A Loop (3 iterations over seq[3, 4, 2]) whose body holds a TensorIterator over axis 1."""
    b = GraphBuilder("nested")
    seq = b.parameter("seq", "f32", [3, 4, 2])
    acc0 = b.parameter("acc0", "f32", [1, 1, 2])
    outer = b.loop("outer", trip=3)
    s_t = outer.sliced_input(seq, "s_t", axis=0)
    acc = outer.merged_input(acc0, "acc")
    ti = outer.body.tensor_iterator("inner")
    x_t = ti.sliced_input(s_t, "x_t", axis=1, start=start)
    h = ti.merged_input(acc, "h")
    h_half = ti.body.op("Multiply", [h, np.float32(0.5)], name="h_half")
    h_new = ti.body.op("Add", [h_half, x_t], name="h_step")
    ti.back_edge(h_new, h)
    last = ti.output_last(h_new, name="inner_last")
    seq_out = ti.output_concat(h_new, axis=1, name="inner_seq")
    acc_new = outer.body.op("Add", [last, acc], name="acc_new")
    outer.back_edge(acc_new, acc)
    b.result(outer.output_last(acc_new, name="acc_final"))
    b.result(outer.output_concat(seq_out, axis=0, name="all_seq"))
    return b.build()


NESTED_INPUTS = {"seq": np.random.default_rng(0).standard_normal((3, 4, 2)).astype(np.float32),
                 "acc0": np.zeros((1, 1, 2), np.float32)}


def growing_model():
    """A Loop whose state grows by one element per iteration (its body Parameter changes shape)."""
    b = GraphBuilder("growing")
    s0 = b.parameter("s0", "f32", [1])
    loop = b.loop("grow", trip=4)
    s = loop.merged_input(s0, "s")
    doubled = loop.body.op("Multiply", [s, np.float32(2.0)], name="doubled")
    grown = loop.body.op("Concat", [doubled, np.array([1.0], np.float32)], name="grown", axis=0)
    loop.back_edge(grown, s)
    b.result(loop.output_last(grown, name="s_final"))
    return b.build()


def saved(model, tmp_path: Path, name: str = "model") -> Path:
    """Write ``model`` as IR and read it back (so OpenVINO and loopdbg see the same file)."""
    xml, _ = write_ir(model, tmp_path / f"{name}.xml")
    return xml


def run_check(model, inputs, tmp_path, **kw):
    from loopdbg.check import check

    return check(read_ir(saved(model, tmp_path)), inputs, **kw)


@pytest.fixture
def broken_kernel(monkeypatch):
    """Break the kernel of one layer (by name) from its n-th call on: it adds 1 to its result."""
    from loopdbg.ops import registry

    def breaker(type_: str, layer_name: str, from_call: int):
        spec = registry.lookup(type_, "opset1")

        def factory(layer):
            kernel = spec.factory(layer)
            if layer.name != layer_name:
                return kernel
            calls = itertools.count()

            def broken(*args):
                out = kernel(*args)
                return out + np.ones((), out.dtype) if next(calls) >= from_call else out
            return broken

        monkeypatch.setitem(registry._REGISTRY[type_], spec.version, spec.replace(factory=factory))

    return breaker


# ----------------------------------------------------------------------------------------------
# Without OpenVINO


def test_rule14_floats_tolerant_integers_and_booleans_exact_shapes_identical():
    a = np.array([1.0, 2.0], np.float32)
    assert compare("a", a, a + 5e-6).ok
    c = compare("a", a, np.array([1.0, 2.5], np.float32))
    assert not c.ok and (c.max_abs, c.max_rel, c.worst) == (0.5, 0.2, (1,))
    assert compare("n", np.array([np.nan], np.float32), np.array([np.nan], np.float32)).ok
    assert not compare("n", np.array([np.nan], np.float32), np.array([1.0], np.float32)).ok
    i = np.array([3, 4], np.int64)
    assert compare("i", i, i.copy()).ok
    assert not compare("i", i, i + 1, rtol=1.0, atol=10.0).ok       # never tolerant for ints
    assert not compare("b", np.array([True]), np.array([False])).ok
    assert not compare("s", np.zeros((0, 3)), np.zeros((0, 2))).ok  # zero-length shapes too
    assert compare("s", np.zeros((0, 3)), np.zeros((0, 3))).ok
    kinds = compare("k", np.array([1.0], np.float32), np.array([1], np.int32))
    assert not kinds.ok and "dtype" in kinds.why
    width = compare("w", np.array([7], np.int64), np.array([7], np.int32))
    assert width.ok and "int32" in width.note                       # an IR v10 output


def test_standalone_body_is_a_model_with_dynamic_parameters_and_every_node_as_output(tmp_path):
    model = ti_model()
    engine = Engine(model)
    event = next(e for e in engine.run(TI_INPUTS) if isinstance(e, IterationDone))
    body, targets = standalone_body(event.spec.body, event.body_in, all_nodes=True)
    xml, _ = write_ir(body, tmp_path / "body.xml")
    back = read_ir(xml)
    params = [back.graph.layers[i] for i in back.graph.parameters]
    assert [p.name for p in params] == list(event.spec.param_names)
    assert all(p.data["shape"] == "?,?" and p.data["element_type"] == "f32" for p in params)
    assert [t.kind for t in targets] == [RESULT, NODE, NODE]
    assert [t.name for t in targets if t.kind == NODE] == ["h_scaled", "h_new"]
    assert len(back.graph.results) == len(targets)


def _spec(model, path):
    return Engine(model).loops[path]


def test_bookkeeping_names_zero_iterations_iteration_count_and_reversed_concat():
    from loopdbg.check import bookkeeping as bk
    from loopdbg.check.compare import Comparison

    spec = _spec(nested_model(), "outer")                # outputs: acc_final (last), all_seq
    zero = bk.loop_findings(spec, [bk.LoopRun("outer", 0, "zero_trip_count")], [], 0)
    assert [(f.aspect, f.rule) for f in zero] == [("zero-iteration outputs", 6)]
    assert "initial value" in zero[0].text              # acc_final is fed by a back edge

    shorter = Comparison("all_seq", (3, 4, 2), "float32", (2, 4, 2), "float32", ok=False,
                         why="shape")
    count = bk.loop_findings(spec, [bk.LoopRun("outer", 3, "trip_count")], [], 1, shorter)
    assert [(f.aspect, f.rule) for f in count] == [("iteration count", 1)]
    assert "3 along axis 0 in loopdbg, 2 in OpenVINO" in count[0].text

    ti = _spec(ti_model(start=1), "ti")
    notice = ("ti", "loop 'ti': sliced input 'x_t' uses start=1 ...", 10)
    assert [(f.aspect, f.rule) for f in bk.loop_findings(ti, [], [notice])] == [("slicing", 10)]
    assert bk.loop_findings(ti, [], []) == []           # canonical slicing: nothing to say


def test_upstream_loops_start_with_the_loop_feeding_the_output():
    from loopdbg.check import bookkeeping as bk

    model = nested_model()
    engine = Engine(model)
    paths = {id(s.layer): p for p, s in engine.loops.items()}
    g = model.graph
    assert [bk.upstream_loops(g, rid, paths) for rid in g.results] == \
        [[("outer", 0)], [("outer", 1)]]


def test_check_without_openvino_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "openvino", None)      # import openvino -> ImportError
    code = main(["check", str(CORPUS / "ti_gru" / "model.xml"),
                 str(CORPUS / "ti_gru" / "inputs.npz")])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "pip install 'loopdbg[openvino]'" in err


def test_the_check_package_imports_neither_runtime_nor_a_ui_library():
    probe = ("import sys, loopdbg.check, loopdbg.cli.cmd_check, loopdbg.check.against, "
             "loopdbg.check.verdicts, loopdbg.check.json_report, loopdbg.check.report_against; "
             "print([m for m in ('openvino', 'onnxruntime', 'textual', 'rich') "
             "if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ----------------------------------------------------------------------------------------------
# With OpenVINO: the corpus agrees


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES)
def test_every_corpus_case_agrees_on_outputs_and_every_iteration(case):
    from loopdbg.check import check

    model = read_model(CORPUS / case / "model.xml")
    inputs = load_npz(CORPUS / case / "inputs.npz")
    report = check(model, inputs, per_iteration=True, all_nodes=True)
    assert report.exit_code == 0, [c.verdict for c in report.outputs]
    assert report.outputs and all(c.ok for c in report.outputs)
    assert report.divergence is None and not report.findings
    done = [e for e in Engine(model).run(inputs) if isinstance(e, IterationDone)]
    assert sum(lc.iterations for lc in report.loops.values()) == len(done)
    for lc in report.loops.values():
        assert lc.ok and lc.compiled == 1          # one standalone body serves every iteration


@pytest.mark.oracle
def test_nested_loops_agree_and_inner_bodies_are_checked_per_execution(tmp_path):
    report = run_check(nested_model(), NESTED_INPUTS, tmp_path, per_iteration=True,
                       all_nodes=True)
    assert report.exit_code == 0
    inner, outer = report.loops["outer/inner"], report.loops["outer"]
    assert (inner.executions, inner.iterations, inner.compiled) == (3, 12, 1)
    assert (outer.executions, outer.iterations, outer.compiled) == (1, 3, 1)


@pytest.mark.oracle
def test_a_parameter_that_changes_shape_is_compiled_once_with_dynamic_dims(tmp_path):
    report = run_check(growing_model(), {"s0": np.array([1.0], np.float32)}, tmp_path,
                       per_iteration=True, all_nodes=True)
    assert report.exit_code == 0
    lc = report.loops["grow"]
    assert (lc.iterations, lc.compiled) == (4, 1)
    assert report.loopdbg_outputs["s_final"].shape == (5,)


# ----------------------------------------------------------------------------------------------
# With OpenVINO: bookkeeping


@pytest.mark.oracle
def test_ti_sliced_from_1_is_a_slicing_divergence_and_loopdbg_follows_the_spec(tmp_path):
    report = run_check(ti_model(start=1), TI_INPUTS, tmp_path, per_iteration=True)
    assert report.exit_code == 1
    assert not report.outputs_agree
    assert report.bodies_agree and report.divergence is None and report.confirmed
    assert report.loops["ti"].iterations == 4
    [finding] = report.findings
    assert (finding.path, finding.aspect, finding.rule) == ("ti", "slicing", 10)
    assert "x_t" in finding.text and "start=1" in finding.text
    assert set(finding.outputs) == {"h_last", "h_seq"}
    # loopdbg follows the specification: chunks 1..4 of x; OpenVINO's CPU plugin takes 0..3.
    x = TI_INPUTS["x"]
    np.testing.assert_array_equal(report.loopdbg_outputs["h_seq"], np.cumsum(x[1:], axis=0))
    np.testing.assert_array_equal(report.runtime_outputs["h_seq"], np.cumsum(x[:4], axis=0))

    from loopdbg.check import format_report
    text = format_report(report)
    assert "every body iteration agrees" in text and "rule 10" in text


@pytest.mark.oracle
def test_a_loop_sliced_from_1_is_a_rule_8_slicing_divergence(tmp_path):
    b = GraphBuilder("loop_start1")
    x = b.parameter("x", "f32", [4, 2])
    loop = b.loop("loop", trip=3)
    x_t = loop.sliced_input(x, "x_t", axis=0, start=1)
    acc = loop.merged_input(b.const("zero", np.zeros((1, 2), np.float32)), "acc")
    acc_new = loop.body.op("Add", [acc, x_t], name="acc_new")
    loop.back_edge(acc_new, acc)
    b.result(loop.output_last(acc_new, name="acc_last"))
    x_value = np.arange(8, dtype=np.float32).reshape(4, 2)
    report = run_check(b.build(), {"x": x_value}, tmp_path, per_iteration=True)
    assert report.exit_code == 1 and report.confirmed
    assert [(f.path, f.aspect, f.rule) for f in report.findings] == [("loop", "slicing", 8)]
    np.testing.assert_array_equal(report.loopdbg_outputs["acc_last"],
                                  x_value[1:].sum(0, keepdims=True))


@pytest.mark.oracle
def test_without_per_iteration_the_slicing_rule_is_only_a_suspect(tmp_path):
    report = run_check(ti_model(start=1), TI_INPUTS, tmp_path)
    assert report.exit_code == 1 and not report.confirmed
    assert [f.rule for f in report.findings] == [10]
    from loopdbg.check.report import verdict
    assert "--per-iteration" in verdict(report)


@pytest.mark.oracle
def test_nested_ti_sliced_from_1_is_named_at_the_outer_iteration_and_the_inner_loop(tmp_path):
    report = run_check(nested_model(start=1), NESTED_INPUTS, tmp_path, per_iteration=True,
                       all_nodes=True)
    assert report.exit_code == 1
    d = report.divergence
    assert (d.path, d.iteration, d.target.name, d.inner) == ("outer", 0, "inner", "outer/inner")
    assert report.loops["outer/inner"].ok and report.loops["outer/inner"].executions == 3
    assert [(f.path, f.aspect, f.rule) for f in report.findings] == \
        [("outer/inner", "slicing", 10)]


# ----------------------------------------------------------------------------------------------
# With OpenVINO: a broken body


@pytest.mark.oracle
def test_a_broken_kernel_is_caught_at_its_iteration_and_node(tmp_path, broken_kernel):
    path = saved(ti_model(), tmp_path)
    broken_kernel("Add", "h_new", from_call=2)
    from loopdbg.check import check, format_report

    report = check(read_ir(path), TI_INPUTS, per_iteration=True, all_nodes=True)
    assert report.exit_code == 1
    d = report.divergence
    assert (d.path, d.outer, d.iteration) == ("ti", (), 2)
    assert d.target.kind == NODE and d.target.name == "h_new" and d.target.layer.type == "Add"
    assert d.comparison.max_abs == pytest.approx(1.0)
    assert d.inner is None and not report.findings
    assert report.loops["ti"].skipped == 2             # iterations 3 and 4 were not compared
    text = format_report(report)
    assert "first divergence: loop 'ti', iteration 2: node 'h_new' (Add)" in text
    assert "loopdbg" in text and "OpenVINO" in text and "<- largest" in text

    # Without --all-nodes, the Result the node feeds is named, with the node.
    report = check(read_ir(path), TI_INPUTS, per_iteration=True)
    d = report.divergence
    assert d.iteration == 2 and d.target.kind == RESULT and d.target.layer.name == "h_new"


@pytest.mark.oracle
def test_a_broken_inner_kernel_is_caught_in_the_inner_loop_before_the_outer(tmp_path,
                                                                           broken_kernel):
    path = saved(nested_model(), tmp_path)
    broken_kernel("Add", "h_step", from_call=6)        # outer iteration 1, inner iteration 2
    from loopdbg.check import check

    report = check(read_ir(path), NESTED_INPUTS, per_iteration=True, all_nodes=True)
    assert report.exit_code == 1
    d = report.divergence
    assert (d.path, d.outer, d.iteration, d.target.name) == ("outer/inner", (1,), 2, "h_step")


# ----------------------------------------------------------------------------------------------
# With OpenVINO: traces and the command line


@pytest.mark.oracle
def test_a_trace_feeds_the_bodies_like_a_live_run(tmp_path):
    from loopdbg.check import check
    from loopdbg.trace import record_model

    model = read_ir(saved(nested_model(start=1), tmp_path))
    trace = tmp_path / "run.ltrace"
    record_model(model, NESTED_INPUTS, trace)
    live = check(model, NESTED_INPUTS, per_iteration=True, all_nodes=True)
    traced = check(model, None, per_iteration=True, all_nodes=True, trace=trace)
    assert traced.exit_code == live.exit_code == 1
    for a, b in ((live, traced),):
        assert (a.divergence.path, a.divergence.iteration, a.divergence.target.name) == \
            (b.divergence.path, b.divergence.iteration, b.divergence.target.name)
        assert [f.rule for f in a.findings] == [f.rule for f in b.findings] == [10]
        assert {p: lc.iterations for p, lc in a.loops.items()} == \
            {p: lc.iterations for p, lc in b.loops.items()}


@pytest.mark.oracle
def test_cli_exit_status_and_format(tmp_path, capsys):
    case = CORPUS / "ti_gru"
    assert main(["check", str(case / "model.xml"), str(case / "inputs.npz"),
                 "--per-iteration", "--all-nodes"]) == 0
    out = capsys.readouterr().out
    assert "outputs:" in out and "per iteration" in out
    header = next(line for line in out.splitlines() if line.strip().startswith("name"))
    assert header.split() == ["name", "shape", "dtype", "max", "abs", "max", "rel", "verdict"]
    assert out.rstrip().endswith("loopdbg and OpenVINO agree (outputs and every body iteration).")

    xml = saved(ti_model(start=1), tmp_path)
    np.savez(tmp_path / "inputs.npz", **TI_INPUTS)
    assert main(["check", str(xml), str(tmp_path / "inputs.npz"), "--per-iteration"]) == 1
    out = capsys.readouterr().out
    assert "slicing (rule 10 of docs/semantics.md)" in out

    # A model OpenVINO cannot compile (a concatenated piece of length 2): nothing to compare
    # with, so exit 2, with OpenVINO's reason and loopdbg's own outputs.
    data = ROOT / "tests" / "data" / "nested_loop"
    assert main(["check", str(data / "model.xml"), str(data / "inputs.npz")]) == 2
    out = capsys.readouterr().out
    assert "outputs: not compared: OpenVINO cannot compile the model: " in out
    assert "loopdbg's own outputs:" in out
    assert out.rstrip().endswith("loopdbg's own run finished (its outputs are above).")

    # A trace of another model.
    trace = tmp_path / "ti.ltrace"
    assert main(["run", str(xml), str(tmp_path / "inputs.npz"), "--trace", str(trace), "-q"]) == 0
    assert main(["check", str(case / "model.xml"), "--trace", str(trace)]) == 2
    assert "another model" in capsys.readouterr().err

    # Tolerances: a huge atol makes the slicing difference disappear.
    assert main(["check", str(xml), str(tmp_path / "inputs.npz"), "--atol", "100"]) == 0
