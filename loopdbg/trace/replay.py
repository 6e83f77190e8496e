"""Replay: open a trace as a complete ``TraceTimeline``, so a debugging session can step through it.

    timeline = open_trace("run.ltrace")
    session = Session(timeline.engine, timeline.inputs, timeline=timeline, source=timeline.source)
    session.goto("loop", 5)          # any recorded iteration, forward and back, in O(1)

The model the trace names must still be there and unchanged (its sha256 is checked); the inputs
come from the trace itself.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from loopdbg.engine.runner import Engine
from loopdbg.trace.format import TraceError
from loopdbg.trace.reader import TraceReader
from loopdbg.trace.timeline import TraceTimeline

__all__ = ["TraceTimeline", "open_trace"]


def open_trace(trace_path) -> TraceTimeline:
    """The timeline of a trace file; the model it names must be there, unchanged."""
    from loopdbg.ir.load import read_model

    reader = TraceReader(trace_path)
    try:
        model_info = (reader.header or {}).get("model") or {}
        path = model_info.get("path")
        if not path or not Path(path).exists():
            raise TraceError(f"{trace_path}: the model it was recorded from ({path or 'unknown'}) "
                             f"is not there, so it cannot be replayed; `loopdbg trace show` still "
                             f"reads the recorded values.")
        want = model_info.get("xml_sha256")
        if want and hashlib.sha256(Path(path).read_bytes()).hexdigest() != want:
            raise TraceError(f"{trace_path}: {path} changed since the trace was recorded (its "
                             f"sha256 differs), so the replay would not show the recorded run.")
        return TraceTimeline(reader, Engine(read_model(path)))
    except BaseException:
        reader.close()
        raise
