"""Frames whose checksums hold but whose JSON meta is hostile (issue 15, traces): text that is
not UTF-8, nesting 100,000 deep, a 5,000-digit integer, fields of the wrong type or an iteration
count of 10^9. Every command that reads the trace answers with at most one sentence — never a
traceback (a RecursionError used to escape) — and ``trace info --check`` flags the file."""

from __future__ import annotations

import pytest

from relhelpers import accumulate_loop
from test_hostile_traces import _frames, encode

from loopdbg.trace import format as fmt

CASES = {
    "header not utf-8": (fmt.HEADER, lambda m: b'{"a": "\xff\xfe"}'),
    "header nested deep": (fmt.HEADER, lambda m: b"[" * 100_000 + b"]" * 100_000),
    "header with a huge integer": (fmt.HEADER, lambda m: b'{"version": ' + b"9" * 5000 + b"}"),
    "loop start nested deep": (fmt.LOOP_START,
                               lambda m: b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
    "loop start with a huge trip count": (
        fmt.LOOP_START, lambda m: m.replace(b'"trip_count":', b'"trip_count":' + b"9" * 5000
                                          + b',"x":')),
    "end of wrong types": (fmt.END, lambda m: b'{"status": 5, "error": [1], "frames": "x", '
                                            b'"iterations": -5}'),
    "loop finish of a billion iterations": (
        fmt.LOOP_FINISH, lambda m: b'{"path": 1, "iterations": 1000000000, "stop": null, '
                                 b'"outer": "x"}'),
}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.ir.load import read_model
    from loopdbg.trace import record

    folder = tmp_path_factory.mktemp("clean")
    xml, inputs = accumulate_loop(folder / "model")
    model, values = read_model(xml), load_npz(inputs)
    record(Engine(model).run(values), folder / "clean.ltrace", model=model, inputs=values)
    return folder / "clean.ltrace"


def hostile(clean, kind, change) -> bytes:
    """``clean`` without its footer (read by scanning), the first frame of ``kind`` given the
    meta ``change(meta)``, its checksum rewritten to hold."""
    data = clean.read_bytes()
    out, done = bytearray(data[:fmt.PREAMBLE.size]), False
    for k, raw in _frames(data):
        if k == fmt.FOOTER:
            break
        meta, arrays = fmt.parse_body(raw, fmt.HEAD.size, len(raw) - fmt.CRC.size, raw=True)
        if k == kind and not done:
            meta, done = change(meta), True
        out += encode(k, meta, [(g, n, raw[a:b]) for g, n, (a, b) in arrays])
    assert done
    return bytes(out)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_meta_is_at_most_one_sentence(clean, tmp_path, cli, case):
    kind, change = CASES[case]
    trace = tmp_path / "hostile.ltrace"
    trace.write_bytes(hostile(clean, kind, change))
    for argv in (("trace", "info", trace), ("trace", "info", trace, "--check"),
                 ("trace", "show", trace, "--loop", "loop", "-i", "1"),
                 ("trace", "export", trace, "-o", tmp_path / "o.npz"),
                 ("trace", "diff", clean, trace)):
        r = cli(*argv)
        assert "Traceback" not in r.err, (argv, r.err)
        assert len(r.err.strip().splitlines()) <= 1, (argv, r.err)
        assert r.code in (0, 1, 2), (argv, r.code)
    assert cli("trace", "info", trace, "--check").code != 0
