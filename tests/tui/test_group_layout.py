"""Issue 28, item 3: a big body laid out group by group. The closed top level is one `dot` call;
an open group is laid out alone (cached by itself and what is open inside it) and drawn in a
frame in place of its box; no `dot` call sees more than a few hundred boxes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from loopdbg.engine import Engine
from loopdbg.ir.load import read_model
from loopdbg.layout import clear_cache, dot, dot_available, layout_body, render_text
from loopdbg.layout.compound import OpenGroups
from loopdbg.layout.grouped import grouped_body

sys.path.insert(0, str(Path(__file__).parent))
from bigbody import decoder_model  # noqa: E402

pytestmark = pytest.mark.skipif(not dot_available(), reason="Graphviz 'dot' is not installed")


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    xml, npz = decoder_model(tmp_path_factory.mktemp("decoder"), blocks=30)
    return next(iter(Engine(read_model(xml)).loops.values())), (xml, npz)


@pytest.fixture
def dot_calls(monkeypatch):
    """The DOT sources given to Graphviz from now on (the caches emptied first)."""
    clear_cache()
    calls: list[str] = []
    run = dot._run_dot

    def counted(source):
        calls.append(source)
        return run(source)

    monkeypatch.setattr(dot, "_run_dot", counted)
    yield calls
    clear_cache()


def _boxes(source: str) -> int:
    """How many boxes a DOT source declares (named by their place: ``n0``, ``n1``, ...)."""
    return len(re.findall(r'^  n\d+ \[width', source, re.M))


def test_opening_a_group_lays_out_that_group_and_the_top_level_each_alone(decoder, dot_calls):
    spec, _ = decoder
    gb = grouped_body(spec)
    top = layout_body(OpenGroups(gb, frozenset()))
    assert len(dot_calls) == 1 and _boxes(dot_calls[0]) == len(gb.level(()).nodes) < 40
    b4 = ("blocks.4",)
    opened = layout_body(OpenGroups(gb, frozenset({b4})))
    assert len(dot_calls) == 3                    # blocks.4 alone, then the top level around it
    assert _boxes(dot_calls[1]) == len(gb.level(b4).nodes) < len(gb.groups[b4].all_nodes()) + 4
    assert _boxes(dot_calls[2]) == len(gb.level(()).nodes)    # blocks.4 is one box there
    # closed and opened again: nothing laid out; the same picture
    assert layout_body(OpenGroups(gb, frozenset())) is top
    assert layout_body(OpenGroups(gb, frozenset({b4}))) is opened and len(dot_calls) == 3
    # a second block: laid out as blocks.4 was (the same shape: dot is not asked again), its
    # own nodes in its frame; only the top level around the two frames is new
    b9 = ("blocks.9",)
    both = layout_body(OpenGroups(gb, frozenset({b4, b9})))
    assert len(dot_calls) == 4 and _boxes(dot_calls[3]) == len(gb.level(()).nodes)
    shown = {b.id for b in both.boxes}
    assert shown >= {n.id for n in gb.level(b9).nodes if n.id >= 0} and \
        shown >= {n.id for n in gb.level(b4).nodes if n.id >= 0}
    # opening fc1 inside blocks.4: fc1, blocks.4 around it, the top level; never all at once
    layout_body(OpenGroups(gb, frozenset({b4, b4 + ("fc1",)})))
    assert len(dot_calls) == 7
    assert all(_boxes(s) < 60 for s in dot_calls)


def test_an_open_group_is_a_frame_around_its_picture_and_edges_cross_its_border(decoder):
    spec, _ = decoder
    gb = grouped_body(spec)
    layout = layout_body(OpenGroups(gb, frozenset({("blocks.4",)})))
    frame = layout.box(gb.ids[("blocks.4",)])
    assert frame.kind == "frame" and frame in layout.frames and frame not in layout.boxes
    assert frame.title.startswith("▾ blocks.4 · ")
    inner = [b for b in layout.boxes if frame.contains(b.x, b.y)]
    names = {b.name for b in inner}
    assert "aten::relu/Relu_9" in names and "blocks.4/fc1" in names     # its node, its group
    assert {b.kind for b in inner} >= {"in", "out"}                   # its stubs for the outside
    assert all(frame.contains(b.right, b.bottom) for b in inner)
    outside = [b for b in layout.boxes if not frame.contains(b.x, b.y)]
    assert any(b.name == "blocks.3" for b in outside)
    # the residual stream comes in through the top of the frame and leaves through its bottom
    into = [e for e in layout.edges if e.dst == frame.id]
    out_of = [e for e in layout.edges if e.src == frame.id]
    assert into and all(e.arrow[1] == frame.y - 1 for e in into)
    assert out_of and all(e.points[0][1] == frame.bottom + 1 for e in out_of)
    stub_in = next(b for b in inner if b.kind == "in")
    assert "aten::add/Add_3" in stub_in.lines[0]                    # what it reads from outside
    assert any(e.src == stub_in.id for e in layout.edges)           # ... and who reads it
    text = render_text(layout).splitlines()
    assert "▾ blocks.4" in text[frame.y] and text[frame.y][frame.x] == "┏"
    assert "▸ fc1" in "\n".join(text) and "blocks.4/fc1" not in "\n".join(text)
    assert text[frame.bottom][frame.x] == "┗" and "┯" in text[frame.bottom]
    assert text[into[0].arrow[1]][into[0].arrow[0]] == "▼"
    assert render_text(layout, ascii=True).isascii()


def test_a_picture_of_more_boxes_than_dot_is_given_is_a_list(decoder, dot_calls, monkeypatch):
    """Past MAX_DOT boxes a piece is never given to `dot`: its boxes stand in one column in body
    order, an edge drawn where one box feeds the next; every box is there to reach."""
    spec, _ = decoder
    gb = grouped_body(spec)
    monkeypatch.setattr(dot, "MAX_DOT", 20)
    level = gb.level(())
    assert len(level.nodes) > 20
    layout = layout_body(OpenGroups(gb, frozenset()))
    assert dot_calls == []
    assert {b.id for b in layout.boxes} == {n.id for n in level.nodes}
    centres = {b.x + b.w // 2 for b in layout.boxes}
    assert len(centres) == 1                                          # one column
    ys = [layout.box(n.id).y for n in level.nodes]
    assert ys == sorted(ys)                                           # in body order
    order = [n.id for n in level.nodes]
    assert all(order.index(e.dst) == order.index(e.src) + 1 for e in layout.edges if not e.back)
    # a group inside, opened: laid out by dot (it is small), put in the list's frame
    b4 = ("blocks.4",)
    inside = layout_body(OpenGroups(gb, frozenset({b4})))
    assert len(dot_calls) == 1 and inside.box(gb.ids[b4]).kind == "frame"


def test_the_flat_picture_of_a_body_too_big_for_dot_is_a_list(dot_calls, monkeypatch):
    root = Path(__file__).resolve().parents[2]
    spec = next(iter(Engine(read_model(root / "loopdbg" / "demos" / "nested_loop" / "model.xml"))
                     .loops.values()))
    monkeypatch.setattr(dot, "MAX_DOT", 3)
    layout = layout_body(spec)
    assert dot_calls == [] and len({b.x + b.w // 2 for b in layout.boxes}) == 1


# -- in the debugger ------------------------------------------------------------------------------
async def test_a_group_opens_in_a_frame_and_keys_go_on_while_it_is_laid_out(decoder, monkeypatch):
    """Enter on a group: the picture before it stays (its title says laying out) while `dot`
    runs off the UI thread, and a key pressed meanwhile is served; then the group's frame is on
    the screen, the cursor inside it."""
    import threading

    pytest.importorskip("textual")
    from test_keyboard import settle

    from loopdbg.debug.session import Session
    from loopdbg.tui.app import LoopdbgApp
    from loopdbg.tui.widgets.graph import GraphView

    spec, files = decoder
    app = LoopdbgApp(Session.open(*files), title="m")
    release = threading.Event()
    run = dot._run_dot

    def held(source):                     # a slow layout, until the test lets it go
        release.wait(20)
        return run(source)

    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        graph = app.query_one(GraphView)
        gb = grouped_body(graph._spec)
        graph.focus()
        monkeypatch.setattr(dot, "_run_dot", held)
        graph.select(gb.ids[("blocks.2",)])       # what Enter shows is laid out ahead (held)
        await pilot.pause()
        assert graph.laying_out and "laying out" not in str(graph.border_title)
        before = app.last_stop
        await pilot.press("enter")
        await pilot.pause()
        assert graph.laying_out and "laying out" in str(graph.border_title)
        assert "▸ blocks.2 " in "\n".join(graph._lines)          # the picture before it
        await pilot.press("n")                                     # served meanwhile
        for _ in range(500):
            await pilot.pause(0.01)
            if app.last_stop is not before and not app.busy:
                break
        assert app.last_stop is not before and graph.laying_out
        release.set()
        await settle(pilot)
        frame = graph._layout.box(gb.ids[("blocks.2",)])
        assert frame.kind == "frame"
        row = graph._lines[frame.y]
        assert "▾ blocks.2 · " in row and "┏" in row
        assert graph._styles[frame.y][row.index("┏")] == "frame"
        assert frame.contains(*(lambda b: (b.x, b.y))(graph._layout.box(graph.selected)))


def test_the_boxes_a_picture_shows_are_counted_from_the_groups_pictures(decoder):
    spec, _ = decoder
    gb = grouped_body(spec)
    for opened in (set(), {("blocks.4",)}, {("blocks.4",), ("blocks.4", "fc1")},
                   {("blocks.4", "fc1")}, {("blocks.4",), ("blocks.9",), ("head",)}):
        assert gb.box_count(opened) == len(gb.view(opened).nodes), opened


async def test_the_group_under_the_cursor_is_laid_out_before_enter_opens_it(decoder, monkeypatch):
    pytest.importorskip("textual")
    from test_keyboard import settle

    from loopdbg.debug.session import Session
    from loopdbg.tui.app import LoopdbgApp
    from loopdbg.tui.widgets.graph import GraphView

    spec, files = decoder
    app = LoopdbgApp(Session.open(*files), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        graph = app.query_one(GraphView)
        gb = grouped_body(graph._spec)
        graph.focus()
        graph.select(gb.ids[("blocks.5",)])
        await settle(pilot)                          # resting on it: laid out meanwhile

        import threading

        release, run = threading.Event(), dot._run_dot

        def held(source):                            # dot from now on waits for the test
            release.wait(20)
            return run(source)

        monkeypatch.setattr(dot, "_run_dot", held)
        await pilot.press("enter")
        await pilot.pause()
        # drawn at once, without dot (which may be laying out what the cursor is on now)
        assert "laying out" not in str(graph.border_title)
        assert graph._layout.box(gb.ids[("blocks.5",)]).kind == "frame"
        release.set()
        await settle(pilot)


def test_enter_on_an_open_group_s_outside_boxes_goes_where_they_lead(decoder):
    from loopdbg.view.body import BodyView

    spec, _ = decoder
    view = BodyView(spec)
    gb = view.groups
    view.open(gb.ids[("blocks.4",)])
    layout = layout_body(view.target())
    frame = layout.box(gb.ids[("blocks.4",)])
    stubs = {b.kind: b for b in layout.boxes if frame.contains(b.x, b.y) and b.kind in ("in", "out")}
    # what blocks.4 reads comes from blocks.3 (closed: its box), what leaves goes to blocks.5
    assert view.outside_of(stubs["in"].id) == gb.ids[("blocks.3",)]
    assert view.outside_of(stubs["out"].id) == gb.ids[("blocks.5",)]
    view.open(gb.ids[("blocks.3",)])                      # open too: the node itself
    assert gb.by_id.get(view.outside_of(stubs["in"].id)) is None
    assert view.outside_of(gb.ids[("blocks.4",)]) is None and view.outside_of(None) is None


async def test_an_opened_group_is_drawn_in_one_frame_with_the_code_and_where_it_stays(decoder):
    """Enter on a group laid out ahead: the first frame that shows its picture shows it scrolled
    where it stays (not moved a frame later) and the pseudo-code opened with it (its lines laid
    out in the same screen update, not the next)."""
    pytest.importorskip("textual")
    from test_keyboard import settle

    from loopdbg.debug.session import Session
    from loopdbg.tui.app import LoopdbgApp
    from loopdbg.tui.widgets.code import PseudoCode
    from loopdbg.tui.widgets.graph import GraphView

    spec, files = decoder
    app = LoopdbgApp(Session.open(*files), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        graph, code = app.query_one(GraphView), app.query_one(PseudoCode)
        gb = grouped_body(graph._spec)
        graph.focus()
        graph.select(gb.ids[("blocks.5",)])
        await settle(pilot)                          # resting on it: laid out meanwhile
        frames = []
        shown = app._display

        def display(screen, renderable):
            shown(screen, renderable)
            if renderable is not None and any("▾ blocks.5 · " in line for line in graph._lines):
                frames.append((graph.scroll_offset, code.size.height, code.line_count()))
        app._display = display
        await pilot.press("enter")
        await settle(pilot)
        assert frames
        offset, height, rows = frames[0]
        assert offset == graph.scroll_offset and offset.y > 0
        assert any(r.head == ("blocks.5",) for r in code._rows) and height == rows
