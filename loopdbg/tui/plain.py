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
