"""Answers that were silently wrong (issue 14, class 7).

* An output (or input) named like a keyword of ``np.savez`` (``file``, ``allow_pickle``, ...) was
  dropped from the .npz or crashed the save: every name is now a member of its own.
* Replay checked only the sha256 of the .xml: the .bin and the inputs stored in the trace are
  checked too, and a replay of anything else is refused in one sentence.
* A 0-byte or non-ONNX ``.onnx`` "ran" and exited 0: it is refused in one sentence.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from relhelpers import assert_refused

# np.savez(file, *args, allow_pickle=True, **kwds) and savez_compressed's parameters, and names
# numpy's own member naming could confuse
SAVEZ_NAMES = ["file", "allow_pickle", "args", "kwds", "arr_0", "compress", "x.npy", "a/b"]


def model_with_outputs(folder: Path, names: list[str], *, inputs: bool = False
                       ) -> tuple[Path, Path]:
    """A Loop whose outputs (or, with ``inputs``, whose inputs) are called ``names``."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("names")
    loop = b.loop("loop", trip=2, cond=True)
    values = {}
    for k, name in enumerate(names):
        p = b.parameter(name if inputs else f"in{k}", "f32", [2])
        acc = loop.merged_input(p, f"acc{k}")
        new = loop.body.op("Add", [acc, np.full([2], k + 1, np.float32)], name=f"add{k}")
        loop.back_edge(new, acc)
        b.result(loop.output_last(new, name=f"out{k}" if inputs else name))
        values[name if inputs else f"in{k}"] = np.full(2, 10.0 * k, np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / "model.xml")
    inputs = folder / "in.npz"
    import zipfile
    with zipfile.ZipFile(inputs, "w") as zf:           # np.savez cannot take these names either
        for name, v in values.items():
            with zf.open(name + ".npy", "w") as f:
                np.lib.format.write_array(f, v)
    return xml, inputs


def test_outputs_named_like_savez_keywords(cli, tmp_path):
    xml, inputs = model_with_outputs(tmp_path / "m", SAVEZ_NAMES)
    out = tmp_path / "out.npz"
    r = cli("run", xml, inputs, "-o", out)
    assert r.code == 0, r.err
    with np.load(out, allow_pickle=False) as data:
        assert sorted(data.files) == sorted(SAVEZ_NAMES)
        for k, name in enumerate(SAVEZ_NAMES):
            np.testing.assert_array_equal(data[name], np.full(2, 10.0 * k + 2 * (k + 1)))


def test_inputs_template_named_like_savez_keywords(cli, tmp_path):
    xml, _ = model_with_outputs(tmp_path / "m", SAVEZ_NAMES, inputs=True)
    out = tmp_path / "template.npz"
    r = cli("inputs", xml, "-o", out)
    assert r.code == 0, r.err
    with np.load(out, allow_pickle=False) as data:
        assert sorted(data.files) == sorted(SAVEZ_NAMES)
    assert cli("run", xml, out, "-q").code == 0          # the template runs as it is


def test_a_name_a_zip_member_cannot_hold_is_refused_not_dropped(tmp_path):
    from loopdbg.files import Output, OutputError

    out = Output(tmp_path / "o.npz")
    with pytest.raises(OutputError, match="cannot be kept in an .npz"):
        out.write_npz({"a\x00b": np.zeros(1), "a": np.ones(1)})
    assert not (tmp_path / "o.npz").exists()


# -- replay checks every file it depends on --------------------------------------------------------

@pytest.fixture
def recorded(tmp_path):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.ir.load import read_model
    from loopdbg.trace import record
    from relhelpers import accumulate_loop

    xml, inputs = accumulate_loop(tmp_path / "m")
    model = read_model(xml)
    values = load_npz(inputs)
    trace = tmp_path / "run.ltrace"
    record(Engine(model).run(values), trace, model=model, inputs=values)
    return xml, trace


def test_replay_of_unchanged_files_works(recorded):
    from loopdbg.debug.session import Session
    from loopdbg.trace.replay import open_trace

    _, trace = recorded
    timeline = open_trace(trace)
    session = Session(timeline.engine, timeline.inputs, timeline=timeline)
    assert session.goto("loop", 2).event.iteration == 2


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("change", ["xml", "bin", "bin missing", "stored inputs"])
def test_replay_refuses_what_changed(recorded, change):
    from loopdbg.trace import TraceError
    from loopdbg.trace.replay import open_trace

    xml, trace = recorded
    if change == "xml":
        xml.write_text(xml.read_text().replace('name="loop"', 'name="loop2"', 1))
        why = "changed since the trace was recorded"
    elif change == "bin":
        _flip_last_byte(xml.with_suffix(".bin"))
        why = "model.bin changed since the trace was recorded"
    elif change == "bin missing":
        xml.with_suffix(".bin").unlink()
        why = "are not there"
    else:
        _change_stored_inputs(trace)
        why = "inputs stored in the trace do not have the sha256"
    with pytest.raises(TraceError, match=why):
        open_trace(trace)


def _change_stored_inputs(trace: Path) -> None:
    """Alter one value of the INPUTS frame and fix its checksum (a tampered, valid file)."""
    from loopdbg.trace import TraceReader
    from loopdbg.trace import format as fmt

    with TraceReader(trace) as t:
        off = t.index.inputs
        _, data = t._read(off, "inputs")
    frame = bytearray(data)
    frame[-fmt.CRC.size - 1] ^= 0x40                       # the last byte of the last array's data
    fmt.CRC.pack_into(frame, len(frame) - fmt.CRC.size, zlib.crc32(bytes(frame[:-fmt.CRC.size])))
    raw = bytearray(trace.read_bytes())
    raw[off:off + len(frame)] = frame
    trace.write_bytes(bytes(raw))
    with TraceReader(trace) as t:
        assert t.verify() == []                          # a valid file, only its values differ


# -- .onnx files that are not ONNX models ----------------------------------------------------------

NOT_ONNX = {
    "empty": b"",
    "text": b"this is not a model\n",
    "protobuf of nothing": b"\x08\x07",                  # parses: an ir_version and no graph
    "an IR renamed": None,
    "random bytes": bytes(range(256)) * 3,
}


@pytest.mark.parametrize("what", list(NOT_ONNX))
@pytest.mark.parametrize("command", ["run", "explain", "inputs", "graph"])
def test_an_onnx_file_that_is_not_a_model(cli, tmp_path, what, command):
    pytest.importorskip("onnx")
    path = tmp_path / "model.onnx"
    data = NOT_ONNX[what]
    if data is None:
        from relhelpers import accumulate_loop
        xml, _ = accumulate_loop(tmp_path / "ir")
        data = xml.read_bytes()
    path.write_bytes(data)
    extra = {"inputs": ("-o", tmp_path / "t.npz"), "graph": ("-o", tmp_path / "g.dot")}
    r = cli(command, path, *extra.get(command, ()))
    line = assert_refused(r, str(path))
    assert "ONNX" in line, line
    assert not (tmp_path / "t.npz").exists() and not (tmp_path / "g.dot").exists()
