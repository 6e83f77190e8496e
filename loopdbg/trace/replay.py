"""Replay: open a trace as a complete ``TraceTimeline``, so a debugging session can step through it.

    timeline = open_trace("run.ltrace")
    session = Session(timeline.engine, timeline.inputs, timeline=timeline, source=timeline.source)
    session.goto("loop", 5)          # any recorded iteration, forward and back, in O(1)

The model the trace names must still be there and unchanged (its sha256 is checked); the inputs
come from the trace itself.
"""

from __future__ import annotations

from loopdbg.engine.runner import Engine
from loopdbg.trace.reader import TraceReader
from loopdbg.trace.timeline import TraceTimeline

__all__ = ["TraceTimeline", "open_trace"]


def open_trace(trace_path) -> TraceTimeline:
    """The timeline of a trace file; the model it names must be there, unchanged (its .xml, .bin
    and the inputs the trace stores are checked against the sha256 recorded with them)."""
    from loopdbg.trace.record import open_recorded_model

    reader = TraceReader(trace_path)
    try:
        return TraceTimeline(reader, Engine(open_recorded_model(reader, trace_path)))
    except BaseException:
        reader.close()
        raise
