"""check, round 2: ONNX models against onnxruntime, converted models against their sources.

The models of tests/data/converted were built with onnx.helper and converted once by OpenVINO's
ONNX frontend (make_converted.py there); ``broken.xml`` files are converted IRs with one body
constant edited. Tests marked ``oracle`` run a runtime in its child process (skipped with the
reason when it is missing, crashes or hangs); the others run loopdbg alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loopdbg.check.against import COUNT, VALUE, check_against
from loopdbg.check.report_against import format_against
from loopdbg.cli import main
from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model
from loopdbg.oracle import testing as ovt

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "converted"
MODELS = ("nested_loops", "while_loop", "attention_decoder", "fused_attention")


def files(name: str, xml: str = "model.xml"):
    d = DATA / name
    return read_model(d / xml), read_model(d / "model.onnx"), load_npz(d / "inputs.npz")


def loopdbg(*args, env_extra=None, timeout=300):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "loopdbg", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


# ----------------------------------------------------------------------------------------------
# loopdbg alone: the converted model against its source


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("direction", ["xml-vs-onnx", "onnx-vs-xml"])
def test_a_faithful_conversion_agrees_with_its_source_in_every_paired_tensor(name, direction):
    xml, onnx_model, inputs = files(name)
    model, reference = (xml, onnx_model) if direction == "xml-vs-onnx" else (onnx_model, xml)
    r = check_against(model, reference, inputs)
    assert r.exit_code == 0, format_against(r)
    assert r.departure is None and all(c.ok for c in r.outputs) and len(r.outputs) >= 2
    assert not r.lone_model and not r.lone_reference
    assert all(pc.pair.how == "output names" for pc in r.loops)
    done = [e for e in Engine(model).run(inputs) if type(e).__name__ == "IterationDone"]
    assert sum(pc.iterations for pc in r.loops) == len(done)
    assert all(len(pc.pair.values) >= 4 for pc in r.loops)
    assert format_against(r).rstrip().endswith("at every iteration).")


def test_nested_loops_pair_level_by_level_by_the_names_the_converter_kept():
    xml, onnx_model, inputs = files("nested_loops")
    r = check_against(xml, onnx_model, inputs)
    assert [(pc.pair.path, pc.pair.reference) for pc in r.loops] == \
        [("all_inner", "outer"), ("all_inner/h_all", "outer/inner")]
    inner = r.loops[1]
    assert (inner.executions, inner.iterations) == (3, 12)
    tensors = [t for _, _, t in inner.pair.values]
    assert {"h_in", "h_half", "h_mix", "h_out"} <= set(tensors)
    assert tensors.index("h_half") < tensors.index("h_mix") < tensors.index("h_out")


def test_an_edited_limit_is_pinned_to_the_iteration_where_the_condition_flips():
    xml, onnx_model, inputs = files("while_loop", "broken.xml")
    r = check_against(xml, onnx_model, inputs)
    assert r.exit_code == 1
    d = r.departure
    assert (d.path, d.reference, d.outer, d.iteration, d.kind) == ("v_all", "doubling", (), 4,
                                                                    VALUE)
    assert (d.tensor, d.value, d.layer_type) == ("keep_going", "keep_going", "Less")
    assert d.ours.tolist() is False and d.theirs.tolist() is True
    assert r.loops[0].iterations == 5
    [v_final, v_all] = r.outputs
    assert not v_final.ok and "(5, 2) vs the reference's (6, 2)" in v_all.why
    text = format_against(r)
    assert "first departure: loop 'v_all', iteration 4 (reference loop 'doubling'): tensor " \
           "'keep_going'" in text
    assert text.rstrip().endswith("verdict: broken.xml departs from model.onnx in loop 'v_all', "
                                  "iteration 4: tensor 'keep_going'.")

    # The reverse: the source against the broken conversion runs one more iteration.
    back = check_against(onnx_model, xml, inputs)
    assert (back.departure.path, back.departure.iteration, back.departure.tensor) == \
        ("doubling", 4, "keep_going")


def test_an_edited_weight_is_pinned_to_its_tensor_with_both_values():
    xml, onnx_model, inputs = files("attention_decoder", "broken.xml")
    r = check_against(xml, onnx_model, inputs)
    d = r.departure
    assert (d.path, d.iteration, d.tensor, d.layer_type) == ("all_attn", 0, "proj", "MatMul")
    assert d.others[:3] == ["pre", "h_out", "logits"]
    assert d.comparison.max_abs > 0.01
    theirs = Engine(onnx_model).run(inputs, record_nodes=True)
    first = next(e for e in theirs if type(e).__name__ == "IterationDone")
    np.testing.assert_array_equal(d.theirs, first.nodes["proj"])
    assert r.loops[0].skipped == 5               # iterations 1..5: not compared
    text = format_against(r)
    header = next(ln for ln in text.splitlines() if ln.strip().startswith("index"))
    assert header.split() == ["index", "broken.xml", "model.onnx", "|difference|"]
    assert "<- largest" in text


def test_an_attention_fused_into_sdpa_pairs_with_the_matmul_softmax_chain_of_its_source():
    fused, onnx_model, inputs = files("fused_attention", "fused.xml")
    r = check_against(fused, onnx_model, inputs)
    assert r.exit_code == 0, format_against(r)
    [pc] = r.loops
    assert ("context", "context", "context") in pc.pair.values
    spec = Engine(fused).loops[pc.pair.path]
    assert [s.layer.type for s in spec.body.steps if s.layer.name == "context"] == \
        ["ScaledDotProductAttention"]
    assert pc.iterations == 6 and pc.max_abs < 1e-5


def test_an_iteration_cap_compares_the_iterations_but_not_the_outputs():
    xml, onnx_model, inputs = files("while_loop")
    r = check_against(xml, onnx_model, inputs, max_iterations=3)
    assert (r.exit_code, r.capped, r.outputs, r.loops[0].iterations) == (2, True, [], 3)
    assert "outputs were not compared" in format_against(r).splitlines()[-1]


def test_a_loop_that_runs_longer_than_its_partner_departs_at_the_first_missing_iteration():
    from loopdbg.check.against import _Lockstep, AgainstReport, PairCheck
    from loopdbg.check.pairing import LoopPair

    report = AgainstReport("a", "b", "inputs", 1e-5, 1e-5)
    report.loops = [PairCheck(LoopPair("l", "m", "order"))]
    step = _Lockstep(report, iter(()), 1e-5, 1e-5)
    step.counts_b[("m", ())] = 7
    step._counts({("l", ()): 5})
    d = report.departure
    assert (d.kind, d.iteration, d.text) == (COUNT, 5, "the model's loop ran 5 iterations, the "
                                                       "reference's 7")


# ----------------------------------------------------------------------------------------------
# JSON: the documented schema


def _documented() -> dict[str, set[str]]:
    """Field names per object, from docs/check-json.md's tables."""
    text = (ROOT / "docs" / "check-json.md").read_text()
    out: dict[str, set[str]] = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        out[title.strip()] = set(re.findall(r"^\| `([a-z_]+)` \|", body, flags=re.M))
    return out


def _assert_schema(obj: dict, kind: str, doc: dict[str, set[str]]) -> None:
    assert set(obj) == doc[kind], (kind, set(obj) ^ doc[kind])
    assert obj["schema"] == "loopdbg.check/1"
    extra = {"reference_name"} if kind == "against" else set()
    for c in obj["outputs"]:
        assert set(c) == doc["comparison"] | extra
    if kind == "check":
        assert set(obj["runtime"]) == doc["runtime"]
        for lc in obj["loops"]:
            assert set(lc) == doc["check loop"]
        for d in [obj["divergence"]] + [lc["divergence"] for lc in obj["loops"]]:
            if d is not None:
                assert set(d) == doc["divergence"]
                assert d["target"] is None or set(d["target"]) == doc["target"]
        return
    assert set(obj["tolerance"]) == doc["tolerance"]
    assert set(obj["unpaired"]) == doc["unpaired"]
    for lc in obj["loops"]:
        assert set(lc) == doc["against loop"]
        assert all(set(t) == doc["tensor pair"] for t in lc["tensors"])
    if obj["departure"] is not None:
        assert set(obj["departure"]) == doc["departure"]
        assert set(obj["departure"]["values"]) == doc["values"]
    for a in obj["agreement"]:
        assert set(a) == doc["agreement"]
    for j in obj["judgements"]:
        assert set(j) == doc["judgement"]
    for sub in (obj["runtimes"] or {}).values():
        _assert_schema(sub, "check", doc)


def test_against_json_follows_the_documented_schema_and_names_the_departure(capsys):
    d = DATA / "while_loop"
    code = main(["check", str(d / "broken.xml"), str(d / "inputs.npz"), "--against",
                 str(d / "model.onnx"), "--format", "json"])
    out = capsys.readouterr().out
    obj = json.loads(out)
    assert code == 1 == obj["exit_code"]
    _assert_schema(obj, "against", _documented())
    dep = obj["departure"]
    assert (dep["loop"], dep["iteration"], dep["tensor"], dep["kind"]) == \
        ("v_all", 4, "keep_going", "value")
    assert dep["values"] == {"indices": [[]], "ours": [False], "theirs": [True]}
    assert obj["verdict"].endswith("in loop 'v_all', iteration 4: tensor 'keep_going'.")
    assert obj["runtimes"] is None and obj["judgements"] == []


def test_json_writes_non_finite_numbers_as_strings():
    from loopdbg.check.json_report import _num, window

    assert [_num(float("nan")), _num(float("inf")), _num(-np.inf), _num(np.float32(0.5))] == \
        ["nan", "inf", "-inf", 0.5]
    w = window(np.array([1.0, np.nan], np.float32), np.array([1.0, 2.0], np.float32))
    assert w == {"indices": [[0], [1]], "ours": [1.0, "nan"], "theirs": [1.0, 2.0]}
    json.dumps(w, allow_nan=False)


# ----------------------------------------------------------------------------------------------
# Names can hold anything


def _loop_model(step: float, out_name: str):
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "one"], [out_name]),
         helper.make_node("Less", [out_name, "limit"], ["go_on"])],
        "body", [vi("i", TP.INT64, []), vi("c", TP.BOOL, []), vi("s_in", TP.FLOAT, [])],
        [vi("go_on", TP.BOOL, []), vi(out_name, TP.FLOAT, [])],
        initializer=[numpy_helper.from_array(np.float32(step), "one"),
                     numpy_helper.from_array(np.float32(5), "limit")])
    g = helper.make_graph([helper.make_node("Loop", ["", "", "s0"], ["s_final"], body=body,
                                            name=out_name)],
                          "g", [vi("s0", TP.FLOAT, [])], [vi("s_final", TP.FLOAT, [])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_names_from_files_reach_the_terminal_escaped(tmp_path, capsys):
    import onnx

    evil = "s\n\x1b[31mverdict: all fine\u202e"
    onnx.save(_loop_model(1.0, evil), tmp_path / "a.onnx")
    onnx.save(_loop_model(1.5, evil), tmp_path / "b.onnx")
    np.savez(tmp_path / "in.npz", s0=np.float32(0))
    code = main(["check", str(tmp_path / "a.onnx"), str(tmp_path / "in.npz"), "--against",
                 str(tmp_path / "b.onnx")])
    out = capsys.readouterr().out
    assert code == 1
    assert "\x1b" not in out and "\u202e" not in out
    shown = "s\\n\\x1b[31mverdict: all fine\\u202e"
    assert f"first departure: loop '{shown}', iteration 0 (reference loop '{shown}'): tensor " \
           f"'{shown}'" in out
    assert [ln for ln in out.splitlines() if ln.startswith("verdict:")] == \
        [out.rstrip().splitlines()[-1]]
    code = main(["check", str(tmp_path / "a.onnx"), str(tmp_path / "in.npz"), "--against",
                 str(tmp_path / "b.onnx"), "--format", "json"])
    obj = json.loads(capsys.readouterr().out)
    assert obj["departure"]["tensor"] == obj["departure"]["loop"] == evil


# ----------------------------------------------------------------------------------------------
# The standalone ONNX body, and the command line without a runtime


def test_an_onnx_body_is_copied_with_loopdbgs_parameters_as_inputs(tmp_path):
    import onnx

    from loopdbg.check.extract_onnx import body_key, standalone_onnx_body
    from loopdbg.ir.onnx_bodies import index_bodies

    _, model, inputs = files("nested_loops")
    engine = Engine(model)
    proto = onnx.load(DATA / "nested_loops" / "model.onnx")
    index = index_bodies(proto.graph)
    assert set(index) == {("Loop", ("acc_final", "all_inner")), ("Loop", ("h_last", "h_all"))}
    e = next(e for e in engine.run(inputs, record_nodes=True)
             if type(e).__name__ == "IterationDone" and e.path == "outer/inner")
    spec = engine.loops["outer/inner"]
    data, targets = standalone_onnx_body(proto, index[body_key(spec, engine.loops["outer"])],
                                         spec, e.body_in, all_nodes=True)
    body = onnx.load_from_string(data)
    onnx.checker.check_model(body, full_check=True)
    assert [i.name for i in body.graph.input] == ["j", "inner_cond_in", "h_in", "acc_in", "x"]
    assert len(body.graph.output) == len(targets)
    nodes = [t.name for t in targets if t.kind == "node"]
    assert sorted(nodes) == ["h_half", "h_mix", "h_out", "h_scan", "inner_cond_out"]
    assert nodes.index("h_half") < nodes.index("h_mix") < nodes.index("h_out")


def test_an_error_naming_a_file_is_escaped_too(tmp_path, capsys):
    bad = tmp_path / "m\x1b[2J\n.onnx"
    assert main(["check", str(DATA / "while_loop" / "model.xml"), "--against", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert "\x1b" not in err and err.startswith("loopdbg: ") and "m\\x1b[2J\\n.onnx: no such" in err


def test_runtimes_needs_against_and_against_refuses_trace(capsys):
    d = DATA / "while_loop"
    assert main(["check", str(d / "model.xml"), "--runtimes"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "loopdbg: --runtimes compares two models: give the other one with --against."
    assert main(["check", str(d / "model.xml"), "--against", str(d / "model.onnx"), "--trace",
                 "x.ltrace"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_onnxruntime_on_an_ir_is_refused_in_one_sentence(capsys):
    assert main(["check", str(DATA / "while_loop" / "model.xml"), "--runtime",
                 "onnxruntime"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("loopdbg: onnxruntime runs ONNX models only") and "\n" not in err


# ----------------------------------------------------------------------------------------------
# With the runtimes


@pytest.mark.oracle
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_an_onnx_model_is_checked_per_iteration_with_onnx_bodies(name, runtime):
    from loopdbg.check import check

    _, model, inputs = files(name)
    report = check(model, inputs, per_iteration=True, all_nodes=True, runtime=runtime)
    ovt.skip_unless_compared(report)
    assert report.exit_code == 0, [lc.error for lc in report.loops.values()]
    done = [e for e in Engine(model).run(inputs) if type(e).__name__ == "IterationDone"]
    assert sum(lc.iterations for lc in report.loops.values()) == len(done)
    assert all(lc.compiled == 1 and lc.tensors >= 4 for lc in report.loops.values())


@pytest.mark.oracle
def test_a_fused_attention_loop_is_checked_per_iteration_in_openvino():
    from loopdbg.check import check

    fused, _, inputs = files("fused_attention", "fused.xml")
    report = check(fused, inputs, per_iteration=True, all_nodes=True)
    ovt.skip_unless_compared(report)
    assert report.exit_code == 0
    assert [(lc.iterations, lc.compiled) for lc in report.loops.values()] == [(6, 1)]


@pytest.mark.oracle
def test_the_onnx_test_models_with_scan_if_and_scan8_check_per_iteration(tmp_path):
    import onnx

    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    import _onnx_models as om
    from loopdbg.check import check

    for build in (om.scan_with_axes_and_directions, om.nested_with_if_and_outer_values,
                  om.scan8_batch):
        proto, feeds = build()[:2]
        path = tmp_path / f"{build.__name__}.onnx"
        onnx.save(proto, path)
        report = check(read_model(path), feeds, per_iteration=True, all_nodes=True,
                       runtime="onnxruntime")
        ovt.skip_unless_compared(report)
        assert report.exit_code == 0, build.__name__
        checked = [lc for lc in report.loops.values() if lc.note is None]
        assert checked and all(lc.iterations > 0 for lc in checked)
    assert [lc.note is not None for lc in report.loops.values()].count(True) == 1   # Scan-8


@pytest.mark.oracle
def test_cli_checks_an_onnx_model_per_iteration_and_never_loads_a_runtime_itself():
    d = DATA / "attention_decoder"
    code = ("import sys; from loopdbg.cli import main; "
            f"rc = main(['check', {str(d / 'model.onnx')!r}, '--per-iteration', '--all-nodes']); "
            "print(rc, [m for m in ('onnxruntime', 'openvino') if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert "onnxruntime 1." in proc.stdout, proc.stdout + proc.stderr
    if "crashed (" in proc.stdout or "did not finish" in proc.stdout:
        pytest.skip("onnxruntime could not answer on this host")
    assert "verdict: loopdbg and onnxruntime agree (outputs and every body iteration)." in \
        proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "0 []"


@pytest.mark.oracle
def test_check_json_follows_the_documented_schema(capsys):
    d = DATA / "nested_loops"
    code = main(["check", str(d / "model.onnx"), "--per-iteration", "--all-nodes", "--format",
                 "json"])
    obj = json.loads(capsys.readouterr().out)
    if obj["runtime"]["failure"] in ovt.UNAVAILABLE:
        pytest.skip(obj["runtime"]["error"])
    _assert_schema(obj, "check", _documented())
    assert code == 0 == obj["exit_code"]
    assert (obj["runtime"]["name"], obj["runtime"]["precision"]) == ("onnxruntime", None)
    assert [(lc["path"], lc["runs"], lc["iterations"]) for lc in obj["loops"]] == \
        [("outer/inner", 3, 12), ("outer", 1, 3)]
    assert obj["verdict"] == "loopdbg and onnxruntime agree (outputs and every body iteration)."


@pytest.mark.oracle
def test_an_onnxruntime_crash_is_one_sentence_and_loopdbgs_outputs_remain():
    d = DATA / "while_loop"
    proc = loopdbg("check", d / "model.onnx", env_extra={"LOOPDBG_ONNXRUNTIME_FAULT":
                                                          "SIGSEGV:infer"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "outputs: not compared: onnxruntime crashed (SIGSEGV) while running the model." in \
        proc.stdout
    assert "loopdbg's own outputs:" in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.oracle
def test_a_runtime_going_wrong_mid_run_is_called_wrong_from_its_first_iteration():
    """OpenVINO made to add 1 to every float it returns from its 3rd run on (the 3rd body
    iteration): loopdbg on both models and onnxruntime agree, so OpenVINO looks wrong."""
    d = DATA / "attention_decoder"
    proc = loopdbg("check", d / "model.xml", d / "inputs.npz", "--against", d / "model.onnx",
                   "--runtimes", "--format", "json",
                   env_extra={"LOOPDBG_OPENVINO_FAULT": "wrong3:infer"})
    obj = json.loads(proc.stdout)
    runtimes = obj["runtimes"]
    for side in runtimes.values():
        if side["runtime"]["failure"] in ovt.UNAVAILABLE:
            pytest.skip(side["runtime"]["error"])
    _assert_schema(obj, "against", _documented())
    assert proc.returncode == 1 == obj["exit_code"]
    assert obj["departure"] is None                       # the conversion itself is faithful
    [j] = obj["judgements"]
    assert (j["runtime"], j["wrong"], j["loop"], j["iteration"], j["tensor"]) == \
        ("OpenVINO", True, "all_attn", 2, "q")
    assert obj["verdict"] == j["text"]
    assert j["text"].startswith("OpenVINO looks wrong on model.xml: loopdbg runs both models "
                                "alike and onnxruntime agrees with it, but OpenVINO departs "
                                "from iteration 2 of loop 'all_attn' on")
    groups = obj["agreement"][0]["groups"]
    assert groups == [["loopdbg on model.xml", "loopdbg on model.onnx",
                       "onnxruntime on model.onnx"], ["OpenVINO on model.xml"]]


@pytest.mark.oracle
def test_a_broken_conversion_that_both_runtimes_follow_is_the_conversions_fault(capsys):
    d = DATA / "while_loop"
    code = main(["check", str(d / "broken.xml"), str(d / "inputs.npz"), "--against",
                 str(d / "model.onnx"), "--runtimes"])
    out, err = capsys.readouterr()
    if "crashed" in out or "did not finish" in out:
        pytest.skip("a runtime could not answer on this host")
    assert code == 1, out + err
    assert "OpenVINO on broken.xml: agrees with loopdbg (outputs and every body iteration)" in out
    assert "onnxruntime on model.onnx: agrees with loopdbg" in out
    assert "so the conversion itself changed what the model computes." in out
    assert out.rstrip().endswith("verdict: broken.xml departs from model.onnx in loop 'v_all', "
                                 "iteration 4: tensor 'keep_going'.")
