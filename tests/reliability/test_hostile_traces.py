"""Arrays in a trace are checked before anything uses them (issue 14, class 1).

A trace is a file anyone can write. Its arrays are .npy blobs; one could hold a pickle (an object
array, which runs code when loaded with ``allow_pickle=True``), a header whose sizes do not match
its bytes, Fortran order, negative sizes, a format version loopdbg never writes, a structured or
subarray dtype, a header that is not a literal. Each of these, put in each kind of frame that
holds arrays (the model inputs, an iteration, a loop's outputs, the model's outputs) of an
otherwise valid trace (checksums and footer index rewritten to match), must be:

* flagged by ``trace info --check`` (exit 1, naming the frame and the array);
* refused by ``trace export`` (one sentence, nothing written: no .npz that unpickles later);
* refused by ``trace show`` / ``trace info`` / ``trace diff`` when they need it (one sentence);
* never unpickled: the pickle makes a folder when loaded, and the folder never appears.
"""

from __future__ import annotations

import io
import json
import os
import zlib
from pathlib import Path

import numpy as np
import pytest

from relhelpers import accumulate_loop, assert_refused

from loopdbg.trace import format as fmt


# -- writing a trace by hand ----------------------------------------------------------------------

def _frames(data: bytes):
    pos = fmt.PREAMBLE.size
    while pos < len(data) - fmt.LOCATOR.size:
        _, kind, _, _, blen = fmt.HEAD.unpack_from(data, pos)
        end = pos + fmt.HEAD.size + blen + fmt.CRC.size
        yield kind, data[pos:end]
        pos = end


def encode(kind: int, meta: bytes, arrays) -> bytes:
    """One frame: [(group, name, .npy bytes)] with a checksum that holds."""
    body = fmt.META_LEN.pack(len(meta)) + meta + fmt.COUNT.pack(len(arrays))
    for group, name, npy in arrays:
        nb = name.encode()
        body += fmt.ENTRY.pack(group, len(nb), len(npy)) + nb + npy
    head = fmt.HEAD.pack(fmt.SYNC, kind, 0, 0, len(body))
    return head + body + fmt.CRC.pack(zlib.crc32(head + body))


def npy_bytes(a) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def rewrite(src: Path, dst: Path, replace) -> None:
    """``dst``: ``src`` with the first array for which ``replace(kind, group, name)`` gives bytes
    replaced by them, every checksum and the footer index rebuilt: a complete, valid file."""
    from loopdbg.trace.scan import TraceFile

    data = src.read_bytes()
    out = bytearray(data[:fmt.PREAMBLE.size])
    done = False
    for kind, frame in _frames(data):
        if kind == fmt.FOOTER:
            break
        meta, arrays = fmt.parse_body(frame, fmt.HEAD.size, len(frame) - fmt.CRC.size, raw=True)
        new = []
        for group, name, (a, b) in arrays:
            npy = frame[a:b]
            if not done:
                got = replace(kind, group, name)
                if got is not None:
                    npy, done = got, True
            new.append((group, name, npy))
        out += encode(kind, meta, new)
    assert done, "nothing was replaced"
    dst.write_bytes(bytes(out))
    with TraceFile(dst, scan=True) as t:         # the index, found by scanning (metas only)
        ix = t.index
    ix.frames += 1
    meta, columns = ix.footer()
    at = len(out)
    out += encode(fmt.FOOTER, fmt.json_bytes(meta), [(0, n, npy_bytes(a)) for n, a in columns])
    out += fmt.locator(at, len(out) - at)
    dst.write_bytes(bytes(out))


class _Mkdir:
    """Unpickling this makes a folder: the proof that a pickle ran."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def pickled(marker: Path) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array([_Mkdir(str(marker))], dtype=object),
                              allow_pickle=True)
    return buf.getvalue()


def raw_npy(header: str, data: bytes, version=(1, 0)) -> bytes:
    """.npy bytes with any header text (padded as numpy pads it) and any data."""
    h = header.encode("latin1")
    size = 2 if version == (1, 0) else 4
    pad = (-(10 + size - 2 + len(h) + 1)) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes(version) + len(h).to_bytes(size, "little") + h + data


def _h(descr, shape, fortran=False) -> str:
    return f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {shape!r}, }}"


def bad_arrays(marker: Path) -> dict:
    eight = np.arange(2, dtype=np.float32).tobytes()
    return {
        "pickled object array": pickled(marker),
        "object field in a structured dtype": raw_npy(_h([("a", "|O")], (1,)), bytes(8)),
        "shape larger than the bytes": raw_npy(_h("<f4", (1000,)), eight),
        "shape smaller than the bytes": raw_npy(_h("<f4", (1,)), eight),
        "Fortran order": raw_npy(_h("<f4", (1, 2), fortran=True), eight),
        "negative size": raw_npy(_h("<f4", (-1, 0)), b""),
        "format version 3.0": raw_npy(_h("<f4", (2,)), eight, version=(3, 0)),
        "format version 9.9": raw_npy(_h("<f4", (2,)), eight, version=(9, 9)),
        "header not a literal": raw_npy("__import__('os').mkdir('x')", eight),
        "subarray dtype": raw_npy(_h(("<f4", (2,)), (1,)), eight),
        "header runs past the array": b"\x93NUMPY\x01\x00\xff\x7f" + b"{" * 20,
        "not .npy at all": b"GARBAGE!" * 4,
    }


# -- the traces -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.ir.load import read_model
    from loopdbg.trace import record

    folder = tmp_path_factory.mktemp("clean")
    xml, inputs = accumulate_loop(folder / "model")
    path = folder / "clean.ltrace"
    model = read_model(xml)
    values = load_npz(inputs)
    record(Engine(model).run(values, record_nodes=True), path, model=model, inputs=values,
           options={"trace_all": True})
    return path


# where: (frame kind, array name) of the array replaced
PLACES = {"inputs": (fmt.INPUTS, "seq"), "iteration": (fmt.ITERATION, "acc"),
          "loop outputs": (fmt.LOOP_FINISH, "acc_final"), "outputs": (fmt.RUN_FINISH, "acc_final")}


def test_rewrite_itself_makes_a_valid_trace(clean, tmp_path, cli):
    """The helper is sound: replacing an array by its own bytes gives a healthy, complete file."""
    from loopdbg.trace import TraceReader

    with TraceReader(clean) as t:
        same = npy_bytes(t.model_inputs()["seq"])
    out = tmp_path / "same.ltrace"
    rewrite(clean, out, lambda kind, group, name: same if name == "seq" else None)
    with TraceReader(out) as t:
        assert not t.truncated and not t.index_damaged and not t.problems
    r = cli("trace", "info", out, "--check")
    assert r.code == 0, r.out
    assert cli("trace", "diff", clean, out).code == 0
    assert cli("trace", "export", out, "-o", tmp_path / "same.npz").code == 0


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("bad", list(bad_arrays(Path("x"))))
def test_a_bad_array_is_never_used(clean, tmp_path, cli, place, bad):
    marker = tmp_path / "PICKLE_RAN"
    kind, target = PLACES[place]
    blob = bad_arrays(marker)[bad]
    trace = tmp_path / "bad.ltrace"
    rewrite(clean, trace, lambda k, group, name: blob if (k, name) == (kind, target) else None)

    # trace info --check names the frame and the array
    r = cli("trace", "info", trace, "--check")
    assert r.code == 1, (r.code, r.out, r.err)
    assert "Traceback" not in r.err
    check = r.out[r.out.index("check:"):]
    assert fmt.KIND_NAMES[kind] in check and f"'{target}'" in check, check

    # export refuses, and writes nothing
    out = tmp_path / "out.npz"
    line = assert_refused(cli("trace", "export", trace, "-o", out), str(trace))
    assert f"'{target}'" in line and "nothing was written" in line, line
    assert not out.exists() and not list(tmp_path.glob("*.partial"))

    # the readers that need the array refuse it in one sentence
    if kind == fmt.ITERATION:
        assert_refused(cli("trace", "show", trace, "--loop", "loop", "-i", "0"), "damaged")
    if kind == fmt.RUN_FINISH:                     # info says so, and shows the rest
        r = cli("trace", "info", trace)
        assert r.code == 0 and not r.err, r.err
        assert "problem:" in r.out and "run-finished frame" in r.out and "damaged" in r.out
        assert "loop: 3 iterations" in r.out
    if kind != fmt.INPUTS:                         # diff compares the header's inputs sha256
        assert_refused(cli("trace", "diff", clean, trace), "damaged")

    assert not marker.exists(), "a pickle from the trace was run"


def test_pickled_export_before_the_fix_would_have_run_code(clean, tmp_path):
    """Why export must check: the bytes it copies, loaded the way numpy allows, run code."""
    marker = tmp_path / "PICKLE_RAN"
    npz = tmp_path / "copied.npz"
    import zipfile
    with zipfile.ZipFile(npz, "w") as zf:
        zf.writestr("seq.npy", pickled(marker))
    with np.load(npz, allow_pickle=True) as data:
        data["seq"]
    assert marker.exists()


@pytest.mark.parametrize("frame", ["loop start", "loop finish", "iteration", "end"])
def test_bad_meta_is_flagged_not_a_traceback(clean, tmp_path, cli, frame):
    """A frame whose checksum holds but whose meta is not what the format says."""
    kinds = {"loop start": fmt.LOOP_START, "loop finish": fmt.LOOP_FINISH, "iteration": fmt.ITERATION,
             "end": fmt.END}
    data = clean.read_bytes()
    out = bytearray(data[:fmt.PREAMBLE.size])
    done = False
    for kind, raw in _frames(data):
        if kind == fmt.FOOTER:
            break
        meta, arrays = fmt.parse_body(raw, fmt.HEAD.size, len(raw) - fmt.CRC.size, raw=True)
        if kind == kinds[frame] and not done:
            meta = b"[1, 2, 3]" if kind != fmt.ITERATION else meta[:-3]
            done = True
        out += encode(kind, meta, [(g, n, raw[a:b]) for g, n, (a, b) in arrays])
    assert done
    trace = tmp_path / "meta.ltrace"
    trace.write_bytes(bytes(out))                    # no footer: read by scanning
    for argv in (("trace", "info", trace), ("trace", "info", trace, "--check"),
                 ("trace", "show", trace, "--loop", "loop", "-i", "1"),
                 ("trace", "export", trace, "-o", tmp_path / "o.npz"),
                 ("trace", "diff", clean, trace)):
        r = cli(*argv)
        assert "Traceback" not in r.err, (argv, r.err)
        assert len(r.err.strip().splitlines()) <= 1, r.err
    assert cli("trace", "info", trace, "--check").code == 1


def test_a_header_that_is_not_an_object(clean, tmp_path, cli):
    data = clean.read_bytes()
    frames = list(_frames(data))
    kind, raw = frames[0]
    assert kind == fmt.HEADER
    out = data[:fmt.PREAMBLE.size] + encode(fmt.HEADER, json.dumps([1, 2]).encode(), [])
    for _, raw in frames[1:]:
        out += raw
    trace = tmp_path / "h.ltrace"
    trace.write_bytes(out)
    assert_refused(cli("trace", "info", trace), "header frame", "damaged")
