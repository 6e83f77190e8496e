"""Text from files never reaches the terminal raw (issue 14, class 2).

Names chosen by whoever wrote a file: IR layer and tensor names, ONNX node and value names, npz
keys, trace headers and file paths, each holding terminal control sequences (OSC 0 retitles the
terminal, OSC 52 writes the clipboard, CSI 2J clears the screen, the 8-bit C1 forms of the same,
a bidi override, DEL) and a newline followed by a forged line. Every command that prints them
(run, run --break, explain, graph, inputs, check, trace info/show/diff/export, and every error)
must show them escaped: no control character but the newlines loopdbg itself puts between lines,
and no line beginning with the forged text.

XML 1.0 cannot hold ESC or most C0 characters (not even as &#27;), so IR names carry the C1 forms
(U+009B CSI, U+009D OSC, U+009C ST), DEL, CR, a tab, a newline and U+202E; ONNX, npz, traces and
paths carry everything.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relhelpers import ROOT, subprocess_env

# What a hostile file name holds: OSC 0 (title), OSC 52 (clipboard), CSI 2J (clear), SGR, a newline
# and a forged line, CR, a bidi override, 8-bit CSI, DEL, a tab.
EVIL = ("\x1b]0;PWNED\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[31m\nFORGED line\r\u202eevil"
        "\x9b2J\x7f\t")
# The same attack in what XML 1.0 can hold.
EVIL_XML = "\x9b2J\x9d0;PWNED\x9c\x9d52;c;cm0=\x9c\nFORGED line\r\u202eevil\x7f"

_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def assert_shown_safely(*texts: str) -> None:
    """No control character except newline; no line that starts with the forged text."""
    for text in texts:
        bad = _CONTROL.findall(text)
        assert not bad, f"raw control characters {bad!r} reached the terminal:\n{text!r}"
        for line in text.splitlines():
            assert not line.lstrip(" :").startswith("FORGED"), f"a name forged a line: {text!r}"


def assert_one_line_error(outcome, *fragments) -> str:
    assert outcome.code not in (0, None), outcome
    assert "Traceback" not in outcome.err
    lines = outcome.err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("loopdbg: "), outcome.err
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    assert_shown_safely(outcome.out, outcome.err)
    return lines[0]


# -- the models -----------------------------------------------------------------------------------

def ir_model(folder: Path, evil: str = EVIL_XML) -> tuple[Path, Path]:
    """accumulate_loop (relhelpers) with every name (model, Parameters, loop, body layers,
    Results, npz keys) ending in ``evil``."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("m" + evil)
    seq = b.parameter("seq" + evil, "f32", [4, 2])
    acc0 = b.parameter("acc0" + evil, "f32", [1, 2])
    loop = b.loop("loop" + evil, trip=3, cond=True)
    x_t = loop.sliced_input(seq, "x_t" + evil, axis=0)
    acc = loop.merged_input(acc0, "acc" + evil)
    it = loop.current_iteration("iter" + evil)
    acc_new = loop.body.op("Add", [acc, x_t], name="acc_new" + evil)
    loop.back_edge(acc_new, acc)
    loop.condition(loop.body.op("Less", [it, np.array([5], np.int64)], name="keep" + evil))
    b.result(loop.output_last(acc_new, name="acc_final" + evil))
    b.result(loop.output_concat(acc_new, axis=0, name="acc_seq" + evil))
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / "model.xml")
    inputs = folder / "in.npz"
    np.savez(inputs, **{"seq" + evil: np.arange(8, dtype=np.float32).reshape(4, 2),
                        "acc0" + evil: np.zeros((1, 2), np.float32)})
    return xml, inputs


def onnx_model(folder: Path, evil: str = EVIL) -> tuple[Path, Path]:
    """An ONNX Loop summing x into acc, every graph, node and value name ending in ``evil``."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    n = lambda s: s + evil          # noqa: E731
    body = helper.make_graph(
        [helper.make_node("Add", [n("acc_in"), n("x")], [n("acc_out")], name=n("add")),
         helper.make_node("Identity", [n("cond_in")], [n("cond_out")], name=n("keep")),
         helper.make_node("Identity", [n("acc_out")], [n("acc_scan")], name=n("scan"))],
        n("body"),
        [helper.make_tensor_value_info(n("iteration_num"), I64, []),
         helper.make_tensor_value_info(n("cond_in"), B, []),
         helper.make_tensor_value_info(n("acc_in"), F, [2])],
        [helper.make_tensor_value_info(n("cond_out"), B, []),
         helper.make_tensor_value_info(n("acc_out"), F, [2]),
         helper.make_tensor_value_info(n("acc_scan"), F, [2])])
    graph = helper.make_graph(
        [helper.make_node("Loop", [n("M"), "", n("acc0")], [n("acc_final"), n("acc_all")],
                          body=body, name=n("loop"))],
        n("graph"),
        [helper.make_tensor_value_info(n("M"), I64, []),
         helper.make_tensor_value_info(n("x"), F, [2]),
         helper.make_tensor_value_info(n("acc0"), F, [2])],
        [helper.make_tensor_value_info(n("acc_final"), F, [2]),
         helper.make_tensor_value_info(n("acc_all"), F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save(model, str(path))
    inputs = folder / "in.npz"
    np.savez(inputs, **{n("M"): np.array(3, np.int64), n("x"): np.ones(2, np.float32),
                        n("acc0"): np.zeros(2, np.float32)})
    return path, inputs


@pytest.fixture(scope="module")
def ir(tmp_path_factory):
    return ir_model(tmp_path_factory.mktemp("ir"))


@pytest.fixture(scope="module")
def onnx_files(tmp_path_factory):
    return onnx_model(tmp_path_factory.mktemp("onnx"))


@pytest.fixture(params=["ir", "onnx"])
def model(request, ir, onnx_files):
    return ir if request.param == "ir" else onnx_files


def test_the_payloads_survive_the_readers(ir, onnx_files):
    """The test means something: the names reach loopdbg with their control characters."""
    from loopdbg.engine import Engine
    from loopdbg.ir.load import read_model

    for path, evil in ((ir[0], EVIL_XML), (onnx_files[0], EVIL)):
        engine = Engine(read_model(path))
        assert any(evil.strip("\t").rstrip() in p for p in engine.loops), list(engine.loops)


# -- every command --------------------------------------------------------------------------------

def test_run_report(cli, model):
    r = cli("run", *model)
    assert r.code == 0, r.err
    assert "acc_final" in r.out and "\\n" in r.out          # the name is there, escaped
    assert_shown_safely(r.out, r.err)


def test_run_to_a_breakpoint_and_watches(cli, model):
    r = cli("run", *model, "--break", "i == 1", "--watch", "i")
    assert r.code == 0, r.err
    assert r.out.startswith("stopped: breakpoint 1")
    assert_shown_safely(r.out, r.err)
    r = cli("run", *model, "--watch", "i")                  # runs to the end: the outputs
    assert r.code == 0, r.err
    assert_shown_safely(r.out, r.err)


def test_explain(cli, model):
    for extra in ((), (model[1],)):
        r = cli("explain", model[0], *extra)
        assert r.code == 0, r.err
        assert "acc" in r.out
        assert_shown_safely(r.out, r.err)
    r = cli("explain", model[0], "--format", "json")
    assert r.code == 0
    assert_shown_safely(r.out, r.err)


def test_inputs_template(cli, model, tmp_path):
    r = cli("inputs", model[0], "-o", tmp_path / "t.npz")
    assert r.code == 0, r.err
    assert_shown_safely(r.out, r.err)


def test_graph(cli, model, tmp_path):
    r = cli("graph", model[0], "-o", tmp_path / "g.dot")
    assert r.code == 0, r.err
    assert "drawn in" in r.err
    assert_shown_safely(r.out, r.err)


def test_traces(cli, model, tmp_path):
    a, b = tmp_path / "a.ltrace", tmp_path / "b.ltrace"
    assert cli("run", *model, "--trace", a, "--trace-all").code == 0
    r = cli("trace", "info", a, "--check")
    assert r.code == 0, r.out + r.err
    assert_shown_safely(r.out, r.err)
    with __import__("loopdbg.trace", fromlist=["TraceReader"]).TraceReader(a) as t:
        path = t.paths()[0]
        tensors = list(t.frame(path, 1).tensors())
    r = cli("trace", "show", a, "--loop", path, "-i", "1")
    assert r.code == 0, r.err
    assert_shown_safely(r.out, r.err)
    r = cli("trace", "show", a, "--loop", path, "-i", "1", "--tensor", tensors[0])
    assert r.code == 0, r.err
    assert_shown_safely(r.out, r.err)
    r = cli("trace", "export", a, "-o", tmp_path / "a.npz")
    assert r.code == 0, r.err
    assert_shown_safely(r.out, r.err)
    # B: the same model on other inputs, so that diff names a tensor
    from loopdbg.engine.inputs import load_npz
    values = load_npz(model[1])
    other = tmp_path / "other.npz"
    np.savez(other, **{k: (v + 1 if v.dtype.kind == "f" else v) for k, v in values.items()})
    assert cli("run", model[0], other, "--trace", b, "--trace-all").code == 0
    r = cli("trace", "diff", a, b)
    assert r.code == 1, r.err
    assert "first divergence" in r.out
    assert_shown_safely(r.out, r.err)
    # errors that name the trace's loops and tensors
    assert_one_line_error(cli("trace", "show", a, "--loop", "nope", "-i", "0"), "no loop")
    assert_one_line_error(cli("trace", "show", a, "--loop", path, "-i", "0", "--tensor", "nope"),
                          "has no tensor")
    assert_one_line_error(cli("trace", "export", a, "-o", tmp_path / "x.npz", "--loop", "nope"))


def test_check_report(model, tmp_path):
    """The check report with loopdbg's own outputs (OpenVINO made to fail: no OpenVINO run)."""
    pytest.importorskip("openvino")
    env = dict(subprocess_env(), LOOPDBG_OPENVINO_FAULT="raise")
    proc = subprocess.run([sys.executable, "-m", "loopdbg", "check", *map(str, model)],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "loopdbg's own outputs" in proc.stdout and "acc_final" in proc.stdout
    assert_shown_safely(proc.stdout, proc.stderr)


# -- errors: npz keys, names in messages, paths ---------------------------------------------------

def test_npz_keys_in_errors(cli, model, tmp_path):
    from loopdbg.engine.inputs import load_npz
    values = load_npz(model[1])
    extra = tmp_path / "extra.npz"
    np.savez(extra, **values, **{"bogus" + EVIL: np.zeros(1, np.float32)})
    assert_one_line_error(cli("run", model[0], extra), "bogus", "does not take")
    missing = tmp_path / "missing.npz"
    np.savez(missing, **dict(list(values.items())[1:]))
    assert_one_line_error(cli("run", model[0], missing), "has no input")
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, **{k: np.zeros((7, 7, 7), v.dtype) for k, v in values.items()})
    assert_one_line_error(cli("run", model[0], wrong))


def test_paths(cli, ir, tmp_path):
    folder = tmp_path / ("dir" + EVIL.replace("/", ""))
    xml, inputs = ir_model(folder)
    r = cli("run", xml, inputs, "-o", folder / "out.npz", "--trace", folder / "t.ltrace")
    assert r.code == 0, r.err
    assert "outputs saved to" in r.err and "trace written to" in r.err
    assert_shown_safely(r.out, r.err)
    r = cli("trace", "info", folder / "t.ltrace")
    assert r.code == 0
    assert_shown_safely(r.out, r.err)
    for argv in (("run", folder / "nothing.xml"), ("run", xml, folder / "nothing.npz"),
                 ("trace", "info", folder / "nothing.ltrace"), ("explain", folder / "x.txt"),
                 ("run", xml, inputs, "-o", folder / "no" / "out.npz")):
        assert_one_line_error(cli(*argv), "dir")


def test_argparse_errors(cli):
    assert_one_line_error(cli("explain", "m.xml", "--format", "x" + EVIL), "invalid choice")
    assert_one_line_error(cli("run", "m.xml", "--bogus" + EVIL.replace(" ", "")),
                          "unrecognized arguments")


def test_a_real_process_writes_no_control_character(ir, tmp_path):
    """Through a real stdout and stderr (not pytest's capture): the bytes themselves."""
    proc = subprocess.run([sys.executable, "-m", "loopdbg", "run", *map(str, ir),
                           "--trace", str(tmp_path / "t.ltrace")],
                          capture_output=True, env=subprocess_env(), timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stdout, proc.stderr):
        text = stream.decode("utf-8")
        assert_shown_safely(text)
        assert b"\x1b" not in stream and b"\xc2\x9b" not in stream


# -- trace headers --------------------------------------------------------------------------------

def test_trace_header_fields(cli, tmp_path):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.ir.load import read_model
    from loopdbg.trace import record

    xml = ROOT / "tests" / "data" / "counter_loop" / "model.xml"
    model = read_model(xml)
    inputs = load_npz(xml.with_name("inputs.npz"))
    path = tmp_path / "t.ltrace"
    record(Engine(model).run(inputs), path, model=model, inputs=inputs, source="src" + EVIL,
           options={"opt" + EVIL: "value" + EVIL})
    # the header as a hostile recorder wrote it: every text field
    from loopdbg.trace import TraceReader, TraceWriter
    with TraceReader(path) as t:
        header = dict(t.header)
    header.update(loopdbg="9" + EVIL, created="today" + EVIL)
    header["model"] = dict(header["model"], path="/m" + EVIL, xml_sha256="ab" + EVIL,
                           bin_sha256="cd" + EVIL, format="xml" + EVIL)
    header["inputs"] = dict(header["inputs"], sha256="ef" + EVIL,
                            arrays=[{"name": "in" + EVIL, "dtype": "f4" + EVIL, "shape": [1]},
                                    {"name": "odd", "dtype": "x", "shape": "(2," + EVIL}])
    forged = tmp_path / "forged.ltrace"
    with TraceWriter(forged, header):
        pass
    for trace in (path, forged):
        r = cli("trace", "info", trace)
        assert r.code == 0, r.err
        assert "PWNED" in r.out
        assert_shown_safely(r.out, r.err)


def test_a_hostile_header_shape_is_not_a_traceback(cli, tmp_path):
    from loopdbg.trace import TraceWriter

    for header in ({"model": "a string" + EVIL, "inputs": ["x"], "options": 7},
                   {"inputs": {"arrays": [1, None, {"name": EVIL}]}}):
        path = tmp_path / "h.ltrace"
        with TraceWriter(path, header):
            pass
        r = cli("trace", "info", path)
        assert r.code == 0, r.err
        assert_shown_safely(r.out, r.err)


# -- the function itself --------------------------------------------------------------------------

@pytest.mark.parametrize("ch", [chr(c) for c in [*range(0x20), 0x7f, *range(0x80, 0xa0), 0x61c,
                                                0x200e, 0x200f, *range(0x2028, 0x202f),
                                                *range(0x2066, 0x206a), 0xdc80]])
def test_safe_escapes_every_control_character(ch):
    from loopdbg.text import safe, safe_lines

    shown = safe(f"a{ch}b")
    assert shown.startswith("a\\") and shown.endswith("b") and len(shown) > 3
    assert not _CONTROL.search(shown) and "\n" not in shown
    assert safe(shown) == shown                            # idempotent
    shown.encode("utf-8")                                  # printable even for a lone surrogate
    lines = safe_lines(f"a{ch}b")
    assert lines == ("a\nb" if ch == "\n" else shown)


def test_safe_keeps_ordinary_text():
    from loopdbg.text import safe

    text = "loop 'outer/inner' — ünïcödé, 中文, emoji 🙂, quotes \"'\\"
    assert safe(text) == text
    assert safe(os.sep) == os.sep
