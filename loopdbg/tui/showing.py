"""How the app shows every panel a stop (the panel contract, ``loopdbg.tui.panel``), and when the
panels out of sight (a tab not selected, a pane zoomed away, the help in their place) are shown
it (a mixin of ``LoopdbgApp``).

A key's frame waits only for the panels on the screen. One out of sight is shown the last stop
when it comes into sight: its tab selected (by a key, a click, or the app showing something in
it, as ``i`` does the Inspector), a zoom or the help closed, a prompt giving the tabs their rows
back. All of them are shown it once the person pauses (``CATCH_UP_DELAY`` after the last stop):
a run of keys pays for none of them, and what a person looks at next is already drawn. None is
shown while a command runs (the session is the engine thread's then): they show its stop.
"""

from __future__ import annotations

from textual.widgets import TabbedContent, TabPane

from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import displayed


def in_a_hidden_tab(widget) -> bool:
    """Whether ``widget`` sits in a tab not selected (a pane zoomed away or under the help is
    not counted: those are styles of the screen, applied only at its next layout)."""
    return any(isinstance(node, TabPane) and not node.display for node in widget.ancestors)


class ShowsPanels:
    """``show_view`` and the catch-up of panels out of sight (mixed into the app)."""

    CATCH_UP_DELAY = 0.3     # seconds after a stop: the person reads it (keys come faster)

    def show_view(self, view: View) -> None:
        """Every panel on the screen shows ``view`` now; the others when they come into sight
        or the person pauses (see the module docstring)."""
        self.view = view
        self.last_stop = view.stop
        unshown = self._unshown
        for panel in self.panels:
            if displayed(panel):
                unshown.discard(panel)
                self._show(panel, view)
            else:
                unshown.add(panel)
        if self._catch_up_timer is not None:
            self._catch_up_timer.stop()
        self._catch_up_timer = self.set_timer(self.CATCH_UP_DELAY, self.show_unshown) \
            if unshown else None

    def show_unshown(self, only_in_sight: bool = False) -> None:
        """Show the last stop to the panels out of sight at it (``only_in_sight``: those that
        are not in a tab left unselected); not while a command runs, nor once the app ends
        (its widgets are being removed)."""
        unshown = self._unshown
        if not unshown or self.busy:
            return
        for panel in self.panels:
            if panel in unshown and panel.is_attached and \
                    not (only_in_sight and in_a_hidden_tab(panel)):
                unshown.discard(panel)
                self._show(panel, self.view)

    def select_tab(self, tab_id: str) -> None:
        """Bring tab ``tab_id`` in front, its panel showing the last stop in the same frame."""
        self.query_one(TabbedContent).active = tab_id
        self.show_unshown(only_in_sight=True)

    def on_tabbed_content_tab_activated(self, message: TabbedContent.TabActivated) -> None:
        """A tab was selected (a click on it too): its panel shows the last stop."""
        self.show_unshown(only_in_sight=True)

    def _show(self, panel: Panel, view: View) -> None:
        try:
            panel.show(view)
        except Exception as exc:  # noqa: BLE001 - one panel failing leaves the others shown
            if self.RAISE_INTERNAL_ERRORS:
                raise
            self.report_internal_error(exc, type(panel).__name__)
