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


def update_text(widget, text: Text) -> None:
    """``widget.update(text)`` (a Static), asking for a layout of the screen only when the
    text's size changed: a layout costs a full repaint, tens of milliseconds per key."""
    plain_text = text.plain
    lines = plain_text.split("\n")
    shape = (len(lines), max(len(line) for line in lines))
    layout = shape != getattr(widget, "_loopdbg_text_shape", None)
    widget._loopdbg_text_shape = shape
    widget.update(text, layout=layout)
