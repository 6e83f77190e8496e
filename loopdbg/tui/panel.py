"""The panel contract: what every panel of the UI is given, and what it promises.

A panel is a widget that also derives from ``Panel``. It says where it goes (``AREA``: the large
``"main"`` box, the ``"side"`` column, or a tab of the bottom ``"tabs"``, titled ``TAB``) and
implements ``show(view)``. After every stop (the ``Stopped`` message), and whenever breakpoints or
watches change, the app calls ``show`` on each panel with one ``View`` (loopdbg.view.stop): the
``Stop`` and the session it came from. A panel out of sight (in a tab not selected, a pane zoomed
away) is shown it when it comes into sight, or once the person pauses (``loopdbg.tui.showing``);
of several stops meanwhile, it is shown the last. A panel of a tab is mounted only when its tab
first comes in front (its ``compose`` and ``on_mount`` run then, and ``show`` right after). A
panel only reads the view; to ask for a change it posts a message (``loopdbg.tui.messages``),
never calls the app.

Adding a panel: one file in ``loopdbg/tui/widgets/`` with the class, and its entry in ``PANELS``
(``loopdbg/tui/app.py``), in the order it appears within its area.
"""

from __future__ import annotations

from typing import ClassVar

from loopdbg.tui.guard import Guarded
from loopdbg.view.stop import HISTORY_LIMIT, View

__all__ = ["HISTORY_LIMIT", "Panel", "View"]


class Panel(Guarded):
    """Mixed into a widget to make it a panel (see the module docstring). An exception escaping
    one of its handlers is shown in the Log, not the end of the UI (``loopdbg.tui.guard``)."""

    AREA: ClassVar[str] = "tabs"     # "main", "side" or "tabs"
    TAB: ClassVar[str] = ""          # the tab's title (AREA "tabs")
    TAB_ID: ClassVar[str] = ""       # the tab's id, for the app and tests to select it
    ID: ClassVar[str | None] = None  # the panel widget's id (the stylesheet refers to it)
    BUILT_AT_OPEN: ClassVar[bool] = False   # (AREA "tabs") mounted as the app opens, not when
    #                                         its tab first comes in front (``tui.showing``)

    def show(self, view: View) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement show(view)")

    def follow_groups(self, path: str, opened: frozenset, layer_id: int | None) -> None:
        """A panel opened or closed groups of loop ``path``'s body (``opened``: the scopes open
        now) or found layer ``layer_id`` in it: a panel showing that body shows the same. Called
        on every panel in one go, the one that posted ``GroupsShown`` too (it may draw its own
        change here, in the same screen update as the others)."""
