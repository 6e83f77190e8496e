"""For every test: the user's state directory (saved breakpoints) is a fresh temporary one, so no
test reads or writes the real ~/.local/state, and compiled code is kept in the session's temporary
directory, not in ~/.cache. Tests marked ``soak`` (minutes each) run only with
``LOOPDBG_SOAK=1``. What is costly to build and the same on every run (the onnx package's node
test cases) is kept in pytest's cache directory."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

import rewrite_cache


_CODE_CACHE: list[str] = []


def pytest_configure(config):
    # compiled generated code (engine/codecache.py): kept in a directory of this test session,
    # not in ~/.cache, from the first Engine on (session fixtures too); xdist's workers inherit it
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _CODE_CACHE.append(tempfile.mkdtemp(prefix="loopdbg-code-"))
        os.environ["LOOPDBG_CODE_CACHE"] = _CODE_CACHE[-1]
    # what tests build once and keep between runs and xdist workers (tests/unit/_onnx_cases.py)
    cache = getattr(config, "cache", None)
    if cache is not None:
        os.environ.setdefault("LOOPDBG_TEST_CACHE", str(cache.mkdir("loopdbg")))
    # test modules are rewritten (asserts) once and kept, not again in every process
    rewrite_cache.install(config, os.environ.get("LOOPDBG_TEST_CACHE") or
                          os.environ.get("LOOPDBG_CODE_CACHE"))
    _import_hypothesis_as_it_is(config)
    _collect_less_often()
    _interruptible()


def _interruptible() -> None:
    """Ctrl-C as Python sets it, in the test processes and so in the programs they start. A
    suite started where SIGINT is ignored (a background job of a non-interactive shell, nohup)
    inherits the ignoring: Python then installs no KeyboardInterrupt handler, loopdbg rightly
    leaves an ignored SIGINT ignored, and the tests of what Ctrl-C does waited out their timeouts
    (five tests, 60 s of a worker each). A handler does not survive ``exec``: the children start
    with SIGINT at its default, and Python installs its own."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _collect_less_often() -> None:
    """The cyclic collector of a test process starts a young pass every 10,000 allocations, not
    700: a UI test's app makes millions of short-lived objects, and with the default each was
    promoted often enough for ~30 full passes over everything alive per minute of UI tests (a
    worker spent ~15 s of the suite in them, an eighth of a UI test's time). Objects are freed as
    before, by their counts or the next pass; a worker holds some tens of MB more at its peak.
    The programs the tests start (``python -m loopdbg``, the oracles) keep Python's default."""
    import gc

    gc.set_threshold(10_000, 10, 10)


def _import_hypothesis_as_it_is(config) -> None:
    """Import hypothesis without pytest's assertion rewriting. hypothesis ships a pytest plugin,
    so pytest rewrites the asserts of its whole package (~70 modules) in every process that
    imports it: each xdist worker (the fuzz test modules import it) and the controller (its
    plugin's summary). Without a place to keep rewritten modules (PYTHONDONTWRITEBYTECODE=1)
    that was 1.5-2 s of CPU each, on every run; its own asserts never were our tests'."""
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    if hook is None or hook not in sys.meta_path or "hypothesis" in sys.modules:
        return
    sys.meta_path.remove(hook)
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.meta_path.insert(0, hook)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The session's folder of compiled code goes. And an xdist worker that has sent the
    controller everything (``workerfinished``, at its session's end) keeps what it holds out of
    the collector's last passes: pytest's cleanup then collects five times over (to surface
    unraisable exceptions, which could no longer reach the controller) and the interpreter's exit
    once more, each walking the ~600 MB a worker holds after thousands of tests: seconds at the
    end of the run, while the controller waits for the last worker. Atexit handlers, flushing and
    teardown happen as ever, as in ``loopdbg``'s own ending (loopdbg/cli ``_ending``)."""
    while _CODE_CACHE:
        shutil.rmtree(_CODE_CACHE.pop(), ignore_errors=True)
    if hasattr(config, "workerinput") and "exitstatus" in getattr(config, "workeroutput", {}):
        import gc

        gc.freeze()


def pytest_collection_modifyitems(config, items):
    # the tests marked long first (in their order): a parallel run (xdist hands tests out in this
    # order, groups first) then ends on short ones, instead of one worker waiting for another's
    # long test at the end
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
    if os.environ.get("LOOPDBG_SOAK") == "1":
        return
    skip = pytest.mark.skip(reason="opt-in soak: set LOOPDBG_SOAK=1")
    for item in items:
        if item.get_closest_marker("soak"):
            item.add_marker(skip)


def pytest_collection_finish(session):
    """What collection made lives as long as the session (the test modules and all they import,
    thousands of items): it is left out of the cyclic collector's passes for good (``gc.freeze``,
    as loopdbg's own commands do with what lives as long as they: loopdbg/cli/common.py), so
    the full passes that come every so often in a long run (a dozen in a worker's minute of
    tests) walk what the tests made, not all of it again: a third less time in them."""
    import gc

    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (the README's command): one worker more than the cores this process may use.
    The terminal UI's pilot tests (a third of the suite's time) spend about 40% of it waiting
    for the app to be idle, and a worker that waits leaves its core unused; a third worker on
    two cores fills those waits (the suite's CPU is the same: 4 min 50 s -> 4 min 16 s of wall
    time on the 2-core machine). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return auto_workers()


def auto_workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:      # (no affinity on this platform)
        cores = os.cpu_count() or 1
    return cores + 1


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (pyproject.toml's addopts) as pytest-xdist schedules it, without its
    cost quadratic in the tests: each test not in a group is a unit of work of its own, and
    xdist counts a worker's pending tests over every unit it ever gave that worker, on each
    report (~12 million steps for the suite's ~6,800 tests: 5 s of CPU in the controller, which
    competes with the two workers for two cores). Here a unit whose tests have all reported is
    forgotten; what is pending, and so what is scheduled, is the same."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class _LoadGroup(LoadGroupScheduling):
        def mark_test_complete(self, node, item_index, duration=0):
            try:                        # (a pytest-xdist laid out otherwise: its own way)
                nodeid = self.registered_collections[node][item_index]
                work, scope = self.assigned_work[node], self._split_scope(nodeid)
                unit = work[scope]
            except (AttributeError, KeyError, IndexError, TypeError):
                return super().mark_test_complete(node, item_index, duration)
            unit[nodeid] = True
            if all(unit.values()):
                del work[scope]
            self._reschedule(node)
            return None

    return _LoadGroup(config, log)


def _fresh_dir(tmp_path_factory, name: str) -> Path:
    """A new folder under the session's base temporary folder, named after ``name``. pytest's own
    numbered folders (``tmp_path``, ``mktemp``) scan every folder made before for the next number,
    so a run of thousands of tests spent minutes of CPU on it (time quadratic in the tests)."""
    name = re.sub(r"\W", "_", name)[:30]
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp_path_factory.getbasetemp()))


@pytest.fixture
def tmp_path(request, tmp_path_factory) -> Path:
    """A temporary folder unique to the test, as pytest's ``tmp_path`` (kept as pytest keeps its
    own), made in constant time (``_fresh_dir``)."""
    return _fresh_dir(tmp_path_factory, request.node.name)


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(_fresh_dir(tmp_path_factory, "state")))


@pytest.fixture
def cli_main(capsys):
    """``cli_main(*argv)``: loopdbg's command line (``main``) in the test's process, as a
    ``CompletedProcess``: its exit code (an argparse usage error's too), stdout and stderr. A
    ``python -m loopdbg`` of its own costs ~0.4 s of CPU, importing numpy and loopdbg again; a
    test of what only a process shows (a signal, the interpreter's exit, a folder's modules, a
    fresh venv) starts one."""
    import subprocess

    from loopdbg.cli import main

    def call(*argv) -> subprocess.CompletedProcess:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, out, err)
    return call

