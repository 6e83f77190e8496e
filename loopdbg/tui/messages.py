"""Messages the UI posts to itself: the engine worker reports stops and failures through these."""

from __future__ import annotations

from textual.message import Message


class Stopped(Message):
    """The session stopped (a step, a breakpoint, the end, an error): refresh every panel."""

    def __init__(self, stop, command: str) -> None:
        super().__init__()
        self.stop = stop
        self.command = command


class Busy(Message):
    """A command started running in the worker thread (``running``) or ended."""

    def __init__(self, running: bool, command: str = "") -> None:
        super().__init__()
        self.running = running
        self.command = command
