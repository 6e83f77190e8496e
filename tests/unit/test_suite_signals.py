"""The suite's own processes handle Ctrl-C as Python sets it, wherever the suite was started
(tests/conftest.py ``_interruptible``): the tests of what Ctrl-C does to a run need it."""

from __future__ import annotations

import signal
import subprocess
import sys


def test_this_test_process_turns_ctrl_c_into_keyboard_interrupt():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_program_a_test_starts_gets_python_s_own_handler():
    out = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal("
                          "signal.SIGINT) is signal.default_int_handler)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
