"""Runaway loops: a cap on every face, progress on a terminal, Ctrl+C, and a memory budget.

* ``--max-iterations N`` bounds every loop execution, on every face: ``loopdbg run`` (plain,
  ``--trace``, ``--break``/``--watch``), ``loopdbg open`` (the UI's session), ``loopdbg explain``
  (its own cap), and the Python API (``Engine.run``, ``Session``, ``trace.record``).
* Without a cap, ``loopdbg run`` on an unbounded loop draws a progress line on a terminal only
  (checked in a pseudo-terminal, and its absence on a pipe); Ctrl+C typed on that terminal stops
  the run cleanly: exit 130, the state reached, the trace closed and readable.
* A scan output growing past ``--max-memory`` stops the run with one clear line.
* The UI's space-pauses-a-running-continue is tests/tui/test_app.py::test_space_pauses_a_running_
  continue; here the UI is driven once, to show that ``--max-iterations`` reaches it.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from relhelpers import assert_refused, endless_loop, subprocess_env

unix_only = pytest.mark.skipif(sys.platform == "win32", reason="pty / signals")


@pytest.fixture(scope="module")
def endless(tmp_path_factory):
    return endless_loop(tmp_path_factory.mktemp("endless"))


@pytest.fixture(scope="module")
def endless_scan(tmp_path_factory):
    return endless_loop(tmp_path_factory.mktemp("endless_scan"), scan=True, width=256)


def _nested_endless(folder: Path) -> tuple[Path, Path]:
    """A bounded outer loop (3 iterations) around an unbounded inner one."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("nested_endless")
    x0 = b.parameter("x0", "f32", [1])
    outer = b.loop("outer", trip=3)
    x = outer.merged_input(x0, "x")
    inner = outer.body.loop("inner", trip=-1)
    y = inner.merged_input(x, "y")
    y2 = inner.body.op("Add", [y, np.ones(1, np.float32)], name="y_next")
    inner.back_edge(y2, y)
    x2 = inner.output_last(y2)
    outer.back_edge(x2, x)
    b.result(outer.output_last(x2, name="x_final"))
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / "model.xml")
    np.savez(folder / "in.npz", x0=np.zeros(1, np.float32))
    return xml, folder / "in.npz"


# ---------------------------------------------------------------------------------------------
# --max-iterations on every face


def test_run_stops_at_the_cap_with_the_outputs_so_far(endless, cli):
    xml, inputs = endless
    out = cli("run", xml, inputs, "--max-iterations", 1000)
    assert out.code == 0, out.err
    assert "spin: 1000 iterations, stopped because the iteration cap (--max-iterations) was " \
           "reached" in out.out
    assert "x_final  float32 (1, 4) [1000., 1000., 1000., 1000.]" in out.out


def test_run_cap_saves_outputs(endless, cli, tmp_path):
    xml, inputs = endless
    out = cli("run", xml, inputs, "--max-iterations", 7, "-o", tmp_path / "out.npz", "-q")
    assert out.code == 0 and out.out == "" and out.err == ""
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_array_equal(z["x_final"], np.full((1, 4), 7, np.float32))


def test_run_trace_cap_is_recorded(endless, cli, tmp_path):
    xml, inputs = endless
    trace = tmp_path / "cap.ltrace"
    assert cli("run", xml, inputs, "--max-iterations", 50, "--trace", trace, "-q").code == 0
    info = cli("trace", "info", trace, "--check")
    assert info.code == 0, info.err
    assert "spin: 50 iterations, stopped because the iteration cap" in info.out
    assert "max_iterations=50" in info.out and "check: every frame's checksum holds" in info.out


@pytest.mark.parametrize("extra", [["--break", "i == 10**9"], ["--watch", "x"], ["--on-nan"]])
def test_run_with_breakpoints_stops_at_the_cap(endless, cli, extra):
    xml, inputs = endless
    out = cli("run", xml, inputs, "--max-iterations", 200, *extra)
    assert out.code == 0, out.err
    assert "spin: 200 iterations, stopped because the iteration cap" in out.out


def test_cap_applies_to_each_execution_of_a_nested_loop(tmp_path, cli):
    xml, inputs = _nested_endless(tmp_path)
    out = cli("run", xml, inputs, "--max-iterations", 5)
    assert out.code == 0, out.err
    assert "outer/inner: ran 3 times, 15 iterations in all, stopped because the iteration cap" \
        in out.out
    assert "x_final  float32 (1,) [15.]" in out.out


def test_open_hands_the_cap_to_the_ui_session(endless, cli, monkeypatch):
    """`loopdbg open MODEL --max-iterations N`: the UI's session stops there on continue."""
    from loopdbg.tui import app as tui_app

    seen = {}

    def fake_run(self, *a, **kw):
        seen["session"] = self.session
        seen["stop"] = self.session.continue_()

    monkeypatch.setattr(tui_app.LoopdbgApp, "run", fake_run)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    xml, inputs = endless
    assert cli("open", xml, inputs, "--max-iterations", 30).code == 0
    sess, stop = seen["session"], seen["stop"]
    assert sess.max_iterations == 30
    assert stop.kind == "end"
    assert [(r.path, r.iterations, r.reason) for r in stop.finished.loops] == \
        [("spin", 30, "iteration_cap")]


def test_ui_continue_ends_at_the_cap(endless):
    pytest.importorskip("textual")
    from loopdbg.debug.session import Session
    from loopdbg.tui.app import LoopdbgApp

    xml, inputs = endless

    async def drive():
        sess = Session.open(xml, inputs, max_iterations=40)
        app = LoopdbgApp(sess, title="model.xml")
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await pilot.press("c")
            deadline = time.monotonic() + 30
            while app.last_stop is None or app.last_stop.kind != "end":
                assert time.monotonic() < deadline, "continue did not end at the cap"
                await app.workers.wait_for_complete()
                await pilot.pause()
            return sess

    sess = asyncio.run(asyncio.wait_for(drive(), timeout=60))
    assert sess.finished.loops[-1].iterations == 40


def test_explain_bounds_its_own_run_and_says_so(endless, cli):
    xml, inputs = endless
    out = cli("explain", xml, inputs)
    assert out.code == 0, out.err
    assert "--max-iterations" in out.out


def test_python_api_faces(endless, tmp_path):
    from loopdbg.debug.session import Session
    from loopdbg.engine import Engine
    from loopdbg.ir.load import read_model
    from loopdbg.trace import TraceReader, record

    xml, inputs = endless
    model = read_model(xml)
    feed = {"x0": np.zeros((1, 4), np.float32)}
    final = Engine(model).run_to_end(feed, max_iterations=12)
    assert final.loops[0].iterations == 12
    stop = Session(Engine(model), feed, max_iterations=9).continue_()
    assert stop.kind == "end" and stop.finished.loops[0].iterations == 9
    record(Engine(model).run(feed, max_iterations=6), tmp_path / "t.ltrace", model=model,
           inputs=feed)
    with TraceReader(tmp_path / "t.ltrace") as t:
        assert t.loops()[0].iterations == 6 and t.loops()[0].reason == "iteration_cap"


def test_bad_caps_are_usage_errors(endless, cli):
    xml, inputs = endless
    for bad in ("0", "-3", "many"):
        out = cli("run", xml, inputs, "--max-iterations", bad)
        assert out.code == 2 and "--max-iterations" in out.err and "Traceback" not in out.err
    for bad in ("0", "-1M", "lots", "infK"):
        out = cli("run", xml, inputs, "--max-memory", bad)
        assert out.code == 2 and "--max-memory" in out.err and "Traceback" not in out.err


# ---------------------------------------------------------------------------------------------
# --max-memory


def test_a_scan_over_an_endless_loop_stops_at_the_memory_budget(endless_scan, cli):
    xml, inputs = endless_scan                  # 1 KiB per iteration
    line = assert_refused(cli("run", xml, inputs, "--max-memory", "64K"), str(xml),
                          "loop 'spin'", "concatenated outputs hold", "64.0 KiB",
                          "--max-memory")
    # each piece holds 1 KiB of data and costs 120 bytes more (engine.iteration_checks.PIECE_OVERHEAD)
    assert f"at iteration {64 * 1024 // (1024 + 120)} " in line


def test_memory_budget_with_a_trace_closes_it_with_the_error(endless_scan, cli, tmp_path):
    xml, inputs = endless_scan
    trace = tmp_path / "budget.ltrace"
    assert_refused(cli("run", xml, inputs, "--max-memory", "32K", "--trace", trace, "-q"),
                   "memory budget")
    info = cli("trace", "info", trace, "--check")
    assert info.code == 0, info.err
    assert "error" in info.out and "memory budget" in info.out


def test_memory_budget_with_a_breakpoint_session(endless_scan, cli):
    xml, inputs = endless_scan
    assert_refused(cli("run", xml, inputs, "--max-memory", "16K", "--break", "i < 0"),
                   str(xml), "memory budget")


def test_the_budget_counts_what_is_held_not_what_was_ever_held(tmp_path, cli):
    """An inner scan joined 300 times holds 40 KiB at a time: a 1 MiB budget is plenty."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("nested_scan")
    x0 = b.parameter("x0", "f32", [1, 1000])
    outer = b.loop("outer", trip=300)
    x = outer.merged_input(x0, "x")
    inner = outer.body.loop("inner", trip=10)
    y = inner.invariant_input(x, "y")
    seq = inner.output_concat(inner.body.op("Multiply", [y, np.float32(0.5)]), axis=0)
    mean = outer.body.op("ReduceMean", [seq, np.array([0], np.int64)], keep_dims=True)
    outer.back_edge(mean, x)
    b.result(outer.output_last(mean, name="x_final"))
    xml, _ = write_ir(b.build(), tmp_path / "model.xml")
    np.savez(tmp_path / "in.npz", x0=np.ones((1, 1000), np.float32))
    out = cli("run", xml, tmp_path / "in.npz", "--max-memory", "1M", "-q")
    assert out.code == 0, out.err
    assert_refused(cli("run", xml, tmp_path / "in.npz", "--max-memory", "20K"),
                   "loop 'outer/inner'", "memory budget")


def test_the_default_budget_is_a_fraction_of_ram(endless_scan, cli, monkeypatch):
    from loopdbg.cli import common

    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    budget = common.default_memory_budget()
    assert ram // 8 <= budget <= ram // 2
    # and `run` applies it when --max-memory is not given
    monkeypatch.setattr(common, "default_memory_budget", lambda: 8 * 1024)
    xml, inputs = endless_scan
    assert_refused(cli("run", xml, inputs), "memory budget of 8.0 KiB")


# ---------------------------------------------------------------------------------------------
# No cap: progress on a terminal, Ctrl+C


def run_in_pty(argv: list[str], until, timeout: float = 60.0) -> tuple[int, str]:
    """Run ``argv`` on a pseudo-terminal; type Ctrl+C once ``until(output)`` holds."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:                                          # the child: a session on the pty
        os.execvpe(argv[0], argv, subprocess_env())
    out, typed, status = b"", False, None
    deadline = time.monotonic() + timeout
    try:
        while status is None:
            if time.monotonic() > deadline:
                raise AssertionError("no exit in time; output:\n" + out.decode(errors="replace"))
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:                           # the child closed the terminal
                    pass
            if not typed and until(out):
                os.write(fd, b"\x03")                     # Ctrl+C, turned into SIGINT by the tty
                typed = True
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
        while select.select([fd], [], [], 0.2)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@unix_only
def test_ctrl_c_on_a_terminal_shows_progress_then_stops_cleanly(endless, tmp_path, cli):
    xml, inputs = endless
    trace = tmp_path / "endless.ltrace"
    code, out = run_in_pty([sys.executable, "-m", "loopdbg", "run", str(xml), str(inputs),
                            "--trace", str(trace)],
                           until=lambda o: o.count(b"Ctrl+C stops") >= 2)
    assert code == 130, out
    assert "Traceback" not in out
    assert "\r  loop spin: iteration " in out and "/s)  Ctrl+C stops" in out   # progress
    assert f"trace closed: {trace} holds what was computed" in out
    assert "state after iteration " in out and "of loop 'spin':" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("loopdbg: interrupted; the last finished iteration was "), last
    n = int(last.split("iteration was ")[1].split()[0])
    # the state printed is x after n + 1 additions of one
    assert f"x  float32 (1, 4) [{n + 1}., {n + 1}., {n + 1}., {n + 1}.]" in out
    info = cli("trace", "info", trace, "--check")
    assert info.code == 0, info.err
    assert f"spin: {n + 1} iterations, the run was interrupted (Ctrl+C)" in info.out
    shown = cli("trace", "show", trace, "-i", n, "-t", "x")
    assert shown.code == 0 and f"{n + 1}." in shown.out


@unix_only
def test_sigint_without_a_terminal_shows_no_progress(endless, tmp_path):
    xml, inputs = endless
    trace = tmp_path / "piped.ltrace"
    proc = subprocess.Popen([sys.executable, "-m", "loopdbg", "run", str(xml), str(inputs),
                             "--trace", str(trace)], env=subprocess_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (trace.exists() and trace.stat().st_size > 100_000):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        time.sleep(0.5)                                    # long enough for a progress line
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    out, err = out.decode(), err.decode()
    assert proc.returncode == 130, err
    assert "\r" not in err and "Ctrl+C stops" not in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("loopdbg: interrupted; ")
    assert "state after iteration" in out


@unix_only
def test_progress_is_not_drawn_into_a_pipe_on_a_long_bounded_run(endless):
    xml, inputs = endless
    proc = subprocess.run([sys.executable, "-m", "loopdbg", "run", str(xml), str(inputs),
                           "--max-iterations", "200000"], capture_output=True, text=True,
                          timeout=120, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and "200000 iterations" in proc.stdout


@unix_only
def test_a_first_ctrl_c_waits_for_the_event_a_second_one_does_not():
    from loopdbg.cli.cmd_run import _interrupt_between_events

    with _interrupt_between_events() as pending:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)                                   # delivered, held
        assert pending
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
