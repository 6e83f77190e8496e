"""Debugging sessions over the engine's events: stepping forward and back, breakpoints, watches.

The names below are imported at their first use (module ``__getattr__``), not with the package:
``loopdbg run`` prints its report with ``debug.report`` alone, without the session's modules
(breakpoints, expressions, jumps: ~10 ms of its start).
"""

from __future__ import annotations

import importlib

# Each name and the module that defines it.
_HOMES = {"Breakpoint": "breakpoints", "Breakpoints": "breakpoints", "Watch": "breakpoints",
          "Expression": "expr", "ExprError": "expr", "format_stop": "report",
          "Session": "session", "Stop": "stop"}

__all__ = ["Breakpoint", "Breakpoints", "Expression", "ExprError", "Session", "Stop", "Watch",
           "format_stop"]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'loopdbg.debug' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"loopdbg.debug.{home}"), name)
    globals()[name] = value
    return value
