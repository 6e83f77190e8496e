"""The Outputs tab: the current loop's outputs so far (its last values, its concatenations as
they stand) or as it gave them, and the model's outputs once the run has ended
(``loopdbg.debug.outputs``). The highlighted row's whole value is shown beside the table."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from loopdbg.debug.outputs import loop_outputs, model_outputs
from loopdbg.debug.values import shape_text, type_text
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import cut_middle, plain, update_text
from loopdbg.tui.widgets.inspector import describe
from loopdbg.tui.widgets.scroll import QuietTable


NAME = 32               # a longer name is cut in its middle (the whole one shows beside)


class OutputTable(QuietTable):
    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("output", "of", "shape", "dtype", "state")


class OutputsPanel(Panel, Horizontal):
    """The table of outputs and the value of the one highlighted."""

    TAB, TAB_ID, ID = "Outputs", "tab-outputs", "outputs"

    def __init__(self, **kw):
        super().__init__(**kw)
        self._rows: list = []

    def compose(self) -> ComposeResult:
        yield OutputTable(id="outputs-table")
        with VerticalScroll(id="outputs-value"):
            yield Static(id="outputs-value-text")

    def show(self, view: View) -> None:
        stop = view.stop
        self._rows = loop_outputs(view.event, stop.loop_end) + \
            model_outputs(view.session.engine.output_names, stop.finished)
        table = self.query_one(OutputTable)
        keep = table.cursor_row
        table.clear()
        for k, o in enumerate(self._rows):
            have = o.value is not None
            table.add_row(plain(cut_middle(o.name, NAME)), plain(cut_middle(o.owner, NAME)),
                          shape_text(o.value) if have else "", type_text(o.value) if have else "",
                          o.state, key=str(k))
        if self._rows:
            table.move_cursor(row=min(keep, len(self._rows) - 1))
        self._show_value(table.cursor_row)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_value(event.cursor_row)

    def _show_value(self, row: int) -> None:
        text = self.query_one("#outputs-value-text", Static)
        if not 0 <= row < len(self._rows):
            update_text(text, "")
            return
        o = self._rows[row]
        head = plain(f"{o.name} ({o.owner}, {o.state})", "bold")
        head.append("\n")
        if o.value is None:
            update_text(text, head)
            return
        head.append_text(describe(o.value))
        update_text(text, head)
