"""Replay: a debugging session whose timeline is a trace file, any iteration in O(1).

Every recorded iteration is addressed by its ordinal (the order the run produced them). To show
one, the replay reads what its body was fed from the trace (at most three frames) and runs the
loop's compiled body once on it, so a replayed stop carries exactly what the live one did: every
body Parameter, Result and node value, the back edges, the scan slices and the partial
concatenations (read lazily from the frames before it).

The model the trace names must still be there and unchanged (its sha256 is checked); the inputs
come from the trace itself.
"""

from __future__ import annotations

from loopdbg.debug.session import Session
from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.runner import Engine
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


class TraceTimeline:
    """Every iteration of a trace by ordinal, rebuilt as an ``IterationDone`` on demand."""

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
            raise TraceError(f"{reader.path}: the trace has loop(s) {', '.join(missing)} that the "
                             f"model does not have; was it recorded from another model?")

    def __len__(self) -> int:
        return len(self.keys)

    def ordinal(self, path: str, iteration: int, outer: tuple = ()) -> int:
        try:
            return self._ordinal[(path, tuple(outer), iteration)]
        except KeyError:
            raise TraceError(f"{self.reader.path}: there is no recorded iteration {iteration} of "
                             f"loop '{path}'" + (f" at outer iterations {list(outer)}" if outer else "")
                             + ".") from None

    def loop_end(self, path: str, outer: tuple) -> ev.LoopFinished | None:
        return self._reasons.get((path, tuple(outer)))

    def event(self, n: int) -> ev.IterationDone:
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
        body_out = _run_body(spec, body_in)
        count = self._counts[(path, outer)]
        collected = tuple(_Pieces(reader, path, outer, o.name, count) for o in spec.concats)
        end = self._reasons.get((path, outer)) if not frame.continues else None
        return ev.IterationDone(path, k, frame.trip_count, frame.cond, frame.continues, spec,
                                body_in, body_out, collected, outer, frame.nodes,
                                stop_reason=end.reason if end is not None else None)


def _run_body(spec, body_in) -> tuple:
    result = spec.body.run(RunContext(), *body_in)
    if spec.body.is_generator:
        try:
            while True:
                next(result)
        except StopIteration as stop:
            result = stop.value
    return tuple(result)


class ReplaySession(Session):
    """A Session whose every iteration comes from a trace: forward, back, or straight to one."""

    def __init__(self, engine: Engine, timeline: TraceTimeline, **options):
        self.timeline = timeline
        reader = timeline.reader
        inputs = reader.model_inputs() or {}
        super().__init__(engine, inputs, source=f"trace {reader.path}", **options)

    def restart(self):
        stop = super().restart()
        self._gen = None                       # nothing is run: the trace is the timeline
        self._frontier = len(self.timeline)
        reader = self.timeline.reader
        outputs = reader.outputs()
        if outputs is not None:
            self.finished = ev.RunFinished(outputs)
        self.notices = [ev.Notice(n.get("path", ""), n.get("message", ""), n.get("rule"))
                        for n in reader.notices()]
        return stop

    @property
    def oldest(self) -> int:
        return 0

    @property
    def newest(self) -> int:
        return len(self.timeline) - 1

    def _at(self, pos: int) -> ev.IterationDone:
        event = self.timeline.event(pos)
        if not event.continues:
            end = self.timeline.loop_end(event.path, event.outer)
            if end is not None:
                self.loop_ends[event.path] = end
        return event

    def _previous(self, event):
        if event.iteration == 0:
            return None
        try:
            return self._at(self.timeline.ordinal(event.path, event.iteration - 1, event.outer))
        except TraceError:
            return None

    def goto(self, path: str, iteration: int, outer: tuple = ()):
        """Straight to one recorded iteration (O(1) in the length of the trace)."""
        return self._jump(self.timeline.ordinal(path, iteration, outer),
                          f"iteration {iteration} of loop {path}")


def open_replay(trace_path, **options) -> ReplaySession:
    """A ReplaySession on a trace file; the model it names must be there, unchanged."""
    from loopdbg.trace.record import open_recorded_model

    reader = TraceReader(trace_path)
    engine = Engine(open_recorded_model(reader, trace_path))    # .xml, .bin, inputs: unchanged
    return ReplaySession(engine, TraceTimeline(reader, engine), **options)
