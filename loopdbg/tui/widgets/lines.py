"""Lines of text drawn one at a time, as the screen asks for them (the pseudo-code's widget)."""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


def segments(text: Text, console) -> list[Segment]:
    """A Text as segments, its own style kept: ``Text.render`` drops the Text's style when it
    has no spans (a whole line in reverse video would be drawn plain)."""
    if text.style and not text.spans:
        return [Segment(text.plain, console.get_style(text.style))] if text.plain else []
    return list(text.render(console))


class Lines(Widget):
    """Lines of text drawn one at a time, as the screen asks for them: only the lines in view
    are rendered, and a change repaints only the lines that changed (a converted body's
    pseudo-code has hundreds of lines, and a step changes the values at their ends). A line
    longer than the widget ends in an ellipsis. A subclass may make its lines on demand
    (``line_count`` and ``line``): then only the lines in view are ever made."""

    DEFAULT_CSS = "Lines { width: 1fr; height: auto; padding: 0 1; }"

    def __init__(self, **kw):
        super().__init__(**kw)
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}

    def line_count(self) -> int:
        return len(self._lines)

    def line(self, y: int) -> Text:
        return self._lines[y]

    @property
    def content(self) -> Text:
        """Every line as one Text (what the widget shows, for tests and the clipboard)."""
        return Text("\n").join(self.line(y) for y in range(self.line_count()))

    def render(self) -> Text:
        return self.content

    def set_lines(self, lines: list[Text]) -> None:
        old = self._lines
        self._lines = lines
        if len(lines) != len(old):
            self._strips.clear()
            self.refresh(layout=True)
            return
        changed = [y for y, (a, b) in enumerate(zip(old, lines))
                   if a.plain != b.plain or a.spans != b.spans or a.style != b.style]
        for y in changed:
            self._strips.pop(y, None)
        if changed:
            width = self.size.width
            self.refresh(*(Region(0, y, width, 1) for y in changed))

    def get_content_height(self, container, viewport, width: int) -> int:
        return self.line_count()

    def get_content_width(self, container, viewport) -> int:
        return max((line.cell_len for line in self._lines), default=0)

    _line_style = None          # the widget's Rich style, kept until its styles change

    def notify_style_update(self) -> None:
        """The styles changed (a theme, a class): lines are drawn again in the new ones."""
        super().notify_style_update()
        self._line_style = None
        self.__dict__.get("_strips", {}).clear()

    def render_line(self, y: int) -> Strip:
        # ``rich_style`` walks every ancestor's styles (~0.5 ms): once, not once per line
        style = self._line_style
        if style is None:
            style = self._line_style = self.rich_style
        width = self.content_size.width
        if not 0 <= y < self.line_count():
            return Strip.blank(width, style)
        strip = self._strips.get(y)
        if strip is None or strip.cell_length != width:
            text = self.line(y)
            if text.cell_len > width:
                text = text.copy()
                text.truncate(width, overflow="ellipsis")
            strip = Strip(segments(text, self.app.console)).apply_style(style)
            strip = self._strips[y] = strip.extend_cell_length(width, style)
        return strip
