"""One budget on every face that runs model code (issue 26): the backstop of ``ops.budget`` holds
the debugger (its engine runs in a worker thread of the UI's process), ``graph --iteration``
and the default budget as it holds ``run --max-memory``.

Each case runs in a child process (the cap is process-wide); the model's body holds a MatMul
whose output is the outer product of two (20000, 2) x (2, 20000) operands, 1.5 GiB, which no
size rule foresees: before, the debugger, ``graph --iteration`` and a run at the default budget
went on to allocate it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from relhelpers import subprocess_env
from test_memory_backstop import ALLOWED
from test_memory_budget import assert_stopped, run_measured, save

from loopdbg.builder import GraphBuilder

N = 20_000

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the data-size cap is Linux's RLIMIT_DATA")


def outer_product_loop(folder):
    """A loop of 2 iterations whose body multiplies x (N, 2) by y (2, N): layer 'outer_mm'."""
    b = GraphBuilder("outer_loop")
    x0 = b.parameter("x0", "f32", [N, 2])
    y0 = b.parameter("y0", "f32", [2, N])
    loop = b.loop("grow", trip=2)
    x = loop.invariant_input(x0, "x")
    y = loop.invariant_input(y0, "y")
    product = loop.body.op("MatMul", [x, y], name="outer_mm")
    b.result(loop.output_last(product, name="p"))
    return save(b, folder, x0=np.ones((N, 2), np.float32), y0=np.ones((2, N), np.float32))


# The debugger as `loopdbg open MODEL INPUTS --max-memory 64M` makes it (the command's own
# backstop, cli.backstop_for), driven by Textual's pilot; what reached the app is printed as JSON.
_DEBUGGER = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from screen import screen_text, settle
from loopdbg.cli import backstop_for, build_parser
from loopdbg.debug.session import Session
from loopdbg.tui.app import LoopdbgApp

args = build_parser().parse_args(["open", sys.argv[2], sys.argv[3], "--max-memory", "64M"])

async def drive():
    seen = {}
    with backstop_for(args):
        session = Session.open(args.model, args.inputs, max_memory=args.max_memory)
        app = LoopdbgApp(session, title="model.xml")
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot, 60)
            stop = app.last_stop
            seen["kind"], seen["reason"] = stop.kind, stop.reason
            seen["screen"] = " ".join(screen_text(app))
            await pilot.press("?")                  # the help screen: the UI still answers keys
            await pilot.pause()
            seen["help"] = app.screen.has_class("show-help")
        session.close()
    print(json.dumps(seen))

asyncio.run(drive())
"""


def test_the_debugger_stops_a_kernel_past_the_budget_and_keeps_answering(tmp_path):
    pytest.importorskip("textual")
    from relhelpers import ROOT

    xml, inputs = outer_product_loop(tmp_path)
    p = subprocess.run([sys.executable, "-c", _DEBUGGER, str(ROOT / "tests" / "tui"), str(xml),
                        str(inputs)], capture_output=True, text=True, timeout=180,
                       env=subprocess_env())
    assert p.returncode == 0, p.stderr[-3000:]
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert seen["kind"] == "error", seen
    for fragment in ("'outer_mm' (MatMul)", "out of memory", "64.0 MiB (--max-memory)"):
        assert fragment in seen["reason"], seen["reason"]
    for fragment in ("error: loop 'grow'", "'outer_mm' (MatMul) failed", "64.0 MiB (--max-memory)"):
        assert fragment in seen["screen"], seen["screen"]      # the state panel, as drawn
    assert seen["help"]


def test_graph_iteration_refuses_a_kernel_past_the_budget(tmp_path):
    xml, inputs = outer_product_loop(tmp_path)
    code, err, peak = run_measured("graph", xml, inputs, "--iteration", "0", "--max-memory",
                                   "64M", "-o", tmp_path / "body.dot")
    assert_stopped(code, err, peak, "'outer_mm' (MatMul)", "out of memory",
                   "64.0 MiB (--max-memory)")
    assert len([line for line in err.splitlines() if line.startswith("loopdbg:")]) == 1, err
    assert peak < ALLOWED, f"peak RSS {peak >> 20} MiB"
    assert not (tmp_path / "body.dot").exists()


def test_graph_max_memory_needs_iteration(tmp_path):
    xml, _ = outer_product_loop(tmp_path)
    code, err, _ = run_measured("graph", xml, "--max-memory", "64M", "-o", tmp_path / "b.dot")
    assert code != 0 and "give --iteration K" in err, err


# `loopdbg run` with no --max-memory, the default budget made small.
_DEFAULT = """
import sys
from loopdbg.cli import common, main
common.default_memory_budget = lambda: 64 << 20
code = main(sys.argv[1:])
with open("/proc/self/status") as f:
    peak = [line.split()[1] for line in f if line.startswith("VmHWM:")][0]
sys.stderr.write("\\npeak-rss-kib %s\\n" % peak)
sys.exit(code)
"""


def test_the_default_budget_is_held_by_the_backstop(tmp_path):
    xml, inputs = outer_product_loop(tmp_path)
    p = subprocess.run([sys.executable, "-c", _DEFAULT, "run", str(xml), str(inputs), "-q",
                        "-o", str(tmp_path / "out.npz")], capture_output=True, text=True,
                       timeout=120, env=subprocess_env())
    lines = p.stderr.splitlines()
    peak = int(lines[-1].split()[1]) * 1024
    err = "\n".join(line for line in lines[:-1] if line.strip())
    assert_stopped(p.returncode, err, peak, "'outer_mm' (MatMul)", "out of memory",
                   "64.0 MiB")
    assert peak < ALLOWED, f"peak RSS {peak >> 20} MiB"
    assert not (tmp_path / "out.npz").exists()


def test_a_traces_replay_recomputes_under_the_budget(tmp_path):
    """A trace of a body whose only recorded value is a sum (the (8000, 8000) product it sums is
    not kept): graph's replay recomputes the product, past --max-memory, and says so."""
    n = 8_000
    b = GraphBuilder("summed_outer")
    x0 = b.parameter("x0", "f32", [n, 2])
    y0 = b.parameter("y0", "f32", [2, n])
    loop = b.loop("grow", trip=2)
    product = loop.body.op("MatMul", [loop.invariant_input(x0, "x"),
                                      loop.invariant_input(y0, "y")], name="outer_mm")
    total = loop.body.op("ReduceSum", [product, loop.body.const(None, np.array([0, 1]))],
                         name="total")
    b.result(loop.output_last(total, name="s"))
    xml, inputs = save(b, tmp_path, x0=np.ones((n, 2), np.float32),
                       y0=np.ones((2, n), np.float32))
    trace = tmp_path / "run.ltrace"
    code, err, _ = run_measured("run", xml, inputs, "-q", "--trace", trace)
    assert code == 0, err
    code, err, peak = run_measured("graph", trace, "--iteration", "0", "--max-memory", "16M",
                                   "-o", tmp_path / "body.dot")
    assert_stopped(code, err, peak, "replaying loop 'grow', iteration 0",
                   "'outer_mm' (MatMul) failed: out of memory", "16.0 MiB (--max-memory)")
    assert not (tmp_path / "body.dot").exists()
