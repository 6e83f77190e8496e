"""The trace's crc32 comes from ISA-L (the optional extra ``fast-trace``) when it is installed,
else from zlib: both must write the same bytes, and each must read what the other wrote."""

from __future__ import annotations

import json
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


EACH = """
import contextlib, io, json, sys
from loopdbg.cli import main
for args in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(args)
    print(json.dumps([code, out.getvalue()]), flush=True)
"""


def _loopdbg(commands: list[list[str]], without_isal: bool) -> list[str]:
    """``loopdbg ARGS`` for each ARGS in turn, in one child process with ISA-L hidden from it or
    not; the output of each."""
    block = "import sys; sys.modules['isal'] = None; sys.modules['isal.isal_zlib'] = None\n" \
        if without_isal else ""
    proc = subprocess.run([sys.executable, "-c", block + EACH, json.dumps(commands)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [code for code, _ in results] == [0] * len(commands), proc.stdout + proc.stderr
    return [out for _, out in results]


def _record(path: Path) -> list[str]:
    return ["run", str(DEMO / "model.xml"), str(DEMO / "inputs.npz"), "--trace", str(path)]


def _check(path: Path) -> list[str]:
    return ["trace", "info", "--check", str(path)]


def test_traces_written_with_and_without_isal_are_the_same_and_read_by_both(tmp_path):
    pytest.importorskip("isal")
    fast, plain = tmp_path / "fast.ltrace", tmp_path / "plain.ltrace"
    _loopdbg([_record(fast)], without_isal=False)
    _, fast_plain, plain_plain = _loopdbg([_record(plain), _check(fast), _check(plain)],
                                          without_isal=True)
    fast_fast, plain_fast = _loopdbg([_check(fast), _check(plain)], without_isal=False)
    assert fast_plain == fast_fast
    assert plain_fast == plain_plain
    a, b = fast.read_bytes(), plain.read_bytes()
    assert len(a) == len(b) and a.count(b"LDF\xa7") == b.count(b"LDF\xa7")
