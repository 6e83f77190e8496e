"""A trace whose footer index is hostile but whose checksums hold, and a trace (or the model a
trace replays) that is not a regular file (issue 26, class 7).

The footer's JSON gives the offsets of single frames and the tables the index columns point
into; a file anyone writes may give ``"end": "x"``, a loop index past the table of loop paths, a
stop reason past the table of reasons, or a header whose ``model`` is not an object. Each must end
in at most one sentence (the footer is then ignored and the frames found by scanning), never in
a TypeError or IndexError. A FIFO or ``/dev/zero`` named as a trace, or as the model a trace
replays, is refused before it is read (a FIFO used to hang ``trace info`` for ever): those run in
a child process with a timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from relhelpers import assert_refused, subprocess_env
from test_hostile_trace_meta import clean  # noqa: F401 - the fixture: a complete trace
from test_hostile_traces import _frames, encode, npy_bytes

from loopdbg.trace import format as fmt


def rebuilt(clean, meta=None, columns=None, header=None) -> bytes:
    """``clean`` with its footer's meta changed by ``meta(dict)``, its columns by
    ``columns(dict of arrays)`` and its header by ``header(dict)``, every checksum and the
    locator rewritten to hold."""
    data = clean.read_bytes()
    out = bytearray(data[:fmt.PREAMBLE.size])
    for kind, raw in _frames(data):
        m, arrays = fmt.parse_body(raw, fmt.HEAD.size, len(raw) - fmt.CRC.size, raw=True)
        arrays = [(g, n, raw[a:b]) for g, n, (a, b) in arrays]
        if kind == fmt.HEADER and header:
            h = json.loads(m)
            header(h)
            m = json.dumps(h).encode()
        if kind == fmt.FOOTER:
            at = len(out)
            d = json.loads(m)
            if meta:
                meta(d)
            if columns:
                cols = {n: np.load(io.BytesIO(npy)) for _, n, npy in arrays}
                columns(cols)
                arrays = [(g, n, npy_bytes(cols[n])) for g, n, _ in arrays]
            out += encode(kind, json.dumps(d).encode(), arrays)
            out += fmt.locator(at, len(out) - at)
            break
        out += encode(kind, m, arrays)
    return bytes(out)


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


def _fill(column, value):
    return lambda c: c.__setitem__(column, np.full_like(c[column], value))


FOOTERS = {
    "end is text": dict(meta=_set("end", "x")),
    "end is a list": dict(meta=_set("end", [1])),
    "run_finish is text": dict(meta=_set("run_finish", "x")),
    "inputs is text": dict(meta=_set("inputs", "x")),
    "paths are numbers": dict(meta=_set("paths", [1, 2])),
    "reasons is a number": dict(meta=_set("reasons", 5)),
    "errors is a list": dict(meta=_set("errors", [1])),
    "a loop index past the table": dict(columns=_fill("ex_path", 99)),
    "a negative loop index": dict(columns=_fill("ex_path", -1)),
    "a reason index past the table": dict(columns=_fill("ex_reason", 99)),
    "model is text": dict(header=_set("model", "x")),
    "model is a list": dict(header=_set("model", [1])),
    "inputs header is text": dict(header=_set("inputs", "x")),
}


@pytest.mark.parametrize("case", list(FOOTERS))
def test_a_hostile_footer_is_at_most_one_sentence(clean, tmp_path, cli, case):
    trace = tmp_path / "hostile.ltrace"
    trace.write_bytes(rebuilt(clean, **FOOTERS[case]))
    for argv in (("trace", "info", trace), ("trace", "info", trace, "--check"),
                 ("trace", "show", trace, "--loop", "loop", "-i", "1"),
                 ("trace", "export", trace, "-o", tmp_path / "o.npz"),
                 ("trace", "diff", clean, trace), ("trace", "diff", trace, clean),
                 ("graph", trace, "--iteration", "1", "-o", tmp_path / "g.dot")):
        r = cli(*argv)
        assert "Traceback" not in r.err, (argv, r.err)
        assert len(r.err.strip().splitlines()) <= 1, (argv, r.err)


def test_a_footer_out_of_its_tables_is_read_by_scanning(clean, tmp_path):
    """The frames are still all there: the footer is set aside, the trace read by scanning."""
    from loopdbg.trace import TraceReader

    trace = tmp_path / "hostile.ltrace"
    trace.write_bytes(rebuilt(clean, columns=_fill("ex_reason", 99)))
    with TraceReader(trace) as r:
        assert [(x.path, x.iterations) for x in r.loops()] == [("loop", 3)]
        assert any("footer index is damaged" in p for p in r.problems)


def _child(*argv, timeout=30) -> subprocess.CompletedProcess:
    """``python -m loopdbg ARGV`` in a child process that is killed (failing the test) when it
    does not end within ``timeout`` seconds."""
    try:
        return subprocess.run([sys.executable, "-m", "loopdbg", *map(str, argv)],
                              capture_output=True, text=True, env=subprocess_env(),
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loopdbg {' '.join(map(str, argv))} hung")


def _one_sentence(proc, *fragments) -> str:
    assert proc.returncode not in (0, None), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
@pytest.mark.parametrize("argv", [("trace", "info", "{t}"), ("trace", "diff", "{c}", "{t}"),
                                  ("trace", "export", "{t}", "-o", "{o}"),
                                  ("graph", "{t}", "--iteration", "1", "-o", "{g}")])
def test_a_fifo_trace_is_refused_not_waited_on(clean, tmp_path, argv):
    fifo = tmp_path / "pipe.ltrace"
    os.mkfifo(fifo)
    names = {"t": fifo, "c": clean, "o": tmp_path / "o.npz", "g": tmp_path / "g.dot"}
    proc = _child(*(a.format(**names) for a in argv))
    _one_sentence(proc, "pipe.ltrace", "FIFO", "not a regular file")


def test_dev_zero_as_a_trace_is_refused(tmp_path, cli):
    link = tmp_path / "zero.ltrace"
    link.symlink_to("/dev/zero")
    assert_refused(cli("trace", "info", link), "zero.ltrace", "a device", "not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
@pytest.mark.parametrize("what", ["fifo", "/dev/zero"])
def test_a_replayed_model_that_is_not_a_regular_file(clean, tmp_path, what):
    """The header names the model to replay: a FIFO there used to hang the sha256 check."""
    target = tmp_path / "model.xml"
    if what == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    trace = tmp_path / "replay.ltrace"

    def point(h):
        h["model"]["path"] = str(target)
    trace.write_bytes(rebuilt(clean, header=point))
    proc = _child("graph", trace, "--iteration", "1", "-o", tmp_path / "g.dot")
    _one_sentence(proc, "model.xml", "not a regular file")
