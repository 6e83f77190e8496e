"""Timelines read from traces: a recorded run, any iteration by ordinal or by where it ran, in O(1).

To show an iteration, the timeline reads what its body was fed from the trace (at most three
frames) and runs the loop's compiled body once on it, so a replayed iteration carries exactly what
the live one did: every body Parameter, Result and node value, the back edges, the scan slices and
the partial concatenations (read lazily from the frames before it).

* ``TraceTimeline``: a trace file, complete: a session on it is a replay.
* ``RecordingTimeline``: the trace a live session is recording, read back as far as it is written;
  the live timeline's ``older`` part, for stepping back past the in-memory history.
"""

from __future__ import annotations

from functools import cached_property

from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.runner import Engine
from loopdbg.engine.timeline import Timeline
from loopdbg.errors import LoopdbgError
from loopdbg.text import listing
from loopdbg.trace.format import TraceError
from loopdbg.trace.reader import TraceReader


class _Pieces:
    """The scan pieces of one concatenated output of one loop execution, read on demand."""

    def __init__(self, reader: TraceReader, path: str, outer: tuple, name: str, count: int):
        self.reader, self.path, self.outer, self.name, self.count = reader, path, outer, name, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(self.count))]
        return self.reader.frame(self.path, index, self.outer).scan_slices[self.name]


class TraceTimeline(Timeline):
    """Every iteration of a trace by ordinal, rebuilt as an ``IterationDone`` on demand."""

    complete = True

    def __init__(self, reader: TraceReader, engine: Engine):
        self.reader = reader
        self.engine = engine
        ix = reader.index
        keys = []
        self._counts: dict[tuple, int] = {}
        self._reasons: dict[tuple, ev.LoopFinished] = {}
        for row in ix.rows():
            path, outer = ix.key(row)
            offsets = ix.offsets(row)
            self._counts[(path, outer)] = len(offsets)
            for k, off in enumerate(offsets):
                if int(off) > 0:
                    keys.append((int(off), path, outer, k))
        for loop in reader.loops():
            if loop.reason is not None:
                self._reasons[(loop.path, loop.outer)] = ev.LoopFinished(
                    loop.path, loop.iterations or 0, loop.reason, {}, loop.outer, loop.error)
        keys.sort()
        self.keys = keys
        self._ordinal = {(p, o, k): n for n, (_, p, o, k) in enumerate(keys)}
        missing = sorted(set(p for _, p, _, _ in keys) - set(engine.loops))
        if missing:
            raise TraceError(f"{reader.path}: the trace has loop(s) {listing(missing)} that the "
                             f"model does not have; was it recorded from another model?")

    @property
    def inputs(self) -> dict:
        """The model inputs the trace holds ({} when it was recorded without them)."""
        return self.reader.model_inputs() or {}

    @property
    def source(self) -> str:
        return f"trace {self.reader.path}"

    @cached_property
    def finished(self) -> ev.RunFinished | None:
        outputs = self.reader.outputs()
        return ev.RunFinished(outputs) if outputs is not None else None

    @cached_property
    def notices(self) -> list[ev.Notice]:
        return [ev.Notice(n.get("path", ""), n.get("message", ""), n.get("rule"))
                for n in self.reader.notices()]

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, path: str, iteration: int, outer: tuple = ()) -> int | None:
        return self._ordinal.get((path, tuple(outer), iteration))

    def index(self, path: str, iteration: int, outer: tuple = ()) -> int:
        n = self.find(path, iteration, outer)
        if n is None:
            raise TraceError(f"{self.reader.path}: there is no recorded iteration {iteration} of "
                             f"loop '{path}'" + (f" at outer iterations {list(outer)}" if outer else "")
                             + ".")
        return n

    def iterations(self, path: str, outer: tuple = ()) -> list[int]:
        outer = tuple(outer)
        found = (self._ordinal.get((path, outer, k)) for k in range(self._counts.get((path, outer), 0)))
        return [n for n in found if n is not None]

    def loop_end(self, path: str, outer: tuple = ()) -> ev.LoopFinished | None:
        return self._reasons.get((path, tuple(outer)))

    def at(self, n: int) -> ev.IterationDone:
        if n < 0:
            raise IndexError(n)
        _, path, outer, k = self.keys[n]
        reader = self.reader
        frame = reader.frame(path, k, outer)
        spec = self.engine.loops[path]
        fed = reader.body_inputs(path, k, outer)
        try:
            body_in = tuple(fed[name] for name in spec.param_names)
        except KeyError as exc:
            raise TraceError(f"{reader.path}: iteration {k} of loop '{path}' lacks the body input "
                             f"{exc}; the trace cannot be replayed.") from None
        try:
            body_out = _run_body(spec, body_in)
        except LoopdbgError:
            raise
        except Exception as exc:         # a kernel's (MemoryError past the budget): one sentence
            raise spec.body.failure(exc, f"{reader.path}: replaying loop '{path}', iteration "
                                         f"{k}: ", "the body", loop_path=path,
                                    iteration=k) from None
        count = self._counts[(path, outer)]
        collected = tuple(_Pieces(reader, path, outer, o.name, count) for o in spec.concats)
        end = self._reasons.get((path, outer)) if not frame.continues else None
        return ev.IterationDone.make(path, k, frame.trip_count, frame.cond, frame.continues, spec,
                                body_in, body_out, collected, outer, frame.nodes,
                                stop_reason=end.reason if end is not None else None)


class RecordingTimeline(Timeline):
    """The trace being written by ``writer``, read back up to its last written frame.

    The frames written so far are synced to disk and read back; the reader is reopened only when
    more were written since the last question. Loop ends are left to the live session (which saw
    them), so ``loop_end`` says nothing here.
    """

    def __init__(self, writer, engine: Engine):
        self.writer = writer
        self.engine = engine
        self._read: tuple[int, TraceTimeline] | None = None

    def _timeline(self) -> TraceTimeline:
        written = self.writer.frames
        if self._read is None or self._read[0] != written:
            self.writer.sync()
            if self._read is not None:
                self._read[1].reader.close()
            reader = TraceReader(self.writer.path, scan=True)
            self._read = (written, TraceTimeline(reader, self.engine))
        return self._read[1]

    def __len__(self) -> int:
        return len(self._timeline())

    def at(self, n: int) -> ev.IterationDone:
        return self._timeline().at(n)

    def find(self, path: str, iteration: int, outer: tuple = ()) -> int | None:
        return self._timeline().find(path, iteration, outer)

    def iterations(self, path: str, outer: tuple = ()) -> list[int]:
        return self._timeline().iterations(path, outer)


def _run_body(spec, body_in) -> tuple:
    result = spec.body.run(RunContext(), *body_in)
    if spec.body.is_generator:
        try:
            while True:
                next(result)
        except StopIteration as stop:
            result = stop.value
    return tuple(result)
