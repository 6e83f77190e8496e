"""No path ends the UI with a traceback: an unexpected exception in a panel or in one of the app's
handlers is shown in the Log (with its traceback's last lines) and in a notification, and the UI
stays up.

Textual ends the app on any exception a handler lets out (``App._handle_exception``), and the
message loop of the widget it came from stops for good. ``Guarded`` (mixed into the app and every
panel) catches it where a message is dispatched, so that widget keeps its loop; the app's
``_handle_exception`` (``LoopdbgApp``) reports what comes from elsewhere (drawing, timers) the
same way once the UI is up. What fails while the screen is being built still ends the app.

Tests set ``RAISE_INTERNAL_ERRORS`` (tests/tui/conftest.py) so that a bug fails the test instead
of being logged.
"""

from __future__ import annotations

import traceback

from textual import events

TRACE_LINES = 8          # of the traceback, shown in the Log under the error


class Guarded:
    """Mixed into a Textual message pump (before it in the bases): an exception escaping one of
    its handlers is reported by the app and the pump goes on."""

    async def _dispatch_message(self, message) -> None:
        try:
            await super()._dispatch_message(message)
        except Exception as exc:  # noqa: BLE001 - reported below, the UI stays up
            app = self.app
            if isinstance(message, (events.Compose, events.Mount)) or not hasattr(
                    app, "report_internal_error") or app.RAISE_INTERNAL_ERRORS:
                raise
            app.report_internal_error(exc, type(self).__name__)


def describe(exc: BaseException, where: str) -> list[str]:
    """The Log's lines for an internal error: one sentence, then the traceback's last lines."""
    lines = [f"internal error in {where}: {type(exc).__name__}: {exc} (the UI goes on; "
             f"please report this with the lines below)"]
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    lines += ["    " + line for line in trace.rstrip().splitlines()[-TRACE_LINES:]]
    return lines
