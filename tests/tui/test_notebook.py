"""A session in a notebook (``loopdbg.notebook``): its HTML holds the state of the loop at the
stop and the body as SVG with the values of that iteration, changed ones marked; a big body by
its closed groups; every name from a file escaped; ``plot`` gives a matplotlib figure; a trace's
replay shows itself the same way.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from loopdbg.notebook import Session, replay

ROOT = Path(__file__).resolve().parents[2]
WHILE = ROOT / "loopdbg" / "demos" / "while_loop"
# layout.export's thick red border of a value that changed (back edges are red but thin)
CHANGED = re.compile(r'stroke="#dc2626" stroke-width="2\.5"')

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def session(folder: Path = WHILE) -> Session:
    return Session.open(folder / "model.xml", folder / "inputs.npz")


@needs_dot
def test_before_any_iteration_the_body_is_drawn_without_values():
    s = session()
    page = s._repr_html_()
    assert page.count("<svg") == 1 and "doubling" in page
    assert not CHANGED.search(page)


@needs_dot
def test_at_a_stop_the_state_and_the_values_of_that_iteration_show():
    s = session()
    s.next()
    s.next()
    page = s._repr_html_()
    state = re.search(r"<pre>(.*?)</pre>", page, re.S).group(1)
    assert "doubling" in state and "iteration 1" in state
    assert "at iteration 1" in page                 # the drawing's title
    assert "[4.]" in page                           # x_next = 2 * 2 at iteration 1
    assert CHANGED.search(page)                     # what changed since iteration 0


@needs_dot
def test_names_from_the_file_are_escaped(tmp_path):
    xml = (WHILE / "model.xml").read_text().replace('name="doubling"', 'name="&lt;script&gt;x"')
    (tmp_path / "model.xml").write_text(xml)
    for f in ("model.bin", "inputs.npz"):
        shutil.copy(WHILE / f, tmp_path / f)
    s = session(tmp_path)
    s.next()
    page = s._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page


@needs_dot
def test_a_big_body_shows_its_groups_closed(tmp_path):
    from bigbody import decoder_model

    xml, inputs = decoder_model(tmp_path, blocks=30)
    s = Session.open(xml, inputs)
    s.next()
    page = s._repr_html_()
    assert "blocks.0" in page and "blocks.29" in page
    assert "aten::linear/MatMul" not in page         # the nodes inside stay in their groups


def test_plot_is_a_figure_of_the_iterations_held():
    pytest.importorskip("matplotlib")
    s = session()
    for _ in range(7):
        s.next()
    fig = s.plot("mean(x_next)")
    (ax,) = fig.axes
    xs, ys = ax.lines[0].get_data()
    assert list(xs) == list(range(7))
    assert np.allclose(ys, [2, 4, 8, 16, 32, 64, 128])


def test_plot_before_any_iteration_says_so():
    from loopdbg.errors import LoopdbgError

    with pytest.raises(LoopdbgError, match="no iteration has run yet"):
        session().plot("mean(x)")


@needs_dot
def test_a_replayed_trace_shows_itself(tmp_path):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.ir.load import read_model
    from loopdbg.trace.record import record

    model = read_model(WHILE / "model.xml")
    inputs = load_npz(WHILE / "inputs.npz")
    record(Engine(model).run(inputs), tmp_path / "run.ltrace", model=model, inputs=inputs)
    s = replay(tmp_path / "run.ltrace")
    s.next()
    page = s._repr_html_()
    assert "<svg" in page and "doubling" in page


@needs_dot
def test_before_any_iteration_a_nested_loop_shows_the_outermost_body():
    s = session(ROOT / "loopdbg" / "demos" / "nested_loop")
    page = s._repr_html_()
    assert "cols_loop" in page and "rows_loop" in page
    assert "Unsqueeze" in page and "Multiply" not in page     # the outer body, not the inner
