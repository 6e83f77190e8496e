"""Damaged traces: cut short (crash, kill -9, full disk) or with flipped bytes. Never a traceback:
every complete frame is recovered, the file says it was truncated, a bad frame is named."""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine, IterationDone
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model
from loopdbg.trace import TraceError, TraceReader, record
from loopdbg.trace import format as fmt

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """A complete trace of a TensorIterator (sliced input, scan outputs) and its frames' extents."""
    name = "ti_invariant_reverse_out"
    model = read_model(CORPUS / name / "model.xml")
    inputs = load_npz(CORPUS / name / "inputs.npz")
    path = tmp_path_factory.mktemp("damage") / "full.ldt"
    record(Engine(model).run(inputs, record_nodes=True), path, model=model, inputs=inputs,
           options={"trace_all": True})
    data = path.read_bytes()
    with TraceReader(path) as t:
        frames = [(off, off + len(raw), kind, raw) for off, kind, raw in t._walk()]
        iterations = [(r.meta.path, r.meta.iteration) for r in t.records()
                      if r.kind == fmt.ITERATION]
    return path, data, frames, iterations


def expected_after_cut(frames, cut):
    """(path, iteration) of every ITERATION frame wholly inside the first ``cut`` bytes."""
    out = []
    for off, end, kind, raw in frames:
        if kind == fmt.ITERATION and end <= cut:
            meta, _ = fmt.parse_body(raw, fmt.HEAD.size, len(raw) - fmt.CRC.size)
            it, *_ = fmt.ITER_FIXED.unpack_from(meta, 0)
            out.append(it)
    return out


def test_cut_anywhere_recovers_every_complete_frame(trace, tmp_path):
    path, data, frames, iterations = trace
    header_end = frames[0][1]
    cuts = set(range(0, len(data), max(1, len(data) // 400)))
    for off, end, _, _ in frames:                        # both sides of every frame boundary
        cuts.update({off - 1, off, off + 1, end - 1, end, end + 1})
    cuts.update(range(len(data) - 40, len(data)))         # inside the footer and the locator
    cut_file = tmp_path / "cut.ldt"
    for cut in sorted(c for c in cuts if 0 <= c < len(data)):
        cut_file.write_bytes(data[:cut])
        if cut < header_end:
            with pytest.raises(TraceError):
                TraceReader(cut_file)
            continue
        with TraceReader(cut_file) as t:
            assert t.truncated, cut
            assert "truncated" in t.truncation_text()
            want = expected_after_cut(frames, cut)
            got = [f.iteration for f in t.frames(iterations[0][0])] if want else []
            assert got == want, cut
            for k in want:                                 # and each one reads back in O(1)
                t.frame(iterations[0][0], k)
            if t.index.end < 0:
                assert t.status == "truncated"
            assert t.problems == [], (cut, t.problems)


def test_the_complete_file_is_not_truncated(trace):
    path, data, frames, iterations = trace
    with TraceReader(path) as t:
        assert not t.truncated and t.status == "complete"
        assert [(f.path, f.iteration) for f in t.frames(iterations[0][0])] == iterations


def test_a_flipped_byte_is_reported_with_its_frame(trace, tmp_path):
    path, data, frames, iterations = trace
    bad = tmp_path / "flipped.ldt"
    it_frames = [(off, end) for off, end, kind, _ in frames if kind == fmt.ITERATION]
    rng = random.Random(0)
    for k, (off, end) in enumerate(it_frames):
        for pos in {off + 5, off + fmt.HEAD.size + 2, rng.randrange(off, end), end - 1}:
            damaged = bytearray(data)
            damaged[pos] ^= 0x40
            bad.write_bytes(bytes(damaged))
            loop, iteration = iterations[k]
            with TraceReader(bad) as t:                    # the footer still finds the frame
                with pytest.raises(TraceError) as err:
                    t.frame(loop, iteration)
                msg = str(err.value)
                assert f"loop '{loop}'" in msg and f"iteration {iteration}" in msg, msg
                assert f"byte {off}" in msg and "damaged" in msg
                for j, (l2, i2) in enumerate(iterations):   # every other frame is fine
                    if j != k:
                        t.frame(l2, i2)
                problems = t.verify()
                assert len(problems) == 1 and f"byte {off}" in problems[0], problems
            with TraceReader(bad, scan=True) as t:       # scanning skips it and says so
                assert [f.iteration for f in _readable(t, loop)] == \
                    [i for j, (_, i) in enumerate(iterations) if j != k]
                assert any(f"byte {off}" in p for p in t.problems), t.problems


def _readable(t, loop):
    out = []
    row = t.index.row(loop, ())
    for k in range(t.index.count(row)):
        try:
            out.append(t.frame(loop, k))
        except TraceError as exc:
            assert "missing" in str(exc)
    return out


def test_a_damaged_footer_falls_back_to_scanning(trace, tmp_path):
    path, data, frames, iterations = trace
    footer_off = fmt.parse_locator(data[-fmt.LOCATOR.size:])[0]
    damaged = bytearray(data)
    damaged[footer_off + 30] ^= 0xFF
    bad = tmp_path / "footer.ldt"
    bad.write_bytes(bytes(damaged))
    with TraceReader(bad) as t:
        assert t.index_damaged and not t.truncated
        assert any("footer" in p for p in t.problems)
        assert [(f.path, f.iteration) for f in t.frames(iterations[0][0])] == iterations
        assert t.status == "complete"


@pytest.mark.parametrize("content", [b"", b"hello, world" * 10, b"\x89LDTRA"])
def test_not_a_trace(tmp_path, content):
    p = tmp_path / "x.ldt"
    p.write_bytes(content)
    with pytest.raises(TraceError):
        TraceReader(p)


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        TraceReader(tmp_path / "nope.ldt")


def test_a_newer_major_version_is_refused(trace, tmp_path):
    path, data, _, _ = trace
    p = tmp_path / "v3.ldt"
    p.write_bytes(fmt.PREAMBLE.pack(fmt.MAGIC, 3, 0) + data[fmt.PREAMBLE.size:])
    with pytest.raises(TraceError, match=r"version 3\.0 trace; this loopdbg reads versions 1\.x "
                                         r"and 2\.x"):
        TraceReader(p)


KILL_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from loopdbg.engine import Engine
    from loopdbg.builder import GraphBuilder
    from loopdbg.trace import record

    b = GraphBuilder("endless")
    x0 = b.parameter("x0", "f32", [4])
    loop = b.loop("spin", trip=-1, cond=True)
    x = loop.merged_input(x0, "x")
    x2 = loop.body.op("Add", [x, np.ones(4, np.float32)], name="x_next")
    loop.back_edge(x2, x)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(x2, name="x_final"))
    model = b.build()
    inputs = {"x0": np.zeros(4, np.float32)}
    record(Engine(model).run(inputs), sys.argv[1], inputs=inputs, flush_interval=0.05)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_kill_9_while_recording_loses_only_the_unwritten_tail(tmp_path):
    path = tmp_path / "killed.ldt"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and path.stat().st_size > 300_000:
                break
            if proc.poll() is not None:
                pytest.fail(f"the recorder exited early: {proc.stderr.read().decode()}")
            time.sleep(0.02)
        else:
            pytest.fail("the recorder wrote too little in 60 s")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    size = path.stat().st_size
    with TraceReader(path) as t:
        assert t.truncated and t.status == "truncated"
        assert "truncated" in t.truncation_text()
        n = t.loops()[0].recorded
        assert n > 100
        assert t.loops()[0].iterations is None           # it never finished
        # every complete frame (batch) is recovered: what is left over is at most the batch
        # that was being written, one flush (batch_bytes, 1 MiB)
        assert size - t.valid_end < 1 << 20
        assert fmt.BATCH in [kind for _, kind, _ in t._walk()]
        for k in (0, n // 2, n - 1):
            f = t.frame("spin", k)
            np.testing.assert_array_equal(f.back_edges["x"], np.full(4, k + 1, np.float32))
        assert t.verify() != []                          # it says the file is truncated


def test_interrupted_recording_is_closed_properly(tmp_path):
    """Ctrl+C in the middle of a run: what was computed is written, the file is complete."""
    name = "loop_trip_and_cond_early_stop"
    model = read_model(CORPUS / name / "model.xml")
    inputs = load_npz(CORPUS / name / "inputs.npz")

    def interrupted():
        for e in Engine(model).run(inputs):
            yield e
            if isinstance(e, IterationDone) and e.iteration == 2:
                raise KeyboardInterrupt

    path = tmp_path / "int.ldt"
    with pytest.raises(KeyboardInterrupt):
        record(interrupted(), path, model=model, inputs=inputs)
    with TraceReader(path) as t:
        assert not t.truncated and t.status == "interrupted"
        assert [f.iteration for f in t.frames("loop")] == [0, 1, 2]
        assert t.loops()[0].reason is None


def test_engine_error_is_recorded(tmp_path):
    data = ROOT / "tests" / "data" / "failing_loop"
    model = read_model(data / "model.xml")
    inputs = load_npz(data / "inputs.npz")
    path = tmp_path / "err.ldt"
    from loopdbg.errors import LoopdbgError
    with pytest.raises(LoopdbgError) as err:
        record(Engine(model).run(inputs), path, model=model, inputs=inputs)
    with TraceReader(path) as t:
        assert not t.truncated and t.status == "error"
        assert t.end["error"] == str(err.value)
        assert any(r.reason == "error" for r in t.loops())


def test_consumer_stopping_early_closes_the_file(tmp_path):
    from loopdbg.trace import recording
    name = "loop_for_accum_scan"
    model = read_model(CORPUS / name / "model.xml")
    inputs = load_npz(CORPUS / name / "inputs.npz")
    path = tmp_path / "stop.ldt"
    rec = recording(Engine(model).run(inputs), path, model=model, inputs=inputs)
    for e in rec:
        if isinstance(e, IterationDone) and e.iteration == 1:
            break
    del rec, e                       # a plain for loop: dropping the iterator closes the file
    with TraceReader(path) as t:
        assert not t.truncated and t.status == "stopped"
        assert [f.iteration for f in t.frames("loop")] == [0, 1]


class _FullDisk:
    """The trace file on a disk that fills up after ``room`` bytes (ENOSPC from then on)."""

    def __init__(self, raw, room: int):
        self.raw, self.room = raw, room

    def write(self, buf) -> int:
        n = len(memoryview(buf).cast("B"))
        if n > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= n
        return self.raw.write(buf)

    def close(self) -> None:
        self.raw.close()


@pytest.mark.parametrize("room", [0, 300, 3000])
def test_full_disk_is_an_error_not_a_traceback(tmp_path, monkeypatch, room):
    """(/dev/full itself is refused as a trace: it is a device, not a regular file.)"""
    import loopdbg.trace.writer as writer_module

    real_open = open
    monkeypatch.setattr(writer_module, "open",
                        lambda *a, **k: _FullDisk(real_open(*a, **k), room), raising=False)
    name = "loop_for_accum_scan"
    model = read_model(CORPUS / name / "model.xml")
    inputs = load_npz(CORPUS / name / "inputs.npz")
    path = tmp_path / "full.ltrace"
    with pytest.raises(TraceError, match="No space left on device"):
        record(Engine(model).run(inputs), path, model=model, inputs=inputs)
    assert path.stat().st_size <= room
    if path.stat().st_size:
        with TraceReader(path) as t:            # what reached the disk still opens
            assert t.truncated


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_during_loopdbg_run_trace_closes_the_file(tmp_path):
    path = tmp_path / "endless.ltrace"
    model = ROOT / "tests" / "data" / "endless_loop" / "model.xml"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "loopdbg", "run", str(model), "--trace",
                             str(path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (path.exists() and path.stat().st_size > 200_000):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"loopdbg run did not record: {proc.communicate()[1].decode()}")
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err.decode()
    with TraceReader(path) as t:
        assert not t.truncated and t.status == "interrupted"
        assert t.verify() == []
        n = t.loops()[0].recorded
        assert n > 100 and t.frame(t.loops()[0].path, n - 1).iteration == n - 1
