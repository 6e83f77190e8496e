"""The terminal driver (loopdbg.tui.driver): keys read from a real pseudo-terminal reach the app as
Textual's driver makes them, a lone Escape too, without waiting for the next poll."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

pytest.importorskip("textual")
pytest.importorskip("termios")

import pty  # noqa: E402
import tty as termios_tty  # noqa: E402

from textual import events  # noqa: E402
from textual.drivers.linux_driver import LinuxDriver  # noqa: E402
from textual.drivers.headless_driver import HeadlessDriver  # noqa: E402

from loopdbg.tui import driver as driver_module  # noqa: E402
from loopdbg.tui.driver import QuickEscapeDriver, quick_escape  # noqa: E402


class Keys(QuickEscapeDriver):
    """The driver reading a pseudo-terminal of the test's, keeping what it would hand the app."""

    def __init__(self, fd: int):
        super().__init__(app=None)
        self.fileno = fd
        self.got: list[events.Event] = []

    def process_message(self, message) -> None:
        self.got.append(message)


def keys_of(driver) -> list[str]:
    return [m.key for m in driver.got if isinstance(m, events.Key)]


async def read_keys(chunks: list[bytes]) -> list[str]:
    """Type each chunk into a pseudo-terminal the driver reads, waiting for its key (however
    loaded the machine: up to 5 s); the keys the app would get."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    main, tty = pty.openpty()
    termios_tty.setraw(tty)                 # as the app's start makes its terminal: byte by byte
    try:
        driver = Keys(tty)
        thread = threading.Thread(target=driver.run_input_thread, daemon=True)
        thread.start()
        for chunk in chunks:
            before = len(keys_of(driver))
            os.write(main, chunk)
            for _ in range(500):
                if len(keys_of(driver)) > before:
                    break
                await asyncio.sleep(0.01)
        driver.exit_event.set()
        os.write(main, b" ")                           # wakes a long poll
        thread.join(5)
        assert not thread.is_alive()
        return keys_of(driver)
    finally:
        os.close(main)
        os.close(tty)
        for s, handler in saved.items():
            signal.signal(s, handler)


async def test_every_key_arrives_as_textual_makes_it_a_lone_escape_too():
    keys = await read_keys([b"n", b"\x1b[A", b"\x1b", b"+", b"\x1b[B", b"\x1b", b"q"])
    assert keys[:7] == ["n", "up", "escape", "plus", "down", "escape", "q"]


async def test_a_lone_escape_does_not_wait_for_the_next_poll(monkeypatch):
    """Textual's thread tells a lone Escape only when its poll of the terminal ends (every
    0.1 s): this one wakes when the parser's wait for the rest of a sequence is over. With its
    poll made 30 s long, each Escape still comes before the next key is typed."""
    monkeypatch.setattr(driver_module, "POLL", 30.0)
    keys = await read_keys([b"\x1b", b"n", b"\x1b", b"\x1b"])
    assert keys[:4] == ["escape", "n", "escape", "escape"]


def test_the_app_runs_on_it_where_textual_picks_its_linux_driver():
    assert quick_escape(LinuxDriver) is QuickEscapeDriver
    assert quick_escape(HeadlessDriver) is HeadlessDriver      # tests, the browser: theirs
