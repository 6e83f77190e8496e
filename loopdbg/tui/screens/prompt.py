"""A one-line prompt (breakpoint, watch, run-to) that shows errors where the text was typed."""

from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from loopdbg.tui.plain import plain


class Prompt(ModalScreen[str | None]):
    """Ask for one line; ``check(text)`` returns an error message (kept open) or None (accepted)."""

    DEFAULT_CSS = """
    Prompt { align: center middle; }
    Prompt > Vertical { width: 80%; max-width: 100; height: auto; border: round $accent;
                        background: $panel; padding: 1 2; }
    Prompt #prompt-error { color: $error; height: auto; }
    """
    BINDINGS = [("escape", "cancel", "cancel")]

    def __init__(self, title: str, hint: str, check: Callable[[str], str | None], value: str = ""):
        super().__init__()
        self.title_text, self.hint, self.check, self.value = title, hint, check, value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain(self.title_text))
            yield Input(value=self.value, placeholder=self.hint, id="prompt-input")
            yield Static("", id="prompt-error")

    def on_input_submitted(self, message: Input.Submitted) -> None:
        error = self.check(message.value)
        if error:
            self.query_one("#prompt-error", Static).update(plain(error))
            return
        self.dismiss(message.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
