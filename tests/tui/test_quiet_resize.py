"""A pane whose picture changes size (a table's column widening, the body graph's picture
growing) repaints itself, not the whole screen: Textual lays out every widget when a scrolling
widget's virtual size changes, ~50 ms a key on a big body. The screen is laid out still when the
pane itself changes size (an auto-sized table growing a row) or a scroll bar comes or goes."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from rich.segment import Segment  # noqa: E402
from rich.text import Text  # noqa: E402
from textual.app import App  # noqa: E402
from textual.containers import VerticalScroll  # noqa: E402
from textual.geometry import Size  # noqa: E402
from textual.scroll_view import ScrollView  # noqa: E402
from textual.strip import Strip  # noqa: E402

from loopdbg.tui.widgets.lines import Lines  # noqa: E402
from loopdbg.tui.widgets.scroll import OneLayout, QuietResize, QuietTable  # noqa: E402
from screen import screen_text  # noqa: E402


class Picture(QuietResize, ScrollView):
    """A picture of ``rows`` lines of ``width`` cells (``#`` drawn)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.width_ = 10

    def draw(self, width: int, rows: int) -> None:
        self.width_ = width
        self.set_virtual_size(Size(width, rows))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        row = "#" * self.width_ if y + self.scroll_offset.y < self.virtual_size.height else ""
        return Strip([Segment(row[:self.size.width])]).extend_cell_length(self.size.width)


class Two(App):
    CSS = "Picture { height: 10; } QuietTable { height: auto; }"

    def compose(self):
        yield Picture()
        yield QuietTable()


def _count_layouts(app, monkeypatch) -> list:
    screen = app.screen
    calls = []
    original = screen._refresh_layout

    def counted(*args, **kw):
        calls.append(1)
        return original(*args, **kw)
    monkeypatch.setattr(screen, "_refresh_layout", counted)
    return calls


async def test_a_wider_column_repaints_the_table_and_a_new_row_lays_the_screen_out(monkeypatch):
    app = Two()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(QuietTable)
        table.add_columns("name", "mean")
        table.add_row(Text("x"), Text("0.5"), key="x")
        await pilot.pause()
        layouts = _count_layouts(app, monkeypatch)
        table.update_cell("x", table.ordered_columns[1].key, Text("-0.004799"), update_width=True)
        await pilot.pause()
        await pilot.pause()
        assert any("-0.004799" in row for row in screen_text(app))
        assert not layouts                       # the column widened: the table alone repainted
        table.add_row(Text("y"), Text("1"), key="y")
        await pilot.pause()
        await pilot.pause()
        assert layouts                           # a row more: the table is taller
        assert any(row.split()[:1] == ["y"] for row in screen_text(app))


async def test_a_bigger_picture_repaints_the_pane_unless_a_scroll_bar_comes(monkeypatch):
    app = Two()
    async with app.run_test(size=(60, 20)) as pilot:
        picture = app.query_one(Picture)
        picture.draw(80, 30)                     # wider and taller than the pane: both bars
        await pilot.pause()
        assert picture.show_horizontal_scrollbar and picture.show_vertical_scrollbar
        layouts = _count_layouts(app, monkeypatch)
        picture.draw(90, 40)                     # bigger still: the same bars
        await pilot.pause()
        assert not layouts and picture.virtual_size == Size(90, 40)
        assert picture.max_scroll_y == 40 - picture.scrollable_content_region.height
        picture.scroll_to(y=35, animate=False, immediate=True)
        picture.draw(90, 5)                      # the bar goes: the screen is laid out
        await pilot.pause()
        assert layouts and not picture.show_vertical_scrollbar and picture.scroll_y == 0


class Listing(OneLayout, Lines):
    pass


class Scrolled(OneLayout, VerticalScroll):
    pass


class Code(App):
    CSS = "Scrolled { height: 8; }"

    def compose(self):
        with Scrolled():
            yield Listing()


async def test_a_listing_growing_in_its_pane_lays_the_screen_out_once(monkeypatch):
    """Textual lays the screen out a second time once a layout gave a container a new virtual
    size; the pseudo-code's pane (``OneLayout``) only when a scroll bar came or went."""
    app = Code()
    async with app.run_test(size=(40, 12)) as pilot:
        listing, pane = app.query_one(Listing), app.query_one(Scrolled)
        listing.set_lines([Text(f"line {k}") for k in range(20)])
        await pilot.pause()
        await pilot.pause()
        assert pane.show_vertical_scrollbar
        layouts = _count_layouts(app, monkeypatch)
        listing.set_lines([Text(f"line {k}") for k in range(30)])    # longer: the same bar
        for _ in range(4):
            await pilot.pause()
        assert len(layouts) == 1
        pane.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert any("line 29" in row for row in screen_text(app))
        listing.set_lines([Text("only line")])                         # the bar goes
        for _ in range(4):
            await pilot.pause()
        assert not pane.show_vertical_scrollbar and any("only line" in row for row in screen_text(app))
