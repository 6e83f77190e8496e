"""TraceReader: find any (loop, iteration) of a trace in O(1), and walk all frames in order.

Opening, indexing and recovering a damaged file is ``scan.TraceFile``'s part; this is the query
API on top of it. Every frame read is checked against its checksum; a damaged one raises
``TraceError`` naming it.
"""

from __future__ import annotations

import struct
from typing import Iterator

import numpy as np

from loopdbg.text import listing
from loopdbg.trace import format as fmt
from loopdbg.trace.frames import IterationFrame, LoopRecord, Record
from loopdbg.trace.scan import TraceFile

__all__ = ["IterationFrame", "LoopRecord", "Record", "TraceReader"]


class TraceReader(TraceFile):
    """A trace file opened for reading: ``TraceReader(path, scan=False)``; close it, or use it as
    a context manager."""

    # -- queries ----------------------------------------------------------------------------
    def loops(self) -> list[LoopRecord]:
        """Every loop execution in the order it started."""
        ix = self.index
        out = []
        for row in ix.rows():
            path, outer = ix.key(row)
            info = ix.path_info.get(path, {})
            it = int(ix.ex_iterations[row])
            trip = int(ix.ex_trip[row])
            out.append(LoopRecord(path, outer, info.get("kind"), info.get("layer_name"),
                                  None if trip < 0 else trip, ix.count(row),
                                  None if it < 0 else it, ix.reason(row), ix.errors.get(row)))
        return out

    def paths(self) -> list[str]:
        return list(dict.fromkeys(self.index.key(r)[0] for r in self.index.rows()))

    def frame(self, path: str, iteration: int, outer: tuple = ()) -> IterationFrame:
        """Iteration ``iteration`` of the execution (path, outer) of a loop, in O(1)."""
        ix = self.index
        outer = tuple(outer)
        row = ix.row(path, outer)
        if row is None:
            raise fmt.TraceError(self._no_loop(path, outer))
        n = ix.count(row)
        if not 0 <= iteration < n:
            rng = f"0..{n - 1}" if n else "none"
            raise fmt.TraceError(f"{self.path}: loop '{path}'{_at(outer)} has {n} recorded "
                               f"iteration{'s' if n != 1 else ''} ({rng}); there is no iteration "
                               f"{iteration}.")
        off, _ = ix.locate(row, iteration)
        what = f"the frame of loop '{path}'{_at(outer)} iteration {iteration}"
        if off == 0:
            raise fmt.TraceError(f"{self.path}: {what} is missing (it was damaged).")
        rec = self._last_batch if self._last_batch is not None and self._last_batch.offset == off \
            else None
        if rec is None:
            rec = self._decode(off, what)
            if rec.kind == fmt.BATCH:
                self._last_batch = rec           # the frames around it are in it too
        f = rec.meta
        if rec.kind == fmt.BATCH:
            if f.path != path or f.outer != outer or not f.first <= iteration < f.first + f.count:
                raise self._damaged(what, off, "the index points to another frame")
            return f.iteration(iteration)
        if rec.kind != fmt.ITERATION or f.path != path or f.iteration != iteration or f.outer != outer:
            raise self._damaged(what, off, "the index points to another frame")
        return f

    def frames(self, path: str, outer: tuple | None = None) -> Iterator[IterationFrame]:
        """The iterations of loop ``path`` in order (every execution, or just ``outer``'s)."""
        ix = self.index
        if outer is not None:
            rows = [ix.row(path, tuple(outer))]
            if rows[0] is None:
                raise fmt.TraceError(self._no_loop(path, tuple(outer)))
        else:
            rows = ix.rows(path)
            if not rows:
                raise fmt.TraceError(self._no_loop(path, ()))
        for row in rows:
            _, o = ix.key(row)
            for k in range(ix.count(row)):
                yield self.frame(path, k, o)

    def executions(self, path: str) -> list[tuple[int, ...]]:
        """The outer tuples of every execution of loop ``path``."""
        return [self.index.key(r)[1] for r in self.index.rows(path)]

    def loop_start(self, path: str, outer: tuple = ()) -> dict:
        """The LoopStarted of an execution: kind, trip count, and the loop's schema (roles...)."""
        row = self.index.row(path, tuple(outer))
        if row is None:
            raise fmt.TraceError(self._no_loop(path, tuple(outer)))
        off = int(self.index.ex_start[row])
        if off < 0:
            raise fmt.TraceError(f"{self.path}: the start of loop '{path}'{_at(outer)} is not "
                               f"in the trace.")
        meta = self._decode(off, f"the start frame of loop '{path}'{_at(outer)}").meta
        if "schema" not in meta:                 # written with the loop's first execution only
            first = self.index.rows(path)[0]
            if first != row and int(self.index.ex_start[first]) >= 0:
                meta["schema"] = self._decode(int(self.index.ex_start[first]),
                                              f"the start frame of loop '{path}'").meta.get("schema")
        return meta

    def loop_outputs(self, path: str, outer: tuple = ()) -> dict[str, np.ndarray] | None:
        """The last-value outputs of an execution (concatenated ones are its scan slices)."""
        row = self.index.row(path, tuple(outer))
        if row is None:
            raise fmt.TraceError(self._no_loop(path, tuple(outer)))
        off = int(self.index.ex_finish[row])
        if off < 0:
            return None
        rec = self._decode(off, f"the finish frame of loop '{path}'{_at(outer)}")
        return {n: a for _, n, a in rec.arrays}

    def body_inputs(self, path: str, iteration: int, outer: tuple = ()) -> dict[str, np.ndarray]:
        """Every body Parameter's value fed to an iteration (for replay), from at most 3 frames."""
        outer = tuple(outer)
        first = self.frame(path, 0, outer)
        values = dict(first.inputs or {})
        if iteration == 0:
            return values
        here = self.frame(path, iteration, outer)
        prev = self.frame(path, iteration - 1, outer)
        values.update(prev.back_edges)
        values.update(here.sliced_inputs)
        try:
            schema = self.loop_start(path, outer).get("schema") or {}
        except fmt.TraceError:
            schema = {}
        cur = schema.get("current_iteration")
        if cur and not cur.get("fed_back"):
            values[cur["param"]] = np.array(iteration, dtype=np.dtype(cur["dtype"])).reshape(
                tuple(cur["shape"]) if tuple(cur["shape"]) == (1,) else ())
        if schema.get("condition_param"):
            values[schema["condition_param"]] = np.asarray(prev.cond)
        return values

    def notices(self) -> list[dict]:
        return [self._decode(int(o), "a notice frame").meta for o in self.index.notices]

    def outputs(self) -> dict[str, np.ndarray] | None:
        """The model's outputs (None when the run did not finish in this trace)."""
        if self.index.run_finish < 0:
            return None
        rec = self._decode(self.index.run_finish, "the run-finished frame")
        return {n: a for _, n, a in rec.arrays}

    def model_inputs(self) -> dict[str, np.ndarray] | None:
        if self.index.inputs < 0:
            return None
        rec = self._decode(self.index.inputs, "the inputs frame")
        return {n: a for _, n, a in rec.arrays}

    def records(self) -> Iterator[Record]:
        """Every good frame in file order, decoded (the header and footer are left out)."""
        for off, kind, data in self.raw():
            yield self.decode(off, kind, data)

    def raw(self, skipped: list | None = None) -> Iterator[tuple[int, int, bytes]]:
        """Every good frame in file order, undecoded: (offset, kind, frame bytes with head and
        checksum). Two frames with the same bytes hold the same thing. A BATCH frame is given as
        the ITERATION frames it stands for, byte for byte as if written one by one, each with the
        batch's offset (so traces compare the same however their iterations were batched).
        ``skipped``: a list given the sentence of each damaged frame the walk stepped over."""
        for off, kind, data in self._walk(skipped=skipped):
            if kind == fmt.BATCH:
                what = f"the {fmt.KIND_NAMES[kind]} frame"
                try:
                    meta, arrays = fmt.parse_body(data, fmt.HEAD.size, len(data) - fmt.CRC.size)
                    frames = list(fmt.batch_iterations(meta, arrays))
                except (ValueError, struct.error, UnicodeDecodeError, fmt.TraceError) as exc:
                    raise self._damaged(what, off,
                                        f"its contents cannot be decoded ({exc})") from None
                for frame in frames:
                    yield off, fmt.ITERATION, frame
            elif kind != fmt.HEADER:
                yield off, kind, data

    def decode(self, off: int, kind: int, data: bytes) -> Record:
        """The Record of a frame given by ``raw``."""
        return self._decode_data(off, kind, data, f"the {fmt.KIND_NAMES.get(kind)} frame")

    # -- summary ----------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """complete / interrupted / error / stopped, or truncated when the END frame is missing."""
        if self.end is None:
            return "truncated"
        return self.end.get("status", "complete")

    def _no_loop(self, path: str, outer: tuple) -> str:
        paths = self.paths()
        if path in paths:
            execs = self.executions(path)
            shown = ", ".join(_outer_text(o) for o in execs[:5]) + (", ..." if len(execs) > 5 else "")
            return (f"{self.path}: loop '{path}' has no execution{_at(outer)}; it ran with outer "
                    f"iterations {shown}.")
        known = listing(f"'{p}'" for p in paths) or "none"
        return f"{self.path}: no loop '{path}' in this trace; its loops: {known}."


def _at(outer: tuple) -> str:
    return f" at outer iterations {_outer_text(outer)}" if outer else ""


def _outer_text(outer: tuple) -> str:
    return "(" + ", ".join(map(str, outer)) + ")" if outer else "()"
