"""How the app shows every panel a stop (the panel contract, ``loopdbg.tui.panel``), and when the
panels out of sight (a tab not selected, a pane zoomed away, the help in their place) are shown
it (a mixin of ``LoopdbgApp``).

A key's frame waits only for the panels on the screen. One out of sight is shown the last stop
when it comes into sight: its tab selected (by a key, a click, or the app showing something in
it, as ``i`` does the Inspector), a zoom or the help closed, a prompt giving the tabs their rows
back. All of them are shown it once the person pauses (``CATCH_UP_DELAY`` after the last stop):
a run of keys pays for none of them, and what a person looks at next is already drawn. None is
shown while a command runs (the session is the engine thread's then): they show its stop.

A tab's panel is not even built (composed, styled, mounted) before its tab first comes in front
(``PanelPane``): a session opens a few of the tabs, and building the others was a fifth of what
opening the app cost. Built, shown the last stop and brought in front happen in one screen
update, whichever way the tab is chosen (a key, a click: ``PanelTabs``).
"""

from __future__ import annotations

from textual.message import Message
from textual.widgets import TabbedContent, TabPane, Tabs

from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import displayed


def in_a_hidden_tab(widget) -> bool:
    """Whether ``widget`` sits in a tab not selected (a pane zoomed away or under the help is
    not counted: those are styles of the screen, applied only at its next layout)."""
    return any(isinstance(node, TabPane) and not node.display for node in widget.ancestors)


class PanelPane(TabPane):
    """The tab of one panel of the ``"tabs"`` area. ``built``: the panel is mounted with the
    pane (the tab shown first); else ``build`` mounts it, before the tab first comes in front."""

    def __init__(self, panel: Panel, *, built: bool):
        super().__init__(panel.TAB, *((panel,) if built else ()), id=panel.TAB_ID or None)
        self.panel = panel

    @property
    def built(self) -> bool:
        return self.panel.parent is self

    async def build(self) -> None:
        if not self.built:
            await self.mount(self.panel)


class PanelTabs(TabbedContent):
    """The bottom area's tabs. A click on the title of a tab never shown (or a key of the tab
    bar) asks the app to choose it (``Chosen``), which builds its panel before the tab comes in
    front: Textual would bring the empty tab in front at once, and a frame could show it so."""

    class Chosen(Message):
        """Tab ``tab_id``, not built yet, was chosen on the tab bar."""

        def __init__(self, tab_id: str) -> None:
            super().__init__()
            self.tab_id = tab_id

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tabs.parent is not self:
            return                          # the tab bar of a TabbedContent inside a tab
        pane = self.get_pane(event.tab)
        if isinstance(pane, PanelPane) and not pane.built:
            event.prevent_default()         # TabbedContent's own handler would show the pane
            event.stop()
            self.post_message(self.Chosen(pane.id))


class ShowsPanels:
    """``show_view``, the catch-up of panels out of sight, and the building of a tab's panel
    (mixed into the app)."""

    CATCH_UP_DELAY = 0.3     # seconds after a stop: the person reads it (keys come faster)
    tab_chosen: str | None = None   # a tab chosen, in front once its panel is built

    def show_view(self, view: View) -> None:
        """Every panel on the screen shows ``view`` now; the others when they come into sight
        or the person pauses (see the module docstring)."""
        self.view = view
        self.last_stop = view.stop
        unshown = self._unshown
        for panel in self.panels:
            if not panel.is_attached:       # a tab never shown: shown the view once built
                continue
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

    def select_tab(self, tab_id: str, then=None) -> None:
        """Bring tab ``tab_id`` in front, its panel showing the last stop in the same frame, then
        call ``then`` (in that frame too). A panel never shown is built first: then ``then``
        runs once it is, after the caller has returned."""
        tabs = self.query_one(TabbedContent)
        pane = tabs.get_pane(tab_id)
        if isinstance(pane, PanelPane) and not pane.built:
            self.tab_chosen = tab_id
            self.call_later(self._build_and_select, pane, then)
            return
        self.tab_chosen = None
        tabs.active = tab_id
        self.show_unshown(only_in_sight=True)
        if then is not None:
            then()

    async def _build_and_select(self, pane: PanelPane, then=None) -> None:
        with self.batch_update():           # no frame before the tab shows the stop
            await self._build(pane)
            self.select_tab(pane.id, then)

    async def on_panel_tabs_chosen(self, message: PanelTabs.Chosen) -> None:
        await self._build_and_select(self.query_one(PanelTabs).get_pane(message.tab_id))

    async def on_tabbed_content_tab_activated(self, message: TabbedContent.TabActivated) -> None:
        """A tab came in front (a click on it too): its panel shows the last stop (built
        first, if the tab was made active other than by ``select_tab`` or the tab bar)."""
        pane = message.pane
        if isinstance(pane, PanelPane) and not pane.built:
            with self.batch_update():
                await self._build(pane)
                self.show_unshown(only_in_sight=True)
            return
        self.show_unshown(only_in_sight=True)

    async def _build(self, pane: PanelPane) -> None:
        """Mount ``pane``'s panel; the next ``show_unshown`` shows it the last stop (the stop a
        running command ends in, if one runs)."""
        await pane.build()
        self._unshown.add(pane.panel)

    def _show(self, panel: Panel, view: View) -> None:
        try:
            panel.show(view)
        except Exception as exc:  # noqa: BLE001 - one panel failing leaves the others shown
            if self.RAISE_INTERNAL_ERRORS:
                raise
            self.report_internal_error(exc, type(panel).__name__)

    def panel_of(self, cls: type[Panel]) -> Panel:
        """The app's panel of class ``cls``, built or not (``select_tab`` builds it)."""
        return next(panel for panel in self.panels if isinstance(panel, cls))
