"""The Textual UI. Only this package imports textual (and rich)."""

import os

# A lone Escape is told from the start of another key's sequence by a wait (ncurses's ESCDELAY,
# which Textual reads when first imported; 100 ms there): 25 ms unless the person set it.
# loopdbg.tui.driver wakes when it ends.
os.environ.setdefault("ESCDELAY", "25")
