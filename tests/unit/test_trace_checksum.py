"""The trace's crc32 comes from ISA-L (the optional extra ``fast-trace``) when it is installed,
else from zlib: both must write the same bytes, and each must read what the other wrote."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from loopdbg.trace import format as fmt

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "loopdbg" / "demos" / "ti_lstm"


@pytest.mark.parametrize("size", [0, 1, 15, 16, 4095, 65536, 1 << 20, (1 << 20) + 7])
def test_the_trace_crc32_is_zlib_s(size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    assert fmt.crc32(data) == zlib.crc32(data)
    assert fmt.crc32(data, 0x12345678) == zlib.crc32(data, 0x12345678)
    view = memoryview(np.frombuffer(data, np.uint8)).cast("B")
    assert fmt.crc32(view, 7) == zlib.crc32(view, 7)


def _loopdbg(args: list[str], without_isal: bool) -> str:
    """``loopdbg ARGS`` in a child process, with ISA-L hidden from it or not; its output."""
    block = "import sys; sys.modules['isal'] = None; sys.modules['isal.isal_zlib'] = None; " \
        if without_isal else ""
    code = f"{block}from loopdbg.cli import main; raise SystemExit(main({args!r}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _record(path: Path, without_isal: bool) -> None:
    _loopdbg(["run", str(DEMO / "model.xml"), str(DEMO / "inputs.npz"), "--trace", str(path)],
             without_isal)


def _check(path: Path, without_isal: bool) -> str:
    return _loopdbg(["trace", "info", "--check", str(path)], without_isal)


def test_traces_written_with_and_without_isal_are_the_same_and_read_by_both(tmp_path):
    pytest.importorskip("isal")
    fast, plain = tmp_path / "fast.ltrace", tmp_path / "plain.ltrace"
    _record(fast, without_isal=False)
    _record(plain, without_isal=True)
    assert _check(fast, without_isal=True) == _check(fast, without_isal=False)
    assert _check(plain, without_isal=False) == _check(plain, without_isal=True)
    a, b = fast.read_bytes(), plain.read_bytes()
    assert len(a) == len(b) and a.count(b"LDF\xa7") == b.count(b"LDF\xa7")
