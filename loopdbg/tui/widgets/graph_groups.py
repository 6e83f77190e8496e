"""The groups of a big body that open and close in place in the body graph (a mixin of
``GraphView``): Enter or ``+`` opens the group under the cursor, ``-`` or Escape closes the
innermost one the cursor is in, and every change is told to the other panels (``GroupsShown``)
so the pseudo-code folds the same way; the pseudo-code's changes come back through
``follow_groups``.

The picture of a change of its own is drawn when the app hands the change round
(``follow_groups``, called on every panel in one go), not at the key: so the graph and the
pseudo-code are laid out and painted in one screen update, not one each (each costs a reflow of
the whole screen, ~30 ms on a quiet machine).
"""

from __future__ import annotations

from functools import partial

from rich.text import Text

from loopdbg.tui.messages import GroupsShown
from loopdbg.view.fit import choose_layout

AHEAD_DELAY = 0.05      # s after a picture: what opening the group under the cursor shows is laid out


class GroupFolds:
    """What ``GraphView`` does with the groups of its ``BodyView`` (``self._body(spec)``)."""

    def _groups_shown(self, found: int | None = None) -> None:
        """Tell the other panels which groups are open now (and what was found)."""
        self.post_message(GroupsShown(self, self._spec.path, self._body(self._spec).opened, found))

    _groups_undrawn = False     # groups opened or closed here, drawn when handed round
    _ahead_timer = None         # a laying out ahead still to start (the cursor resting)

    def follow_groups(self, path: str, opened: frozenset, found: int | None) -> None:
        """The pseudo-code opened or closed a group of this body: the picture does too (or
        the graph's own change, handed round to every panel: drawn now)."""
        if self._spec is None or self._spec.path != path or not self._body(self._spec).ready:
            return
        body = self._body(self._spec)
        if opened != body.opened:
            self.selected = body.follow(opened, self.selected)
        elif not self._groups_undrawn:
            return
        self._groups_undrawn = False
        self._redraw()

    def _lay_out_ahead_later(self, body) -> None:
        """The cursor on a closed group: what opening it shows is laid out in the background
        ``AHEAD_DELAY`` s after its picture (once its frame is drawn: ``dot``'s answer is read
        in Python, holding the GIL), so that Enter draws it at once; a person's Enter comes
        ~0.2 s after the arrow key, a longer wait would lose that head start."""
        if self._ahead_timer is not None:
            self._ahead_timer.stop()
        self._ahead_timer = None
        if self._ahead(body) is not None:
            self._ahead_timer = self.set_timer(AHEAD_DELAY, partial(self._lay_out_ahead, body))

    def _ahead(self, body):
        """What opening the group under the cursor shows, when it is not laid out yet."""
        opening = body.opening(self.selected) if body.ready else None
        if opening is None or opening == body.opened:
            return None
        ahead = body.target(opening)
        width = self.size.width or 120
        return ahead if choose_layout(ahead, self.detail, width, cached_only=True) is None \
            else None

    def _lay_out_ahead(self, body) -> None:
        self._ahead_timer = None
        if self._spec is None or self._body(self._spec) is not body:
            return
        if self._layout_busy:       # a picture asked for comes first: later again
            self._lay_out_ahead_later(body)
            return
        ahead = self._ahead(body)
        if ahead is not None:
            self._lay_out(body, self.detail, self.size.width or 120, ahead)

    def action_open_group(self) -> None:
        """Enter or ``+`` on a group's box: open it in place, the cursor on what it holds."""
        if self._spec is None or not self._body(self._spec).is_group(self.selected):
            return
        self.selected = self._pending = self._body(self._spec).open(self.selected)
        self._hand_round()

    def action_close_group(self) -> bool:
        """``-`` (or Escape): close the innermost open group the cursor is in; False if none."""
        closed = self._body(self._spec).close_at(self.selected) if self._spec else None
        if closed is None:
            return False
        self.selected = self._pending = closed
        self._hand_round()
        return True

    _hand_round_when_laid_out = False   # a change of the groups waits for its picture

    def _hand_round(self) -> None:
        """Tell the other panels of this panel's change of the groups, to draw it with them in
        one frame; when its picture is not laid out yet, once it is (meanwhile the picture
        before stays, its title saying so): the pseudo-code folding at once would lay the
        screen out twice, the first time while ``dot``'s answer is read (holding the GIL)."""
        body = self._body(self._spec)
        width = self.size.width or 120
        if self._ahead_timer is not None:       # the cursor moved on: the next picture says
            self._ahead_timer.stop()
            self._ahead_timer = None
        if self._unavailable is None and \
                choose_layout(body.target(), self.detail, width, cached_only=True) is None:
            self._hand_round_when_laid_out = True
            self.border_title = Text(self._title + "  (laying out…)")
            self._lay_out(body, self.detail, width)
            return
        self._hand_round_when_laid_out = False
        self._groups_undrawn = True
        self._groups_shown()

    def _handed_round(self) -> bool:
        """Called as a picture is ready to draw: True when a change of the groups waited for
        it (it is handed round now, and drawn then)."""
        if not self._hand_round_when_laid_out:
            return False
        self._hand_round()
        return not self._hand_round_when_laid_out
