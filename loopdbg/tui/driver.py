"""The terminal's keys on Linux and macOS: Textual's driver, with a lone Escape delivered as soon as
it can be told from the start of another key.

A terminal sends Escape as the byte ESC, which also starts the sequences of the arrows, the
function keys and the mouse (ESC [ A). A lone ESC is known to be Escape only once nothing follows
it for ``ESCDELAY`` ms (Textual's parser waits for that, as ncurses does). Textual's input thread
looks at that wait only when its 0.1 s poll of the terminal ends, so Escape (closing a group,
leaving a nested body) reached the app 100-200 ms after the key, where Enter took ~65 ms on a
1,364-layer body. This driver's thread looks again once the wait is over after every read, and
the wait is 25 ms unless ESCDELAY says otherwise (set in ``loopdbg.tui``, before Textual reads
it). Terminals that speak the kitty keyboard protocol (kitty, foot, WezTerm, Ghostty) send Escape
as a sequence of its own and never wait.

Anything this needs missing from the Textual installed, the thread is Textual's own.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder

from textual import constants
from textual.drivers.linux_driver import LinuxDriver

POLL = 0.1          # s between two looks at the parser's waits when nothing was typed
MARGIN = 0.002      # s past the parser's wait: its clock and the selector's differ a little


def parser_class():
    """Textual's parser of terminal input, or None (a Textual that has moved it)."""
    try:
        from textual._xterm_parser import XTermParser
    except ImportError:
        return None
    return XTermParser


class QuickEscapeDriver(LinuxDriver):
    """``LinuxDriver`` whose input thread wakes when a lone Escape's wait ends."""

    def run_input_thread(self) -> None:
        parser = parser_class()
        fd, stop = getattr(self, "fileno", None), getattr(self, "exit_event", None)
        if parser is None or not isinstance(fd, int) or stop is None:
            super().run_input_thread()
            return
        parser = parser(getattr(self, "_debug", False))
        wait = getattr(constants, "ESCAPE_DELAY", POLL) + MARGIN
        decode = getincrementaldecoder("utf-8")().decode
        selector = selectors.SelectSelector()
        selector.register(fd, selectors.EVENT_READ)
        typed = False            # a read last time: the parser may be waiting on its end
        try:
            while not stop.is_set():
                ready = selector.select(min(wait, POLL) if typed else POLL)
                typed = False
                if ready:
                    text = decode(os.read(fd, 4096))
                    typed = bool(text)
                    if text:                        # nothing: stdin was a pipe, now closed
                        for event in parser.feed(text):
                            self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for _ in parser.feed(""):           # the end: what it still holds is dropped
                    pass
            except Exception:  # noqa: BLE001 - so is an unfinished sequence
                pass


def quick_escape(driver_class: type) -> type:
    """The driver the app runs on: this one where Textual would pick its Linux driver."""
    return QuickEscapeDriver if driver_class is LinuxDriver else driver_class
