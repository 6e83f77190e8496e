"""Scrolling a pane to a region before its next frame, not a frame after it."""

from __future__ import annotations

from textual.geometry import Region, Spacing
from textual.scroll_view import ScrollView


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
