"""Scrolling panes: to a region before the next frame, not a frame after it; and a pane whose
picture changes size (the body graph, a table, the pseudo-code) repainted without laying the
whole screen out (each layout repaints the screen: tens of milliseconds a key on a big body)."""

from __future__ import annotations

from textual.geometry import Region, Size, Spacing
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.widget import Widget
from textual.widgets import DataTable


class QuietResize:
    """Mixed into a ScrollView: ``set_virtual_size`` changes the size of its picture without a
    layout of the whole screen, unless a scroll bar comes or goes. A picture of another size
    (a group opened in the body graph, a stop whose values are longer) otherwise lays every
    widget out and repaints the screen, ~40-100 ms on a big body, where the pane and its scroll
    bars are all that change: a ScrollView's own size does not depend on its picture's."""

    def set_virtual_size(self, size: Size) -> None:
        if size == self.virtual_size:
            return
        if not self.is_mounted or not self.container_size:
            self.virtual_size = size            # not laid out yet: the layout to come sizes it
            return
        self.set_reactive(Widget.virtual_size, size)
        self._repaint_for(size)

    def _repaint_for(self, size: Size) -> None:
        """The pane repainted for its new virtual ``size``; the screen laid out only when a
        scroll bar comes or goes (the screen places it)."""
        bars = (self.show_horizontal_scrollbar, self.show_vertical_scrollbar)
        self._refresh_scrollbars()
        if (self.show_horizontal_scrollbar, self.show_vertical_scrollbar) != bars:
            self.refresh(layout=True)
            return
        self._scroll_update(size)               # the bars' lengths, the scroll kept in range
        self.refresh()


def scroll_into_view(view: ScrollView, region: Region, center: bool = False) -> None:
    """Scroll ``view`` so that ``region`` shows: now, so that the next frame draws the picture
    where it will stay (not once, then moved), and again after the refresh, when a scroll bar
    that came or went has changed how far the pane scrolls. Centred (a find), only after the
    refresh: the find's prompt closing gives the pane its rows back."""
    if view.size.height and not center:
        # a scroll bar the new picture brings takes a row (a column) of the pane: kept free
        virtual, size, styles = view.virtual_size, view.size, view.styles
        below = styles.scrollbar_size_horizontal if virtual.width > size.width and \
            not view.show_horizontal_scrollbar else 0
        right = styles.scrollbar_size_vertical if virtual.height > size.height and \
            not view.show_vertical_scrollbar else 0
        view.scroll_to_region(region, spacing=Spacing(0, right, below, 0), animate=False,
                              immediate=True)
    view.call_after_refresh(view.scroll_to_region, region, animate=False, center=center)


class QuietTable(QuietResize, DataTable):
    """A DataTable whose new contents lay the screen out only when its own size changes: an
    auto-sized side grows or shrinks, or a scroll bar comes or goes. Textual's lays out every
    widget and repaints the screen whenever a column widens (a mean of ``-0.0048`` after
    ``0.0082``, a sparkline one iteration longer): ~50 ms a key on a big body."""

    virtual_size = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        if not self.is_mounted or not self.container_size:
            self.refresh(layout=True)
            return
        styles = self.styles
        if (new.width != old.width and styles.width is not None and styles.width.is_auto) or \
                (new.height != old.height and (styles.height is None or styles.height.is_auto)):
            self.refresh(layout=True)            # the table itself changes size
            return
        self._repaint_for(new)


class OneLayout:
    """Mixed into a widget: a layout of the screen that gives it a new virtual size does not
    ask for a second layout (Textual's does, for a widget that is not a ScrollView: the
    pseudo-code growing with a group opened, ~30 ms and a frame more on a big body), unless a
    scroll bar came or went, which moves what is inside."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size,
                      layout: bool = True) -> bool:
        bars = (self.show_horizontal_scrollbar, self.show_vertical_scrollbar)
        resized = super()._size_updated(size, virtual_size, container_size, layout=False)
        if layout and (self.show_horizontal_scrollbar, self.show_vertical_scrollbar) != bars:
            self.refresh(layout=True)
        return resized
