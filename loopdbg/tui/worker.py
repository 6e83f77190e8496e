"""The engine's thread: one command of the session at a time, never in the way of quitting.

Textual's own thread workers run in asyncio's default executor, whose threads the interpreter
waits for at exit: a ``continue`` on an endless loop would keep the process alive after the
screen closed. Here every command runs in a daemon thread of its own, and ``stop`` asks the
session to cancel (it looks between two iterations) and waits a bounded time. A thread still
running after that is inside one long kernel call; the caller may then end the process
(``loopdbg.tui.app.run_app`` does, with ``os._exit``).
"""

from __future__ import annotations

import threading
from typing import Callable

from loopdbg.debug.session import ERROR, Session, Stop
from loopdbg.errors import LoopdbgError

COMMANDS = {
    "next": "next", "back": "back", "step": "step", "finish": "finish", "continue": "continue_",
    "restart": "restart", "first": "first", "last": "last", "reverse": "reverse_continue",
    "step_node": "step_node", "jump": "jump",
}


class EngineThread:
    """Runs session commands in a daemon thread; ``done(stop, name)`` is called in that thread."""

    def __init__(self, session: Session, done: Callable[[Stop, str], None]):
        self.session = session
        self.done = done
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, name: str, *args) -> None:
        """Run command ``name`` (a key of ``COMMANDS``) of the session, with ``args``, in a new
        thread."""
        if self.running:
            raise RuntimeError("a command is already running")
        method = getattr(self.session, COMMANDS[name])
        self._thread = threading.Thread(target=self._run, args=(method, name, args), daemon=True,
                                        name=f"loopdbg-{name}")
        self._thread.start()

    def _run(self, method, name: str, args: tuple = ()) -> None:
        try:
            stop = method(*args)
        except LoopdbgError as exc:
            stop = Stop(kind=ERROR, reason=str(exc), event=self.session.current, error=exc)
        except Exception as exc:  # noqa: BLE001 - a bug must show, not crash the UI
            stop = Stop(kind=ERROR, reason=f"internal error: {type(exc).__name__}: {exc}",
                        event=self.session.current)
        self.done(stop, name)

    def stop(self, timeout: float = 0.6) -> bool:
        """Cancel the session's run and wait up to ``timeout`` s; True when no thread is left."""
        self.session.request_cancel()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running
