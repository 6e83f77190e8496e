"""An error about a file with 200,000 members stays one short line (issue 26, item 8).

Messages that list what a file holds (the inputs an .npz has that the model does not take, the
inputs the model expects, the loops of a model or a trace, the names in a body) list a few, then
"... and N more"; and the command line cuts any error past ``loopdbg.text.LINE`` characters, the
last defence for a list nobody thought of.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np

from relhelpers import Outcome, accumulate_loop, assert_refused

MEMBERS = 200_000
ON_DISK = 5_000     # members of the .npz written and read end to end


def _many_members(path, n: int = ON_DISK, stray: bytes | None = None) -> None:
    """An .npz of ``seq``, ``acc0`` and ``n`` stray members (one-element arrays unless
    ``stray`` says what they hold), written quickly."""
    if stray is None:
        npy = io.BytesIO()
        np.save(npy, np.zeros(1, np.float32))
        stray = npy.getvalue()
    members = []
    for name, value in (("seq", np.arange(8, dtype=np.float32).reshape(4, 2)),
                        ("acc0", np.zeros((1, 2), np.float32))):
        b = io.BytesIO()
        np.save(b, value)
        members.append((name + ".npy", b.getvalue()))
    members += [(f"stray_{k:06d}.npy", stray) for k in range(n)]
    _stored_zip(path, members)


def _stored_zip(path, members) -> None:
    """A zip of stored members as ``zipfile`` writes one (zip64 end records past 65,535 of
    them), written directly: ``zipfile`` takes a minute for 200,000 members."""
    local, central = bytearray(), bytearray()
    for name, data in members:
        raw, crc = name.encode(), zlib.crc32(data)
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc,
                               len(data), len(data), len(raw), 0, 0, 0, 0, 0, len(local)) + raw
        local += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data),
                             len(data), len(raw), 0) + raw + data
    n, at = len(members), len(local)
    end64 = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, n, n, len(central), at)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, at + len(central), 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                      len(central), at, 0)
    with open(path, "wb") as f:
        f.write(bytes(local + central) + end64 + locator + end)


def test_an_npz_with_thousands_of_stray_members_is_one_short_line(cli, tmp_path):
    xml, _ = accumulate_loop(tmp_path / "m")
    big = tmp_path / "big.npz"
    _many_members(big)
    line = assert_refused(cli("run", xml, big), str(big), "the model does not take",
                          "stray_000000", f"... and {ON_DISK - 8} more")
    assert len(line) < 600, len(line)


def test_the_members_of_an_npz_are_matched_by_name_before_any_is_read(cli, tmp_path):
    """200,000 members the model does not take are refused from the zip's directory alone:
    none of them is decompressed or parsed (each holds bytes that are no array at all, which
    reading it would have said first; reading them all took minutes)."""
    xml, _ = accumulate_loop(tmp_path / "m")
    big = tmp_path / "big.npz"
    _many_members(big, MEMBERS, stray=b"not an array")
    line = assert_refused(cli("run", xml, big), str(big), "the model does not take",
                          "stray_000000", f"... and {MEMBERS - 8} more")
    assert len(line) < 600, len(line)


def test_an_npz_of_only_the_models_inputs_is_read_whole(cli, tmp_path):
    xml, _ = accumulate_loop(tmp_path / "m")
    npz = tmp_path / "in.npz"
    _many_members(npz, 0)
    out = cli("run", xml, npz, "-q")
    assert out.code == 0, out.err


def test_listing_and_short():
    from loopdbg.text import LINE, listing, short

    assert listing([]) == ""
    assert listing(["a", "b"]) == "a, b"
    assert listing(map(str, range(10)), limit=3) == "0, 1, 2, ... and 7 more"
    assert listing((f"'{k}'" for k in range(MEMBERS)), limit=2) == \
        f"'0', '1', ... and {MEMBERS - 2} more"
    assert short("x" * 10) == "x" * 10
    cut = short("y" * (LINE + 5000))
    assert cut.endswith("... (5000 more characters)") and len(cut) < LINE + 40


def test_the_command_line_cuts_a_long_error(capsys):
    """Any LoopdbgError, whatever it lists, reaches the terminal as one line of bounded length."""
    from types import SimpleNamespace

    from loopdbg.cli import _call
    from loopdbg.errors import LoopdbgError

    def handler(args):
        raise LoopdbgError("model.xml: " + ", ".join(f"name{k}" for k in range(MEMBERS)))

    code = _call(SimpleNamespace(handler=handler))
    captured = capsys.readouterr()
    line = assert_refused(Outcome(code, captured.out, captured.err), "model.xml: name0, name1")
    assert len(line) < 1100 and line.endswith("more characters)")
