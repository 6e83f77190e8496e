"""TraceReader: open a trace file, find any (loop, iteration) in O(1), and walk all frames in order.

A trace with a valid footer opens with three small reads (preamble and header, locator, footer).
Without one (the recording crashed, was killed, or the disk filled up), the reader scans the file
once, keeps every complete frame whose checksum holds, and says that the file was truncated.
Every frame read is checked against its checksum; a damaged one raises ``TraceError`` naming it.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from loopdbg.trace import format as F
from loopdbg.trace.index import Index

_GROUP_ATTR = {F.BACK_EDGES: "back_edges", F.SCAN_SLICES: "scan_slices",
               F.SLICED_INPUTS: "sliced_inputs", F.NODES: "nodes", F.BODY_INPUTS: "inputs"}


@dataclass
class IterationFrame:
    """One recorded body iteration, as ``IterationDone`` showed it."""

    path: str
    iteration: int
    trip_count: int | None
    cond: bool
    continues: bool
    outer: tuple[int, ...]
    back_edges: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    scan_slices: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    sliced_inputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    nodes: dict[str, np.ndarray] | None = field(default=None, repr=False)
    inputs: dict[str, np.ndarray] | None = field(default=None, repr=False)   # iteration 0 only
    offset: int = -1

    def tensors(self) -> dict[str, np.ndarray]:
        """Every array of the frame, as ``group/name`` (groups: back_edges, scan_slices,
        sliced_inputs, inputs, nodes)."""
        out = {}
        for attr in ("back_edges", "scan_slices", "sliced_inputs", "inputs", "nodes"):
            for name, a in (getattr(self, attr) or {}).items():
                out[f"{attr}/{name}"] = a
        return out

    def value(self, name: str) -> np.ndarray:
        """A tensor by name: ``group/name``, or a bare name looked up in every group."""
        if "/" in name:
            group, _, bare = name.partition("/")
            d = getattr(self, group, None) if group in _GROUP_ATTR.values() else None
            if isinstance(d, dict) and bare in d:
                return d[bare]
        for attr in ("back_edges", "scan_slices", "sliced_inputs", "nodes", "inputs"):
            d = getattr(self, attr)
            if d and name in d:
                return d[name]
        raise KeyError(name)


@dataclass
class LoopRecord:
    """One execution of a loop as the trace holds it."""

    path: str
    outer: tuple[int, ...]
    kind: str | None
    layer_name: str | None
    trip_count: int | None
    recorded: int                   # iteration frames present
    iterations: int | None          # what LoopFinished said (None: the trace ends before that)
    reason: str | None
    error: str | None

    @property
    def reason_text(self) -> str:
        from loopdbg.engine.events import STOP_TEXT
        if self.reason is None:
            return "the trace ends before it finished"
        return STOP_TEXT.get(self.reason, self.reason)


@dataclass
class Record:
    """Any frame, decoded: its kind, offset, meta (dict, or an IterationFrame) and arrays."""

    kind: int
    offset: int
    meta: object
    arrays: list = field(default_factory=list, repr=False)   # [(group, name, array)]

    @property
    def kind_name(self) -> str:
        return F.KIND_NAMES.get(self.kind, f"kind {self.kind}")


class TraceReader:
    """A trace file opened for reading (see the module docstring)."""

    def __init__(self, path, *, scan: bool = False):
        self.path = str(path)
        p = Path(self.path)
        if not p.exists():
            raise F.TraceError(f"{self.path}: no such file.")
        if p.is_dir():
            raise F.TraceError(f"{self.path} is a folder, not a trace file.")
        try:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as exc:
            raise F.TraceError(f"cannot open {self.path}: {exc.strerror or exc}.") from None
        try:
            self.size = os.fstat(self._fd).st_size
            self._open(scan)
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise

    # -- opening ----------------------------------------------------------------------------
    def _open(self, force_scan: bool) -> None:
        raw = os.pread(self._fd, F.PREAMBLE.size, 0)
        if self.size == 0:
            raise F.TraceError(f"{self.path} is empty (the recording wrote nothing).")
        if raw[:len(F.MAGIC)] == F.MAGIC[:len(raw)] and len(raw) < F.PREAMBLE.size:
            raise F.TraceError(f"{self.path} is truncated inside its first 16 bytes; it holds "
                               f"nothing.")
        if len(raw) < F.PREAMBLE.size or raw[:len(F.MAGIC)] != F.MAGIC:
            raise F.TraceError(f"{self.path} is not a loopdbg trace (it does not start with the "
                               f"trace magic bytes).")
        _, major, minor = F.PREAMBLE.unpack(raw)
        self.version = (major, minor)
        if major != F.VERSION[0]:
            raise F.TraceError(f"{self.path} is a version {major}.{minor} trace; this loopdbg "
                               f"reads version {F.VERSION[0]}.x traces.")
        self.problems: list[str] = []
        self.truncated = False
        self.index_damaged = False
        self.valid_end = self.size             # end of the last good frame (scan mode)
        head = os.pread(self._fd, F.HEAD.size, F.PREAMBLE.size)
        if len(head) == F.HEAD.size and head[:4] == F.SYNC and \
                F.PREAMBLE.size + F.HEAD.size + F.HEAD.unpack(head)[4] + F.CRC.size > self.size:
            raise F.TraceError(f"{self.path} is truncated inside its header frame; it holds no "
                               f"recorded frames.")
        if len(head) < F.HEAD.size:
            raise F.TraceError(f"{self.path} is truncated before its header frame ended; it holds "
                               f"no recorded frames.")
        kind, data = self._read(F.PREAMBLE.size, "the header frame")
        if kind != F.HEADER:
            raise F.TraceError(f"{self.path}: the first frame is not a header.")
        meta, _ = F.parse_body(data, F.HEAD.size, len(data) - F.CRC.size)
        self.header: dict = json.loads(meta)
        self.index: Index | None = None
        if not force_scan:
            self.index = self._load_footer()
        if self.index is None:
            self.truncated = not self.index_damaged
            self._scan()
        self.end = self._end_meta()

    def _load_footer(self) -> Index | None:
        if self.size < F.PREAMBLE.size + F.LOCATOR.size:
            return None
        loc = F.parse_locator(os.pread(self._fd, F.LOCATOR.size, self.size - F.LOCATOR.size))
        if loc is None:
            return None                     # no locator at the end: the file was cut short
        if loc[0] + loc[1] != self.size - F.LOCATOR.size:
            self.index_damaged = True
            return None
        try:
            kind, data = self._read(loc[0], "the footer index")
            if kind != F.FOOTER:
                return None
            meta, arrays = F.parse_body(data, F.HEAD.size, len(data) - F.CRC.size)
            return Index.from_footer(json.loads(meta), {n: a for _, n, a in arrays})
        except (F.TraceError, ValueError, KeyError, TypeError, json.JSONDecodeError):
            self.index_damaged = True
            return None

    def _scan(self) -> None:
        ix = Index()
        for off, kind, data in self._walk(index_only=True):
            ix.frames += 1
            if kind == F.ITERATION:
                f = _iteration_meta(data)
                row = ix.row(f[0], f[1])
                if row is None:
                    row = ix.start(f[0], f[1], -1, f[3])
                offs = ix.per_row[row]
                k = f[2]
                if k >= len(offs):
                    offs.extend([0] * (k - len(offs) + 1))
                offs[k] = off
            elif kind in (F.LOOP_START, F.LOOP_FINISH):
                meta = json.loads(_meta_bytes(data))
                path, outer = meta["path"], tuple(meta["outer"])
                row = ix.row(path, outer)
                if kind == F.LOOP_START:
                    ix.path_info.setdefault(path, {"kind": meta.get("kind"),
                                                   "layer_name": meta.get("layer_name"),
                                                   "layer_id": meta.get("layer_id")})
                    if row is None or ix.ex_start[row] >= 0:
                        ix.start(path, outer, off, meta.get("trip_count"))
                    else:
                        ix.ex_start[row] = off
                else:
                    if row is None:
                        row = ix.start(path, outer, -1, None)
                    ix.finish(row, off, meta["iterations"], meta["reason"], meta.get("error"))
            elif kind == F.NOTICE:
                ix.notices.append(off)
            elif kind == F.INPUTS:
                ix.inputs = off
            elif kind == F.RUN_FINISH:
                ix.run_finish = off
            elif kind == F.END:
                ix.end = off
        self.index = ix
        if self.index_damaged:
            self.problems.insert(0, "the footer index is damaged; the frames were found by "
                                    "scanning the file")

    def _walk(self, index_only: bool = False) -> Iterator[tuple[int, int, bytes]]:
        """Every good frame in file order: (offset, kind, frame bytes). Notes damage in problems."""
        if self.size <= F.PREAMBLE.size:
            self.valid_end = self.size
            return
        with open(self.path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield from self._walk_map(mm, index_only)
        finally:
            mm.close()

    def _walk_map(self, mm, index_only: bool):
        size = len(mm)
        pos = F.PREAMBLE.size
        head_size, crc_size = F.HEAD.size, F.CRC.size
        unpack_head = F.HEAD.unpack_from
        problems = self.problems if index_only else []
        good_end = pos
        while pos + head_size <= size:
            sync, kind, _, _, blen = unpack_head(mm, pos)
            end = pos + head_size + blen + crc_size
            ok = sync == F.SYNC and end <= size
            if ok:
                data = mm[pos:end]
                ok = F.crc_ok(data)
            if not ok:
                nxt = self._next_frame(mm, pos + 1)
                if nxt < 0 and not (sync == F.SYNC and end <= size):
                    break                   # an incomplete last frame (or locator): truncated
                if kind == F.FOOTER or self._is_locator(mm, pos):
                    pass
                elif sync == F.SYNC:
                    problems.append(f"the {F.KIND_NAMES.get(kind, 'unknown')} frame at byte "
                                    f"{pos} is damaged (checksum mismatch); it was skipped")
                else:
                    problems.append(f"bytes {pos}..{nxt if nxt >= 0 else size} are not a frame; "
                                    f"they were skipped")
                if nxt < 0:
                    break
                pos = nxt
                continue
            good_end = end
            if kind != F.FOOTER:
                yield pos, kind, data
            pos = end
        if index_only:
            self.valid_end = good_end

    def _is_locator(self, mm, pos: int) -> bool:
        return len(mm) - pos == F.LOCATOR.size and F.parse_locator(mm[pos:]) is not None

    @staticmethod
    def _next_frame(mm, start: int) -> int:
        """Offset of the next position at or after ``start`` holding a complete, valid frame."""
        size = len(mm)
        while True:
            p = mm.find(F.SYNC, start)
            if p < 0 or p + F.HEAD.size > size:
                return -1
            _, _, _, _, blen = F.HEAD.unpack_from(mm, p)
            end = p + F.HEAD.size + blen + F.CRC.size
            if end <= size and F.crc_ok(mm[p:end]):
                return p
            start = p + 1

    # -- reading frames ---------------------------------------------------------------------
    def _read(self, off: int, what: str) -> tuple[int, bytes]:
        """(kind, frame bytes) of the frame at ``off``, checked; TraceError naming ``what``."""
        if self._fd < 0:
            raise F.TraceError(f"the trace {self.path} is closed.")
        head = os.pread(self._fd, F.HEAD.size, off)
        if len(head) < F.HEAD.size:
            raise self._damaged(what, off, "it runs past the end of the file")
        sync, kind, _, _, blen = F.HEAD.unpack(head)
        if sync != F.SYNC:
            raise self._damaged(what, off, "no frame starts there")
        total = F.HEAD.size + blen + F.CRC.size
        if off + total > self.size:
            raise self._damaged(what, off, "it runs past the end of the file")
        data = os.pread(self._fd, total, off)
        if len(data) != total or not F.crc_ok(data):
            raise self._damaged(what, off, "its checksum does not match")
        return kind, data

    def _damaged(self, what: str, off: int, why: str) -> F.TraceError:
        return F.TraceError(f"{self.path}: {what} (at byte {off}) is damaged: {why}.")

    def _decode(self, off: int, what: str) -> Record:
        kind, data = self._read(off, what)
        return self._decode_data(off, kind, data, what)

    def _decode_data(self, off: int, kind: int, data: bytes, what: str) -> Record:
        try:
            meta, arrays = F.parse_body(data, F.HEAD.size, len(data) - F.CRC.size)
            if kind == F.ITERATION:
                return Record(kind, off, _iteration_frame(meta, arrays, off), arrays)
            return Record(kind, off, json.loads(meta), arrays)
        except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
            raise self._damaged(what, off, f"its contents cannot be decoded ({exc})") from None

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
            raise F.TraceError(self._no_loop(path, outer))
        offs = ix.offsets(row)
        n = len(offs)
        if not 0 <= iteration < n:
            rng = f"0..{n - 1}" if n else "none"
            raise F.TraceError(f"{self.path}: loop '{path}'{_at(outer)} has {n} recorded "
                               f"iteration{'s' if n != 1 else ''} ({rng}); there is no iteration "
                               f"{iteration}.")
        off = int(offs[iteration])
        what = f"the frame of loop '{path}'{_at(outer)} iteration {iteration}"
        if off == 0:
            raise F.TraceError(f"{self.path}: {what} is missing (it was damaged).")
        rec = self._decode(off, what)
        f = rec.meta
        if rec.kind != F.ITERATION or f.path != path or f.iteration != iteration or f.outer != outer:
            raise self._damaged(what, off, "the index points to another frame")
        return f

    def frames(self, path: str, outer: tuple | None = None) -> Iterator[IterationFrame]:
        """The iterations of loop ``path`` in order (every execution, or just ``outer``'s)."""
        ix = self.index
        if outer is not None:
            rows = [ix.row(path, tuple(outer))]
            if rows[0] is None:
                raise F.TraceError(self._no_loop(path, tuple(outer)))
        else:
            rows = ix.rows(path)
            if not rows:
                raise F.TraceError(self._no_loop(path, ()))
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
            raise F.TraceError(self._no_loop(path, tuple(outer)))
        off = int(self.index.ex_start[row])
        if off < 0:
            raise F.TraceError(f"{self.path}: the start of loop '{path}'{_at(outer)} is not "
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
            raise F.TraceError(self._no_loop(path, tuple(outer)))
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
        except F.TraceError:
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

    def raw(self) -> Iterator[tuple[int, int, bytes]]:
        """Every good frame in file order, undecoded: (offset, kind, frame bytes with head and
        checksum). Two frames with the same bytes hold the same thing."""
        for off, kind, data in self._walk():
            if kind != F.HEADER:
                yield off, kind, data

    def decode(self, off: int, kind: int, data: bytes) -> Record:
        """The Record of a frame given by ``raw``."""
        return self._decode_data(off, kind, data, f"the {F.KIND_NAMES.get(kind)} frame")

    def verify(self) -> list[str]:
        """Read every frame and check it; return the problems found (empty: all is well)."""
        problems = []
        for _off, _kind, _data in self._walk_checked(problems):
            pass
        return problems

    def _walk_checked(self, problems: list):
        with open(self.path, "rb") as fh:
            if self.size <= F.PREAMBLE.size:
                return
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        saved = self.problems
        self.problems = problems
        try:
            yield from self._walk_map(mm, True)
        finally:
            self.problems = saved
            mm.close()
        if self.truncated:
            problems.append(self.truncation_text())

    # -- summary ----------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """complete / interrupted / error / stopped, or truncated when the END frame is missing."""
        if self.end is None:
            return "truncated"
        return self.end.get("status", "complete")

    def truncation_text(self) -> str:
        lost = self.size - self.valid_end
        if self.index.end >= 0:
            return (f"the trace is truncated (its footer index is missing), but the run's END "
                    f"frame is there: all {self.index.frames} frames were recovered")
        return (f"the trace is truncated (no footer index and no END frame: the recording was "
                f"killed, crashed or ran out of disk); {self.index.frames} complete frames were "
                f"recovered" + (f", the last {lost} bytes were not a complete frame" if lost
                                else ""))

    def _end_meta(self) -> dict | None:
        if self.index.end < 0:
            return None
        try:
            return self._decode(self.index.end, "the END frame").meta
        except F.TraceError as exc:
            self.problems.append(str(exc))
            return None

    def _no_loop(self, path: str, outer: tuple) -> str:
        paths = self.paths()
        if path in paths:
            execs = self.executions(path)
            shown = ", ".join(_outer_text(o) for o in execs[:5]) + (", ..." if len(execs) > 5 else "")
            return (f"{self.path}: loop '{path}' has no execution{_at(outer)}; it ran with outer "
                    f"iterations {shown}.")
        known = ", ".join(f"'{p}'" for p in paths) or "none"
        return f"{self.path}: no loop '{path}' in this trace; its loops: {known}."

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "TraceReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()


def _meta_bytes(data: bytes) -> bytes:
    (mlen,) = F.META_LEN.unpack_from(data, F.HEAD.size)
    return data[F.HEAD.size + 4:F.HEAD.size + 4 + mlen]


def _iteration_meta(data: bytes) -> tuple:
    """(path, outer, iteration, trip) of an ITERATION frame without decoding its arrays."""
    return _parse_iter_meta(_meta_bytes(data))[:4]


def _parse_iter_meta(meta: bytes) -> tuple:
    it, trip, cond, cont, n_outer, plen = F.ITER_META.unpack_from(meta, 0)
    pos = F.ITER_META.size
    outer = struct.unpack_from(f"<{n_outer}q", meta, pos)
    pos += 8 * n_outer
    path = meta[pos:pos + plen].decode()
    return path, outer, it, (None if trip < 0 else trip), bool(cond), bool(cont)


def _iteration_frame(meta: bytes, arrays: list, off: int) -> IterationFrame:
    path, outer, it, trip, cond, cont = _parse_iter_meta(meta)
    f = IterationFrame(path, it, trip, cond, cont, outer, offset=off)
    for group, name, a in arrays:
        attr = _GROUP_ATTR.get(group)
        if attr is None:
            continue
        d = getattr(f, attr)
        if d is None:
            d = {}
            setattr(f, attr, d)
        d[name] = a
    return f


def _at(outer: tuple) -> str:
    return f" at outer iterations {_outer_text(outer)}" if outer else ""


def _outer_text(outer: tuple) -> str:
    return "(" + ", ".join(map(str, outer)) + ")" if outer else "()"
