"""Fixtures of the reliability tests: the CLI run in-process and a hang guard (helpers and
small models are in relhelpers.py)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from relhelpers import Outcome  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "no_alarm: the test bounds its own time (long fuzz runs)")


@pytest.fixture(autouse=True)
def no_hang(request):
    """Fail (instead of hanging CI) when one test takes more than 120 s (Unix only).

    Fuzz tests, whose length grows with the number of examples asked for, are marked
    ``no_alarm`` and bound each example instead.
    """
    if not hasattr(signal, "SIGALRM") or request.node.get_closest_marker("no_alarm"):
        yield
        return

    def _hung(signum, frame):
        raise TimeoutError("the test hung: more than 120 s")

    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(120)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


_PARSER = []


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli("run", model, inputs)``: loopdbg's main() in-process, with its exit code and output.

    The argument parser is built once per session (building it is most of the cost of a call).
    """
    import loopdbg.cli
    from loopdbg.cli import main

    if not _PARSER:
        _PARSER.append(loopdbg.cli.build_parser())
    monkeypatch.setattr(loopdbg.cli, "build_parser", lambda *commands: _PARSER[0])

    def call(*argv) -> Outcome:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:              # argparse errors
            code = exc.code
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return call
