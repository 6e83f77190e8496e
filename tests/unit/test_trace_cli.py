"""loopdbg trace info|show|export|diff through loopdbg.cli.main."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from loopdbg.cli import main
from loopdbg.engine import Engine, IterationDone
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model
from loopdbg.trace import TraceReader, record

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"


def rec(path, name="loop_while_iter", trace_all=False, change=None, folder=CORPUS):
    model = read_model(folder / name / "model.xml")
    inputs = load_npz(folder / name / "inputs.npz")
    if change:
        change(inputs)
    record(Engine(model).run(inputs, record_nodes=trace_all), path, model=model, inputs=inputs,
           options={"trace_all": trace_all})
    return str(path)


def test_info(tmp_path, capsys):
    t = rec(tmp_path / "a.ldt")
    assert main(["trace", "info", t]) == 0
    out = capsys.readouterr().out
    assert str(CORPUS / "loop_while_iter" / "model.xml") in out
    with TraceReader(t) as r:
        assert r.header["inputs"]["sha256"] in out
        assert r.header["model"]["xml_sha256"] in out
    assert "loop: 7 iterations, stopped because the body condition became false" in out
    assert "KiB" in out and "complete" in out and "TRUNCATED" not in out
    assert "x_final" in out


def test_info_on_nested_loops(tmp_path, capsys):
    t = rec(tmp_path / "n.ldt", "nested_loop", folder=ROOT / "tests" / "data")
    assert main(["trace", "info", t]) == 0
    out = capsys.readouterr().out
    assert "ran 3 times" in out


def test_info_says_truncated_and_check_finds_damage(tmp_path, capsys):
    t = rec(tmp_path / "a.ldt")
    data = Path(t).read_bytes()
    cut = tmp_path / "cut.ldt"
    cut.write_bytes(data[: len(data) // 2])
    assert main(["trace", "info", str(cut)]) == 0
    out = capsys.readouterr().out
    assert "TRUNCATED" in out and "recovered" in out
    assert "ends before it finished" in out

    with TraceReader(t) as r:
        off = r.frame("loop", 3).offset
    bad = bytearray(data)
    bad[off + 40] ^= 1
    flipped = tmp_path / "flipped.ldt"
    flipped.write_bytes(bytes(bad))
    assert main(["trace", "info", str(flipped), "--check"]) == 1
    out = capsys.readouterr().out
    assert f"byte {off}" in out and "damaged" in out
    assert main(["trace", "info", t, "--check"]) == 0
    assert "every frame's checksum holds" in capsys.readouterr().out


def test_show(tmp_path, capsys):
    t = rec(tmp_path / "a.ldt", trace_all=True)
    assert main(["trace", "show", t, "--loop", "loop", "--iteration", "3"]) == 0
    out = capsys.readouterr().out
    assert "loop 'loop', iteration 3" in out and "condition true" in out
    assert "back_edges/body_x" in out and "nodes/Less_5527" in out
    assert main(["trace", "show", t, "-i", "2", "--tensor", "back_edges/body_count"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("back_edges/body_count: int64 ()")
    assert out.splitlines()[1] == "3"


def test_show_errors_are_one_line(tmp_path, capsys):
    t = rec(tmp_path / "a.ldt")
    assert main(["trace", "show", t, "-i", "70"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no iteration 70" in err and "0..6" in err
    assert main(["trace", "show", t, "--loop", "nope", "-i", "0"]) == 2
    assert "no loop 'nope'" in capsys.readouterr().err
    assert main(["trace", "show", t, "-i", "0", "-t", "zzz"]) == 2
    assert "no tensor 'zzz'" in capsys.readouterr().err
    assert main(["trace", "info", str(tmp_path / "missing.ldt")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "x.npz").write_bytes(b"PK\x03\x04 not a trace")
    assert main(["trace", "info", str(tmp_path / "x.npz")]) == 2
    assert "not a loopdbg trace" in capsys.readouterr().err


def test_export(tmp_path, capsys):
    t = rec(tmp_path / "a.ldt", trace_all=True)
    out = tmp_path / "a.npz"
    assert main(["trace", "export", t, "-o", str(out)]) == 0
    assert "arrays written" in capsys.readouterr().err
    with np.load(out, allow_pickle=False) as z:
        keys = set(z.files)
        assert {"loop/0/body_x", "loop/6/body_x", "loop/3/x_trace", "loop/3/nodes/Less_5527",
                "loop/0/inputs/body_limit", "outputs/x_final", "inputs/x0",
                "loop/outputs/x_final"} <= keys
        with TraceReader(t) as r:
            np.testing.assert_array_equal(z["loop/4/body_x"], r.frame("loop", 4).back_edges["body_x"])
            np.testing.assert_array_equal(z["outputs/x_trace"], r.outputs()["x_trace"])
    with zipfile.ZipFile(out) as zf:                   # a plain npz: one .npy per key
        assert all(n.endswith(".npy") for n in zf.namelist())
    only = tmp_path / "only.npz"
    assert main(["trace", "export", t, "-o", str(only), "--loop", "loop"]) == 0
    with np.load(only, allow_pickle=False) as z:
        assert all(k.startswith("loop/") for k in z.files)
    assert main(["trace", "export", t, "-o", str(only), "--loop", "nope"]) == 2


def test_export_nested(tmp_path):
    t = rec(tmp_path / "n.ldt", "nested_loop", folder=ROOT / "tests" / "data")
    out = tmp_path / "n.npz"
    assert main(["trace", "export", t, "-o", str(out)]) == 0
    with np.load(out, allow_pickle=False) as z, TraceReader(t) as r:
        inner = next(p for p in r.paths() if "/" in p)
        outer = r.executions(inner)[1]
        key = f"{inner}[{','.join(map(str, outer))}]/1/"
        assert any(k.startswith(key) for k in z.files), key


def test_diff(tmp_path, capsys):
    a = rec(tmp_path / "a.ldt")
    b = rec(tmp_path / "b.ldt")

    def bump(inputs):
        inputs["x0"] = inputs["x0"] + np.float32(0.25)
    c = rec(tmp_path / "c.ldt", change=bump)
    assert main(["trace", "diff", a, b]) == 0
    assert capsys.readouterr().out.startswith("identical")
    assert main(["trace", "diff", a, c]) == 1
    out = capsys.readouterr().out
    assert "first divergence: loop 'loop', iteration 0" in out
    assert "max abs error 0.25" in out and "max rel error" in out
    assert main(["trace", "diff", a, c, "--atol", "1e9"]) == 0
    assert "identical" in capsys.readouterr().out


def test_trace_without_action_prints_usage(capsys):
    assert main(["trace"]) == 2
    assert "info" in capsys.readouterr().err


def test_progress_hook_counts(tmp_path):
    """What a progress line can show while recording: frames and bytes so far."""
    from loopdbg.trace import recording
    model = read_model(CORPUS / "ti_gru" / "model.xml")
    inputs = load_npz(CORPUS / "ti_gru" / "inputs.npz")
    with recording(Engine(model).run(inputs), tmp_path / "g.ldt", inputs=inputs) as r:
        for e in r:
            if isinstance(e, IterationDone):
                assert r.writer.iterations == e.iteration + 1
                assert r.writer.bytes_written > 0
