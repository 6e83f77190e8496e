"""No hang from a few hundred bytes (issue 26, class 6).

* RegexFullMatch's pattern ``(a+)+b`` against 40 ``a`` backtracks for ever with Python's ``re``
  (onnx.reference's engine); loopdbg matches with RE2, in time linear in the text, and refuses a
  pattern RE2 cannot run (a backreference) in one sentence.
* A Loop inside a SequenceMap body would be iterated by onnx.reference, past --max-iterations:
  refused, naming the layer and the Loop.
* A graph with 40,000 outputs is read in linear time (each output's name used to be checked
  against a set rebuilt from every output before it: hours for this file). The test runs under
  the reliability suite's 120 s guard.
"""

from __future__ import annotations

import numpy as np
import pytest

from relhelpers import assert_refused

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper  # noqa: E402

vi = helper.make_tensor_value_info


def _save(path, nodes, inputs, outputs, opset=20):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def _regex_model(tmp_path, pattern: str):
    path = _save(tmp_path / "regex.onnx",
                 [helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=pattern)],
                 [vi("x", T.STRING, [3])], [vi("y", T.BOOL, [3])])
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.array(["a" * 40 + "c", "aaab", "b"]))
    return path, inputs


def test_a_catastrophic_pattern_matches_in_linear_time(tmp_path, cli):
    pytest.importorskip("re2")
    path, inputs = _regex_model(tmp_path, "(a+)+b")
    r = cli("run", path, inputs, "-o", tmp_path / "out.npz")
    assert r.code == 0, r.err
    with np.load(tmp_path / "out.npz") as out:
        assert out["y"].tolist() == [False, True, False]


def test_a_pattern_re2_cannot_run_is_refused(tmp_path, cli):
    pytest.importorskip("re2")
    path, inputs = _regex_model(tmp_path, r"(a)\1")
    r = cli("run", path, inputs)
    assert_refused(r, "RegexFullMatch", "RE2")
    assert "re2.cc" not in r.err                     # RE2's own log line stays quiet


def test_a_loop_inside_a_sequence_map_body_is_refused(tmp_path, cli):
    """The body's Loop has M = 2^62 and a body that does nothing: onnx.reference would spin."""
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"])], "lb",
        [vi("i", T.INT64, []), vi("c", T.BOOL, [])], [vi("c_out", T.BOOL, [])])
    m = helper.make_tensor("m", T.INT64, [], [2**62])
    t = helper.make_tensor("t", T.BOOL, [], [True])
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["M"], value=m),
         helper.make_node("Constant", [], ["C"], value=t),
         helper.make_node("Loop", ["M", "C"], [], body=loop_body),
         helper.make_node("Identity", ["s"], ["o"])], "body",
        [vi("s", T.FLOAT, [2])], [vi("o", T.FLOAT, [2])])
    seq = helper.make_tensor_sequence_value_info
    path = _save(tmp_path / "seqmap.onnx",
                 [helper.make_node("SequenceConstruct", ["x"], ["xs"]),
                  helper.make_node("SequenceMap", ["xs"], ["ys"], body=body)],
                 [vi("x", T.FLOAT, [2])], [seq("ys", T.FLOAT, [2])], opset=17)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros(2, np.float32))
    assert_refused(cli("run", path, inputs, "--max-iterations", "5"), "SequenceMap", "Loop",
                   "--max-iterations")


def test_forty_thousand_outputs_are_read_in_linear_time(tmp_path):
    from loopdbg.engine.inputs import output_names
    from loopdbg.ir.load import read_model

    x = vi("x", T.FLOAT, [1])
    path = tmp_path / "outs.onnx"
    g = helper.make_graph([], "g", [x], [x] * 40_000)          # one tensor, 40,000 outputs
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    names = output_names(read_model(path))
    assert len(names) == len(set(names)) == 40_000
    assert names[:3] == ["x", "x#1", "x#2"]
