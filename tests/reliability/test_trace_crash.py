"""Crash-safe traces through the command line: kill -9, cuts and corruption at many offsets.

tests/unit/test_trace_damage.py checks the reader (TraceReader) on cut and flipped files and a
kill -9 of a recording script. Here the same damage goes through what a user runs:
``loopdbg run --trace`` killed with SIGKILL, then ``loopdbg trace info|show|export|diff`` on the
remains, and on files cut or overwritten at hundreds of offsets (a nested loop recorded with
--trace-all, so frames of every kind are hit). The commands may succeed (exit 0, or 1 for
``--check``/``diff`` findings) or refuse with one ``loopdbg: `` line; never a traceback or a hang.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from relhelpers import ROOT, assert_refused, endless_loop, subprocess_env
from loopdbg.trace import TraceReader
from loopdbg.trace import format as fmt

NESTED = ROOT / "tests" / "data" / "nested_loop"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A complete --trace-all recording of the nested loop, its bytes and frame extents."""
    from loopdbg.cli import main

    path = tmp_path_factory.mktemp("trace") / "nested.ltrace"
    assert main(["run", str(NESTED / "model.xml"), str(NESTED / "inputs.npz"), "--trace",
                 str(path), "--trace-all", "-q"]) == 0
    with TraceReader(path) as t:
        frames = [(off, off + len(raw), kind) for off, kind, raw in t._walk()]
        assert t.status == "complete" and t.index.iterations_recorded == 9
    return path, path.read_bytes(), frames


def assert_clean(outcome, allowed=(0,)) -> None:
    """Either a normal result or one `loopdbg: ` line; no traceback."""
    assert "Traceback" not in outcome.err + outcome.out
    if outcome.code in allowed:
        return
    lines = outcome.err.strip().splitlines()
    assert outcome.code == 2 and len(lines) == 1 and lines[0].startswith("loopdbg: "), outcome


def inspect_all(cli, path, tmp_path, full=None, thorough=True) -> None:
    info = cli("trace", "info", path)
    assert_clean(info)
    assert_clean(cli("trace", "info", path, "--check"), allowed=(0, 1))
    if not thorough:
        return
    assert_clean(cli("trace", "show", path, "--loop", "outer", "-i", 0))
    assert_clean(cli("trace", "show", path, "--loop", "outer/inner", "--outer", "1", "-i", 1,
                     "-t", "ix"))
    assert_clean(cli("trace", "export", path, "-o", tmp_path / "x.npz"))
    if full is not None:
        assert_clean(cli("trace", "diff", full, path), allowed=(0, 1))


def test_cuts_at_many_offsets(recorded, cli, tmp_path):
    full, data, frames = recorded
    cuts = set(range(0, len(data), max(1, len(data) // 150)))
    for off, end, _ in frames:                     # both sides of every frame boundary
        cuts.update({off - 1, off, off + 1, end - 1, end})
    cuts.update(range(len(data) - 48, len(data)))   # inside the footer and its locator
    cut_file = tmp_path / "cut.ltrace"
    header_end = frames[0][1]
    rng = random.Random(7)
    for cut in sorted(c for c in cuts if 0 <= c < len(data)):
        cut_file.write_bytes(data[:cut])
        info = cli("trace", "info", cut_file)
        assert_clean(info)
        if cut >= header_end:                   # past the header, the file opens and says so
            assert info.code == 0 and "TRUNCATED" in info.out, (cut, info)
            complete = sum(1 for _, end, _ in frames if end <= cut)
            iterations = sum(1 for _, end, kind in frames if end <= cut and kind == fmt.ITERATION)
            assert f"frames:  {complete}, {iterations} iterations" in info.out, (cut, info.out)
        inspect_all(cli, cut_file, tmp_path, full, thorough=rng.random() < 0.3)


@pytest.mark.parametrize("damage", ["flip", "zeros", "garbage", "ones"])
def test_corruption_at_many_offsets(recorded, cli, tmp_path, damage):
    full, data, frames = recorded
    rng = random.Random(damage)
    bad = tmp_path / "bad.ltrace"
    offsets = sorted(set(rng.randrange(len(data)) for _ in range(60)) |
                     {0, 3, 8, 16, len(data) - 1, len(data) - 8, len(data) - 20} |
                     {off + 2 for off, _, _ in frames})
    for pos in offsets:
        damaged = bytearray(data)
        span = 1 if damage == "flip" else rng.randint(1, 64)
        for k in range(pos, min(pos + span, len(data))):
            damaged[k] = {"flip": damaged[k] ^ 0x10, "zeros": 0, "ones": 0xFF,
                          "garbage": rng.randrange(256)}[damage]
        bad.write_bytes(bytes(damaged))
        inspect_all(cli, bad, tmp_path, full, thorough=rng.random() < 0.3)


def test_a_flipped_byte_in_a_frame_is_found_by_check(recorded, cli, tmp_path):
    full, data, frames = recorded
    off, end, _ = frames[len(frames) // 2]
    damaged = bytearray(data)
    damaged[(off + end) // 2] ^= 0x01
    bad = tmp_path / "flipped.ltrace"
    bad.write_bytes(bytes(damaged))
    out = cli("trace", "info", bad, "--check")
    assert out.code == 1 and f"byte {off}" in out.out and "Traceback" not in out.err


def test_export_says_it_skipped_a_damaged_frame_and_fails(recorded, cli, tmp_path):
    """A frame whose checksum fails cannot be exported: the arrays of the others are, and the
    command says which frame was stepped over and exits non-zero (it used to say "N arrays
    written" and exit 0, an export silently short of an iteration)."""
    full, data, frames = recorded
    off, end, kind = next(f for f in frames[len(frames) // 2:] if f[2] in (fmt.ITERATION, fmt.BATCH))
    damaged = bytearray(data)
    damaged[(off + end) // 2] ^= 0x01
    bad = tmp_path / "flipped.ltrace"
    bad.write_bytes(bytes(damaged))
    whole = cli("trace", "export", full, "-o", tmp_path / "whole.npz")
    assert whole.code == 0, whole.err
    r = cli("trace", "export", bad, "-o", tmp_path / "part.npz")
    line = assert_refused(r, "flipped.ltrace", f"byte {off}", "skipped", "incomplete")
    with np.load(tmp_path / "whole.npz") as a, np.load(tmp_path / "part.npz") as b:
        assert len(b.files) < len(a.files) and f"{len(b.files)} arrays" in line


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_kill_9_during_run_trace_then_trace_info_recovers_every_complete_frame(tmp_path, cli):
    xml, inputs = endless_loop(tmp_path / "model")
    trace = tmp_path / "killed.ltrace"
    proc = subprocess.Popen([sys.executable, "-m", "loopdbg", "run", str(xml), str(inputs),
                             "--trace", str(trace)], env=subprocess_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (trace.exists() and trace.stat().st_size > 400_000):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"run --trace did not record: {proc.communicate()[1].decode()}")
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    size = trace.stat().st_size
    info = cli("trace", "info", trace)
    assert info.code == 0 and "Traceback" not in info.err
    assert "TRUNCATED" in info.out
    with TraceReader(trace) as t:
        n = t.loops()[0].recorded
        # all that is lost is the batch being written (one flush: at most batch_bytes, 1 MiB)
        assert size - t.valid_end < 1 << 20
    assert f"spin: {n} iterations, the trace ends before it finished" in info.out
    check = cli("trace", "info", trace, "--check")
    assert check.code == 1 and "truncated" in check.out and f"{n} iterations" in check.out
    shown = cli("trace", "show", trace, "-i", n - 1, "-t", "x")
    assert shown.code == 0 and f"[{n}., {n}., {n}., {n}.]" in shown.out.replace("\n", "")
    exported = cli("trace", "export", trace, "-o", tmp_path / "x.npz", "--loop", "spin")
    assert exported.code == 0, exported.err
    with np.load(tmp_path / "x.npz") as z:
        xs = sorted((k for k in z.files if k.startswith("spin/") and k.endswith("/x")
                     and k.count("/") == 2), key=lambda k: int(k.split("/")[1]))
        assert len(xs) == n
        np.testing.assert_array_equal(z[xs[-1]], np.full((1, 4), n, np.float32))
