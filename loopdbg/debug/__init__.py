"""Debugging sessions over the engine's events: stepping forward and back, breakpoints, watches."""

from loopdbg.debug.breakpoints import Breakpoint, Breakpoints, Watch
from loopdbg.debug.expr import Expression, ExprError
from loopdbg.debug.report import format_stop
from loopdbg.debug.session import Session, Stop

__all__ = ["Breakpoint", "Breakpoints", "Expression", "ExprError", "Session", "Stop", "Watch",
           "format_stop"]
