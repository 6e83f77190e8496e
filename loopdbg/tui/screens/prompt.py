"""A one-line prompt (breakpoint, watch, inspect, find) that shows errors where the text was typed.

A bar in the main screen, below the tabs, rather than a screen of its own: pushing a modal screen
costs Textual a restyle and a repaint of everything behind it (a tenth of a second and more), and
the bar leaves the graph and the code in view while the condition is typed.
"""

from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from loopdbg.debug.complete import complete
from loopdbg.tui.messages import PromptShown
from loopdbg.tui.plain import plain


class PromptInput(Input):
    """The prompt's line. Tab completes (it never moves the focus away from a half-typed
    prompt: keys would go to the debugger with the prompt still on screen)."""

    BINDINGS = [Binding("escape", "cancel", "cancel"),
                Binding("tab", "complete", "complete", show=False),
                Binding("shift+tab", "complete", "complete", show=False)]

    def action_cancel(self) -> None:
        self.parent.cancel()

    def action_complete(self) -> None:
        self.parent.complete()


class PromptBar(Vertical):
    """Ask for one line: ``ask(title, hint, check, done, value, words)``; ``check(text)`` returns
    an error message (the bar stays open) or None (``done(text)`` is called); escape calls
    ``done(None)``, and so does the focus leaving the bar (a click elsewhere): no half-typed
    prompt stays on screen while keys go to the debugger. ``words`` (``loopdbg.debug.complete``)
    is what Tab completes from."""

    DEFAULT_CSS = """
    PromptBar { display: none; height: auto; border: round $accent; background: $panel;
                padding: 0 1; }
    PromptBar #prompt-error { color: $error; height: auto; }
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self._check: Callable[[str], str | None] = lambda text: None
        self._done: Callable[[str | None], None] = lambda result: None
        self._return_to = None
        self._words: list = []

    def compose(self) -> ComposeResult:
        yield Label(id="prompt-title")
        yield PromptInput(id="prompt-input")
        yield Static("", id="prompt-error")

    @property
    def open(self) -> bool:
        return bool(self.display)

    def ask(self, title: str, hint: str, check: Callable[[str], str | None],
            done: Callable[[str | None], None], value: str = "", words=(),
            return_to=None) -> None:
        """``return_to``: the widget that gets the focus back (by default the one that had
        it)."""
        self._check, self._done = check, done
        self._words = words
        self._return_to = return_to or self.app.focused
        self.query_one("#prompt-title", Label).update(plain(title))
        entry = self.query_one(PromptInput)
        entry.placeholder = hint
        entry.value = value
        entry.cursor_position = len(value)
        self.query_one("#prompt-error", Static).update("")
        self.display = True
        self.post_message(PromptShown(True))
        entry.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        error = self._check(message.value)
        if error:
            self.query_one("#prompt-error", Static).update(plain(error))
            return
        self._close(message.value)

    def cancel(self) -> None:
        self._close(None)

    def complete(self) -> None:
        """Tab: complete the word at the cursor; several candidates are listed under the line."""
        entry = self.query_one(PromptInput)
        done = complete(entry.value, entry.cursor_position, self._words)
        if done.text != entry.value:
            entry.value = done.text
        entry.cursor_position = done.cursor
        listed = "   ".join(done.choices) if done.choices else done.message
        self.query_one("#prompt-error", Static).update(plain(listed, "dim"))

    def on_descendant_blur(self, event) -> None:
        """The focus left the line (a click on a pane): the prompt is given up, not left open."""
        self.call_after_refresh(self._lost_focus)

    def _lost_focus(self) -> None:
        focused = self.app.focused
        if self.open and (focused is None or self not in focused.ancestors_with_self):
            self._return_to = None
            self._close(None)

    def _close(self, result: str | None) -> None:
        focused = self.app.focused
        self.display = False
        self.post_message(PromptShown(False))
        back = self._return_to
        if focused is not None and self not in focused.ancestors_with_self:
            pass                        # the focus already went elsewhere: it stays there
        elif back is not None and back.is_attached and back is not self.query_one(PromptInput):
            back.focus()
        else:
            self.screen.set_focus(None)
        self._done(result)
