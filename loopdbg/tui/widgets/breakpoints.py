"""Breakpoints and watches: a table each; keys to toggle, edit and delete the selected row."""

from __future__ import annotations

from textual.binding import Binding

from loopdbg.tui.messages import (DeleteBreakpoint, DeleteWatch, EditBreakpoint,
                                  IgnoreBreakpoint, ToggleBreakpoint)
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import plain
from loopdbg.tui.widgets.scroll import QuietTable
from loopdbg.tui.widgets.valuetext import value_text


class BreakpointTable(Panel, QuietTable):
    """Breakpoints: number, condition, loop, enabled, hits, ignore.

    Keys: enter/t toggles the selected breakpoint, e edits it, I sets how many hits to ignore,
    d deletes it (each posts a message; the app changes the session).
    """

    TAB, TAB_ID, ID = "Breakpoints", "tab-bp", "bps"

    BINDINGS = [Binding("enter,t", "toggle", "enable/disable"), Binding("e", "edit", "edit"),
                Binding("I", "ignore", "ignore hits"), Binding("d,delete", "delete", "delete")]

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("#", "condition", "loop", "enabled", "hits", "ignore")

    def show(self, view: View) -> None:
        self.clear()
        for bp in view.breakpoints.items.values():
            self.add_row(str(bp.number), plain(bp.text), plain(bp.loop or "any"),
                         "yes" if bp.enabled else "no",
                         str(bp.hits), str(bp.ignore) + (" (temporary)" if bp.temporary else ""),
                         key=str(bp.number))

    def _selected(self) -> int | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return int(key.value)

    def action_toggle(self) -> None:
        n = self._selected()
        if n is not None:
            self.post_message(ToggleBreakpoint(n))

    def action_edit(self) -> None:
        n = self._selected()
        if n is not None:
            self.post_message(EditBreakpoint(n))

    def action_ignore(self) -> None:
        n = self._selected()
        if n is not None:
            self.post_message(IgnoreBreakpoint(n))

    def action_delete(self) -> None:
        n = self._selected()
        if n is not None:
            self.post_message(DeleteBreakpoint(n))


class WatchTable(Panel, QuietTable):
    """Watches and their values at the current stop. Key: d deletes the selected watch."""

    TAB, TAB_ID, ID = "Watches", "tab-watch", "watches"

    BINDINGS = [Binding("d,delete", "delete", "delete")]

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("#", "expression", "value")

    def show(self, view: View) -> None:
        self.clear()
        values = {w.number: (v, err) for w, v, err in (view.stop.watches or ())}
        for w in view.breakpoints.watches.values():
            value, err = values.get(w.number, (None, "not evaluated yet"))
            shown = plain(err, "red") if err else plain(value_text(value, 80))
            self.add_row(str(w.number), plain(w.text), shown, key=str(w.number))

    def action_delete(self) -> None:
        if self.row_count == 0:
            return
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        self.post_message(DeleteWatch(int(key.value)))
