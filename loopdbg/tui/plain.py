"""Text from files (names, paths, messages that quote them) as the UI shows it: plain ``Text``,
never markup (a name like ``[/oops]`` or ``[@click=app.quit]`` is shown as written), and every
control character escaped (``loopdbg.text.safe``), so that no name can move the cursor, retitle
the terminal or forge a line.
"""

from __future__ import annotations

from rich.text import Text

from loopdbg.text import safe


def plain(text, style: str = "") -> Text:
    """``text`` as a one-line ``Text`` (see the module docstring)."""
    return Text(safe(text), style=style)


def update_text(widget, text) -> None:
    """``widget.update(text)`` (a Static), asking for a layout of the screen only when the
    widget is displayed and its content would change size: a layout repaints the whole screen,
    tens of milliseconds per key on a big body, where repainting the widget costs a few.

    A widget in a hidden tab never asks: showing the tab lays the screen out anyway, from the
    content as it is then (``update`` drops the widget's cached dimensions)."""
    widget.update(text, layout=False)
    if not widget.is_mounted or not displayed(widget):
        return
    styles, size = widget.styles, widget.content_size
    if not size.width:
        widget.refresh(layout=True)             # never laid out yet
        return
    container, viewport = widget.container_size, widget.app.size
    grows = False
    if styles.width is not None and styles.width.is_auto:
        grows = widget.get_content_width(container, viewport) != size.width
    if not grows and (styles.height is None or styles.height.is_auto):
        grows = widget.get_content_height(container, viewport, size.width) != size.height
    if grows:
        widget.refresh(layout=True)


def displayed(widget) -> bool:
    """Whether ``widget`` and every container around it are displayed (not in a hidden tab)."""
    node = widget
    while node is not None:
        if not getattr(node, "display", True):
            return False
        node = node.parent
    return True


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, a long name cut in its middle
    (``functional_1/…/forward_lstm``): both ends of a converter's path say the most."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]
