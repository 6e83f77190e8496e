"""An error about a file with 200,000 members stays one short line (issue 26, item 8).

Messages that list what a file holds (the inputs an .npz has that the model does not take, the
inputs the model expects, the loops of a model or a trace, the names in a body) list a few, then
"... and N more"; and the command line cuts any error past ``loopdbg.text.LINE`` characters, the
last defence for a list nobody thought of.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np

from relhelpers import Outcome, accumulate_loop, assert_refused

MEMBERS = 200_000
ON_DISK = 5_000     # members of the .npz written and read end to end (reading 200,000 takes
                    # minutes: every member is read before the inputs are matched)


def _many_members(path, n: int = ON_DISK) -> None:
    """An .npz of ``seq``, ``acc0`` and ``n`` stray one-element arrays, written quickly."""
    npy = io.BytesIO()
    np.save(npy, np.zeros(1, np.float32))
    stray = npy.getvalue()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, value in (("seq", np.arange(8, dtype=np.float32).reshape(4, 2)),
                            ("acc0", np.zeros((1, 2), np.float32))):
            b = io.BytesIO()
            np.save(b, value)
            zf.writestr(name + ".npy", b.getvalue())
        for k in range(n):
            zf.writestr(f"stray_{k:06d}.npy", stray)


def test_an_npz_with_thousands_of_stray_members_is_one_short_line(cli, tmp_path):
    xml, _ = accumulate_loop(tmp_path / "m")
    big = tmp_path / "big.npz"
    _many_members(big)
    line = assert_refused(cli("run", xml, big), str(big), "the model does not take",
                          "stray_000000", f"... and {ON_DISK - 8} more")
    assert len(line) < 600, len(line)


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
