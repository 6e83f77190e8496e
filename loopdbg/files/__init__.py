"""Every file a user names goes through here: read only if it is a regular file and within a
budget (``read``), written only where the user said and never over an input (``write``).

Imports nothing of loopdbg but ``errors``, so the readers in ``ir`` and every command can use it.
"""

from __future__ import annotations

import stat


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, for messages: "a folder", "a device", ..."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


from loopdbg.files.write import (Output, OutputError, check_output,  # noqa: E402
                                 distinct_outputs, open_recording, same_file)

__all__ = ["kind_of", "Output", "OutputError", "check_output", "distinct_outputs",
           "open_recording", "same_file"]
