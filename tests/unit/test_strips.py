"""The timeline's strips (loopdbg.debug.strips): markers per iteration, binning of long loops,
the loops around the current one, and the first NaN/Inf."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from loopdbg.builder import GraphBuilder
from loopdbg.debug import Session
from loopdbg.debug import strips
from loopdbg.engine import Engine

ROOT = Path(__file__).resolve().parents[2]


def demo(name: str, **kw) -> Session:
    base = ROOT / "loopdbg" / "demos" / name
    return Session.open(base / "model.xml", base / "inputs.npz", **kw)


def test_the_current_loop_and_the_loops_around_it_outermost_first():
    s = demo("nested_loop")
    s.jump("cols_loop 1 2")
    outer, inner = strips.strips(s, s.current, 40)
    assert (outer.path, outer.current, outer.outer) == ("rows_loop", 1, ())
    assert (inner.path, inner.outer, inner.current) == ("rows_loop/cols_loop", (1,), 2)
    assert inner.cells == (strips.HELD, strips.HELD, strips.CURRENT)
    assert outer.cells[0] == strips.HELD and outer.cells[1] == strips.CURRENT


def test_a_finished_execution_marks_its_last_iteration():
    s = demo("nested_loop")
    s.jump("cols_loop 0 -1")
    s.jump("cols_loop 0 1")
    inner = strips.strips(s, s.current, 40)[-1]
    assert inner.ended and inner.count == 4
    assert inner.cells == (strips.HELD, strips.CURRENT, strips.HELD, strips.END)


def test_breakpoint_hits_are_marked():
    s = demo("while_loop")
    s.breakpoints.add("i == 2")
    s.continue_()
    s.jump("4")
    (strip,) = strips.strips(s, s.current, 40)
    assert strip.cells[2] == strips.HIT and strip.cells[4] == strips.CURRENT


def test_a_long_loop_is_binned_to_the_width_and_old_iterations_show_as_gone():
    b = GraphBuilder("long")
    x0 = b.parameter("x0", "f32", [1])
    loop = b.loop("spin", trip=10_000)
    x = loop.merged_input(x0, "x")
    x2 = loop.body.op("Add", [x, np.ones(1, np.float32)], name="x_next")
    loop.back_edge(x2, x)
    b.result(loop.output_last(x2, name="x_final"))
    s = Session(Engine(b.build()), {"x0": np.zeros(1, np.float32)}, history=100)
    s.jump("-1")
    (strip,) = strips.strips(s, s.current, 50)
    assert strip.per_cell == 200 and len(strip.cells) == 50
    assert strip.cells[0] == strips.GONE and strip.cells[-1] == strips.CURRENT


def test_the_first_nan_is_found_and_marked():
    b = GraphBuilder("nan")
    x0 = b.parameter("x0", "f32", [1])
    loop = b.loop("grow", trip=8)
    x = loop.merged_input(x0, "x")
    x2 = loop.body.op("Multiply", [x, np.float32(1e30)], name="x_next")   # inf at 2, then
    loop.back_edge(x2, x)
    b.result(loop.output_last(x2, name="x_final"))
    s = Session(Engine(b.build()), {"x0": np.ones(1, np.float32)})
    s.jump("-1")
    (strip,) = strips.strips(s, s.current, 40)
    assert strip.first_nan == 1 and strip.cells[1] == strips.NAN
