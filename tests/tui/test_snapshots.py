"""SVG snapshots of the main screens (pytest-textual-snapshot).

Regenerate after an intended UI change with ``pytest tests/tui/test_snapshots.py --snapshot-update``
and look at the SVGs in ``tests/tui/__snapshots__/test_snapshots/`` (or the HTML report pytest
writes on a mismatch) before committing them.

Deterministic by construction: fixed inputs from each model's inputs.npz, no clock in the header,
and every key is pressed in ``run_before`` followed by a wait for the engine worker, so the
screenshot never catches a half-finished command. Body graphs are laid out from canned answers of
Graphviz (``canned_dot.py``), so another version of ``dot`` changes no snapshot;
``test_real_dot_still_lays_out`` checks the real one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from canned_dot import canned_run_dot  # noqa: E402
from screen import settle  # noqa: E402

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.layout import dot  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.widgets.plot import PlotPanel  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
SIZE = (160, 48)


@pytest.fixture(autouse=True)
def canned_layouts(monkeypatch):
    """Every snapshot's body graph laid out from canned_dot.json, not by the installed dot."""
    dot.clear_cache()
    monkeypatch.setattr(dot, "_run_dot", canned_run_dot(dot._run_dot))
    yield
    dot.clear_cache()


def test_real_dot_still_lays_out():
    """The installed ``dot`` still lays out the bodies the snapshots draw: the same boxes and
    edges as the canned answer (their columns may differ between Graphviz versions)."""
    from loopdbg.engine.runner import Engine
    from loopdbg.ir.load import read_model
    from loopdbg.layout import layout_body, render_text

    real = dot._run_dot.__wrapped__
    if not dot.dot_available():
        pytest.skip("Graphviz's dot is not installed")
    for case in ("loop_while_iter", "ti_lstm_forward"):
        for spec in Engine(read_model(TESTS / "corpus" / case / "model.xml")).loops.values():
            canned = layout_body(spec)
            dot.clear_cache()
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(dot, "_run_dot", real)
                drawn = layout_body(spec)
            dot.clear_cache()
            assert sorted(b.id for b in drawn.boxes) == sorted(b.id for b in canned.boxes)
            assert len(drawn.edges) == len(canned.edges)
            assert render_text(drawn).count("\n") > 3


def make_app(case: str, breakpoints=(), **options) -> LoopdbgApp:
    base = TESTS / "corpus" / case
    if not base.is_dir():
        base = TESTS / "data" / case
    if not (base / "model.xml").exists():
        pytest.skip(f"{case}: no model")
    session = Session.open(base / "model.xml", base / "inputs.npz", **options)
    for text in breakpoints:
        session.breakpoints.add(text)
    app = LoopdbgApp(session, title=f"{case}/model.xml")
    app.NOTIFICATION_TIMEOUT = 600     # a toast must not expire on a slow machine before the shot
    return app


def keys(*pressed: str, tab: str | None = None):
    """A run_before that waits for the autostart step, presses each key waiting for its command,
    and optionally shows one tab of the bottom panel."""
    async def run_before(pilot) -> None:
        app = pilot.app

        await settle(pilot)
        for key in pressed:
            await pilot.press(key)
            await settle(pilot)
        if tab is not None:
            app.query_one("#tabs").active = tab
            await pilot.pause()
    return run_before


def test_first_screen_loop_while_iter(snap_compare):
    """The first stop (iteration 0) of a do-while Loop: graph, state, pseudo-code, back edges."""
    assert snap_compare(make_app("loop_while_iter"), terminal_size=SIZE, run_before=keys())


def test_breakpoint_hit(snap_compare):
    """`c` with the breakpoint `i == 3`: the breakpoint stop, its notification, the table."""
    app = make_app("loop_while_iter", breakpoints=["i == 3"])
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("c", tab="tab-bp"))


def test_node_step(snap_compare):
    """`n` then `s s`: node by node through iteration 2, the node just run highlighted."""
    app = make_app("loop_while_iter")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("n", "s", "s"))


def test_ti_lstm_scan_outputs(snap_compare):
    """A TensorIterator with an LSTMCell body after `n n`, on the scan-outputs tab (heat map)."""
    app = make_app("ti_lstm_forward")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("n", "n", tab="tab-scan"))


def test_error_stop(snap_compare):
    """A body kernel failing at iteration 2 is shown as an error stop."""
    app = make_app("failing_loop")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("c"))


def test_help_screen(snap_compare):
    app = make_app("loop_while_iter")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("question_mark"))


def test_small_terminal_80x24(snap_compare):
    """The narrow layout at 80x24 after `n`."""
    app = make_app("loop_while_iter")
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys("n"))


def test_wide_terminal_200x60_boxes_fill_the_pane(snap_compare):
    """At 200x60 the boxes widen to hold their values (issue 18, item 2)."""
    app = make_app("ti_lstm_forward")
    assert snap_compare(app, terminal_size=(200, 60), run_before=keys("n"))


def test_zero_iterations(snap_compare):
    """A loop that runs no iteration: its code, the notice and the reason (issue 18, item 6)."""
    app = make_app("loop_zero_iter_cond_false")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys())


def test_graph_maximised_at_80x24(snap_compare):
    """z at 80x24: the graph takes the screen (issue 18, item 3)."""
    app = make_app("loop_while_iter")
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys("n", "z"))


def test_timeline_tab(snap_compare):
    """`t` after a few iterations and a breakpoint hit: the strip with its markers."""
    app = make_app("loop_while_iter")
    app.session.breakpoints.add("i == 1")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("c", "n", "n", "t"))


def test_outputs_tab(snap_compare):
    """The loop's outputs so far, after two iterations."""
    app = make_app("loop_while_iter")

    async def run_before(pilot):
        await keys("n", "n")(pilot)
        app.query_one("#tabs").active = "tab-outputs"
        await pilot.pause(0.2)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_plot_tab(snap_compare):
    """An expression plotted over the iterations at the end of the run."""
    app = make_app("loop_while_iter")

    async def run_before(pilot):
        await keys("c")(pilot)
        app.panel_of(PlotPanel).set_expressions(["body_count", "mean(body_x)"])
        app.query_one("#tabs").active = "tab-plot"
        await pilot.pause(0.2)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
