"""TraceWriter: turns engine events into frames and appends them to a trace file.

The recording thread encodes every event into bytes: small arrays are copied with ``tobytes``,
big ones (``format.BIG`` bytes and more) are referenced, never copied; the engine never writes an
array again after an event refers to it. Small frames collect in a list that is written at least
every ``flush_interval`` seconds (so a killed process loses at most that much) or every
``batch_bytes``; frames with big arrays go to a background thread (``sink.Sink``) so that the
disk writes while the model computes. ``close`` writes the END frame, the footer index and the
locator; a writer that is never closed leaves a file the reader recovers by scanning.

Speed: a scalar loop writes one small frame per iteration, so the cost per frame is what matters;
see ``fastpath`` for the code compiled per loop execution and installed as this writer's
``write`` while that execution is current.
"""

from __future__ import annotations

import json
import time
from typing import Mapping

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.errors import ResourceLimitError
from loopdbg.files import open_recording
from loopdbg.text import byte_size as size
from loopdbg.trace import format as fmt
from loopdbg.trace import fastpath
from loopdbg.trace.index import Index
from loopdbg.trace.sink import Sink

_pack_head = fmt.HEAD.pack
_pack_crc = fmt.CRC.pack
_pack_meta_len = fmt.META_LEN.pack
_pack_count = fmt.COUNT.pack
_pack_iter = fmt.ITER_FIXED.pack
_crc32 = fmt.crc32
_ndarray = np.ndarray
_asarray = np.asarray
_SYNC = fmt.SYNC
_BIG = fmt.BIG
_CRC_SIZE = fmt.CRC.size
_JOIN_PARTS = 64                 # a flush of at most this many pending parts holding at least
_JOIN_BYTES = 256 << 10          # this many bytes writes them unjoined (os.writev), else joined


class TraceWriter:
    """Append-only writer of one trace file (see the package docstring for the format).

    ``write(event)`` takes any engine event; ``close(status, error)`` finishes the file.
    Use it as a context manager to close it whatever happens.
    """

    def __init__(self, path, header: Mapping | None = None, *,
                 model_inputs: Mapping[str, np.ndarray] | None = None,
                 flush_interval: float = 0.25, batch_bytes: int = 1 << 20,
                 queue_bytes: int = 8 << 20, reads=(), max_bytes: int | None = None):
        """``reads``: [(what, path)] the recording command reads besides the model and inputs
        the header names (those are never overwritten either; see ``loopdbg.files``).
        ``max_bytes``: the trace's size cap (None: none); past it the next flush raises
        ResourceLimitError, and the recording closes the file, readable up to there."""
        self.path = str(path)
        fd = open_recording(self.path, [*fmt.recorded_sources(dict(header or {})), *reads],
                            what="the trace")
        self._raw = open(fd, "wb", buffering=0)     # exclusively locked until closed
        self._sink = Sink(self._raw, queue_bytes)
        self._pend: list = []                 # small frames not yet handed to the sink
        self._pos = 0                         # file offset after the last frame encoded
        self._flushed = 0                     # file offset up to which the sink has the bytes
        self.batch_bytes = batch_bytes      # frames are flushed (and batched) by this much
        self._max_bytes = max_bytes
        self._interval = flush_interval
        self._last_flush = time.monotonic()
        self._tick = self._tick_every = 128   # compiled code checks the time every so often
        self._closed = False
        self.final: ev.RunFinished | None = None    # the run's last event, once written
        # The current execution's compiled code as a loop over the events (batch modes; see
        # fastpath._pumped): ``Recording.drain`` hands it the event iterator.
        self.pump = None
        self.index = Index()
        self._nframes = 0
        self._entries: dict = {}              # (group, name, dtype, shape) -> entry prefix
        self._schemas: dict = {}
        self._execs: dict = {}                # (path, outer) -> fastpath.Execution, running ones
        self._cur: fastpath.Execution | None = None   # the one whose code is installed
        self._slots: dict = {}                # id(spec) -> (spec, fastpath.slots_of(spec))
        self._lead_json: dict = {}            # path -> the start of its LOOP_START meta
        self.header = dict(header or {})
        self._pend.append(fmt.preamble())
        self._pos = fmt.PREAMBLE.size
        self._frame(fmt.HEADER, fmt.json_bytes(self.header), ())
        if model_inputs:
            self.index.inputs = self._frame(
                fmt.INPUTS, b"{}", [(fmt.MODEL_INPUTS, k, v) for k, v in sorted(model_inputs.items())])
        self._flush()

    # -- public -----------------------------------------------------------------------------
    @property
    def frames(self) -> int:
        """Frames written so far, each iteration waiting in a batch counted as one (it grows
        with every event that writes something)."""
        return self._nframes + self._batched()

    @property
    def iterations(self) -> int:
        return sum(len(offs) for offs in self.index.per_row) + self._batched()

    @property
    def bytes_written(self) -> int:
        """Bytes of frames recorded so far (on disk soon: at most ``flush_interval`` later)."""
        layout = self._layout
        return self._pos + (layout.n * layout.size if layout is not None else 0)

    @property
    def _layout(self):
        return self._cur.layout if self._cur is not None else None

    def _batched(self) -> int:
        layout = self._layout
        return layout.n if layout is not None else 0

    @property
    def closed(self) -> bool:
        return self._closed

    def write(self, event) -> None:
        """Append one engine event (replaced per loop execution by compiled code, which falls
        back here for anything but its own next iteration)."""
        if self._closed:
            raise fmt.TraceError(f"the trace {self.path} is closed; nothing more can be written.")
        if isinstance(event, ev.IterationDone):
            ex = self._execs.get((event.path, event.outer))
            if ex is not None and ex.fast is not None and ex.spec is event.spec:
                if ex is not self._cur:
                    self._activate(ex)
                if ex.fast(event):
                    return
        self._materialize()
        if isinstance(event, ev.IterationDone):
            self._iteration(event)
        elif isinstance(event, ev.LoopStarted):
            self._loop_started(event)
        elif isinstance(event, ev.LoopFinished):
            self._loop_finished(event)
        elif isinstance(event, ev.Notice):
            off = self._frame(fmt.NOTICE, fmt.json_bytes(
                {"path": event.path, "message": event.message, "rule": event.rule}), ())
            self.index.notices.append(off)
        elif isinstance(event, ev.RunFinished):
            self.final = event
            meta = {"interrupted": event.interrupted, "loops": len(event.loops),
                    "notices": len(event.notices), "outputs": list(event.outputs)}
            self.index.run_finish = self._frame(
                fmt.RUN_FINISH, fmt.json_bytes(meta),
                [(fmt.OUTPUTS, k, v) for k, v in event.outputs.items()])
        else:
            raise TypeError(f"not an engine event: {type(event).__name__}")
        self._maybe_flush()

    def append_frame(self, frame: bytes, offsets) -> None:
        """Append one encoded frame (head to its last byte; the checksum is added here) and its
        offset to ``offsets``. The code ``fastpath`` compiles calls this once per iteration it
        takes; every ``check_every`` frames it also decides whether to flush or to batch."""
        off = self._pos
        pend = self._pend
        pend.append(frame)
        pend.append(_pack_crc(_crc32(frame)))
        self._pos = off + len(frame) + _CRC_SIZE
        self._nframes += 1
        offsets.append(off)
        self._tick -= 1
        if self._tick < 0:
            self._maybe_flush()

    def append_frames(self, parts: list, count: int) -> int:
        """Append ``count`` whole frames, checksums included, given as consecutive byte strings
        (``batch`` encodes a BATCH frame); return the offset of the first."""
        base = self._pos
        self._pend.extend(parts)            # one call: a Ctrl+C leaves all or none of them
        self._pos = base + sum(len(p) for p in parts)
        self._nframes += count
        return base

    def close(self, status: str = fmt.COMPLETE, error: str | None = None) -> None:
        """Write the END frame, the footer and the locator; close the file. Idempotent."""
        if self._closed:
            return
        self._activate(None)
        self._execs.clear()
        self._closed = True
        failure = None
        try:
            if self._settle():
                end = {"status": status, "error": error, "frames": self._nframes + 2,
                       "iterations": self.iterations}
                self.index.end = self._frame(fmt.END, fmt.json_bytes(end), ())
                self.index.frames = self._nframes + 1    # with the footer frame
                meta, arrays = self.index.footer()
                footer_off = self._pos
                self._frame(fmt.FOOTER, fmt.json_bytes(meta), [(0, n, a) for n, a in arrays])
                self._pend.append(fmt.locator(footer_off, self._pos - footer_off))
            self._flush()
            self._sink.drain()
        except (OSError, fmt.TraceError) as exc:
            failure = exc
        finally:
            self._sink.close()
            try:
                self._raw.close()
            except OSError as exc:
                failure = failure or exc
        if failure is not None:
            if isinstance(failure, fmt.TraceError):
                raise failure
            raise fmt.TraceError(f"writing the trace {self.path} failed: "
                               f"{getattr(failure, 'strerror', None) or failure}; the frames "
                               f"written before can still be read.") from None

    def __enter__(self):
        return self

    def __exit__(self, et, exc, tb):
        if et is None:
            self.close(fmt.COMPLETE)
        elif issubclass(et, KeyboardInterrupt):
            self.close(fmt.INTERRUPTED, "interrupted (Ctrl+C)")
        elif issubclass(et, GeneratorExit):
            self.close(fmt.STOPPED)
        else:
            self.close(fmt.ERROR, str(exc) or et.__name__)
        return False

    # -- events -----------------------------------------------------------------------------
    def _loop_started(self, e: ev.LoopStarted) -> None:
        # JSON by hand: a nested loop starts (and finishes) once per outer iteration
        lead = self._lead_json.get(e.path)
        if lead is None:
            lead = self._lead_json[e.path] = (
                f'{{"path":{json.dumps(e.path)},"layer_id":{int(e.layer_id)},'
                f'"layer_name":{json.dumps(e.layer_name)},"kind":{json.dumps(e.kind)},')
        trip = "null" if e.trip_count is None else int(e.trip_count)
        meta = (f'{lead}"trip_count":{trip},'
                f'"execution_condition":{"true" if e.execution_condition else "false"},'
                f'"outer":[{",".join(map(str, e.outer))}]')
        if e.path not in self._schemas:         # once per loop
            meta += ',"schema":' + json.dumps(self._schema(e.path, e.spec),
                                              separators=(",", ":"), default=str)
        off = self._frame(fmt.LOOP_START, (meta + "}").encode(), ())
        self.index.path_info.setdefault(e.path, {"kind": e.kind, "layer_name": e.layer_name,
                                                 "layer_id": e.layer_id})
        self.index.start(e.path, e.outer, off, e.trip_count)

    def _loop_finished(self, e: ev.LoopFinished) -> None:
        meta = (f'{{"path":{json.dumps(e.path)},"outer":[{",".join(map(str, e.outer))}],'
                f'"iterations":{int(e.iterations)},"reason":{json.dumps(e.reason)},'
                f'"error":{"null" if e.error is None else json.dumps(e.error)}}}').encode()
        concats = set((self._schemas.get(e.path) or {}).get("concats", ()))
        arrays = [(fmt.OUTPUTS, k, v) for k, v in e.outputs.items() if k not in concats]
        off = self._frame(fmt.LOOP_FINISH, meta, arrays)
        row = self.index.row(e.path, e.outer)
        if row is None:
            row = self.index.start(e.path, e.outer, -1, None)
        self.index.finish(row, off, e.iterations, e.reason, e.error)
        ex = self._execs.pop((e.path, e.outer), None)
        if ex is not None and ex is self._cur:
            self._activate(None)

    def _schema(self, path: str, spec) -> dict | None:
        """The loop's static description, for readers that replay (roles of the Parameters)."""
        if path in self._schemas:
            return self._schemas[path]
        s = None
        if spec is not None:
            try:
                names = list(spec.param_names)
                s = {"params": names, "results": list(spec.result_names),
                     "roles": {names[p]: r for p, r in spec.roles.items()},
                     "back_edges": [[p, spec.result_names[r]] for p, r in spec.back_edge_view],
                     "concats": [n for n, _ in spec.concat_view],
                     "sliced": [n for n, _ in spec.sliced_view],
                     "current_iteration": None}
                if spec.current_iteration is not None:
                    s["current_iteration"] = {
                        "param": names[spec.current_iteration], "dtype": spec.cur_dtype.str,
                        "shape": list(spec.cur_shape), "fed_back": bool(spec.cur_fed_back)}
                if spec.condition_param is not None:
                    s["condition_param"] = names[spec.condition_param]
            except (AttributeError, IndexError, TypeError):
                s = None
        self._schemas[path] = s
        return s

    def _iteration(self, e) -> None:
        """Any iteration the compiled code did not take: the first of an execution (with the
        body inputs), trace-all (nodes), big arrays, new shapes, events without a spec."""
        key = (e.path, e.outer)
        ex = self._execs.get(key)
        if ex is None or ex.spec is not e.spec:
            row = self.index.row(e.path, e.outer)
            if row is None:
                row = self.index.start(e.path, e.outer, -1, e.trip_count)
            cached = self._slots.get(id(e.spec))
            if cached is None or cached[0] is not e.spec:
                cached = self._slots[id(e.spec)] = (e.spec, fastpath.slots_of(e.spec))
            slots = cached[1]
            if len(self._execs) > 1024:            # events without LoopFinished
                self._activate(None)
                self._execs.clear()
            ex = self._execs[key] = fastpath.Execution(e.path, e.outer, e.spec,
                                                       self.index.per_row[row], slots)
        offs = ex.offs
        arrays = [(fmt.BACK_EDGES, k, v) for k, v in e.back_edges.items()]
        arrays += [(fmt.SCAN_SLICES, k, v) for k, v in e.scan_slices.items()]
        arrays += [(fmt.SLICED_INPUTS, k, v) for k, v in e.sliced_inputs.items()]
        if not offs:
            arrays += [(fmt.BODY_INPUTS, k, v) for k, v in e.inputs.items()]
        if e.nodes is not None:
            arrays += [(fmt.NODES, k, v) for k, v in e.nodes.items() if v is not None]
        trip = e.trip_count
        meta = _pack_iter(e.iteration, -1 if trip is None else trip, bool(e.cond),
                          bool(e.continues)) + ex.tail
        offs.append(self._frame(fmt.ITERATION, meta, arrays))
        fastpath.plan(self, ex, e)
        self._activate(ex if ex.write is not None else None)

    def _activate(self, ex) -> None:
        """Make ``ex``'s compiled code this writer's ``write`` (None: the general one)."""
        cur = self._cur
        if cur is ex:
            return
        if cur is not None:
            fastpath.demote(cur)                # its batched frames come before anything else
        self._cur = ex
        if ex is None or ex.write is None:
            self.__dict__.pop("write", None)
            self.pump = None
        else:
            self.write, self.pump = ex.write, ex.pump

    def batch_check(self) -> None:
        """Every few hundred batched iterations: encode them when the batch is full or it is
        time to put them on disk."""
        layout = self._layout
        if layout.n >= layout.capacity:
            layout.materialize()
            self._maybe_flush()
        elif time.monotonic() - self._last_flush >= self._interval:
            self._flush()
        else:
            layout.check_at = layout.next + layout.step

    def check_every(self, frames: int) -> None:
        """Let ``append_frame`` look at the clock and the batch every ``frames`` frames (the fast
        path sets it from its frames' size)."""
        self._tick_every = frames

    def _materialize(self) -> None:
        layout = self._layout
        if layout is not None:
            layout.materialize()

    def entry_prefix(self, group: int, name: str, v: np.ndarray) -> bytes:
        """The bytes before an array's data in a frame: group, name, .npy length and header."""
        key = (group, name, v.dtype, v.shape)
        prefix = self._entries.get(key)
        if prefix is None:
            fmt.check_array(v, f"'{name}'")
            nb = name.encode()
            hdr = fmt.npy_header(v.dtype, v.shape)
            prefix = fmt.ENTRY.pack(group, len(nb), len(hdr) + v.nbytes) + nb + hdr
            if len(self._entries) > 20000:
                self._entries.clear()
            self._entries[key] = prefix
        return prefix

    # -- frames -----------------------------------------------------------------------------
    def _frame(self, kind: int, meta: bytes, arrays) -> int:
        """Append a frame holding ``meta`` and ``arrays`` [(group, name, value)]; its offset."""
        parts = [_pack_meta_len(len(meta)), meta, _pack_count(len(arrays))]
        big = False
        for group, name, v in arrays:
            v = fmt.check_array(v, f"'{name}'")
            parts.append(self.entry_prefix(group, name, v))
            if v.nbytes < _BIG:
                parts.append(v.tobytes())
            else:
                big = True
                parts.append(_big_view(v))
        off = self._pos
        if not big:
            body = b"".join(parts)
            head = _pack_head(_SYNC, kind, 0, 0, len(body))
            self._pend.append(head + body)
            self._pend.append(_pack_crc(_crc32(body, _crc32(head))))
            self._pos = off + len(body) + fmt.HEAD.size + fmt.CRC.size
        else:
            chunks, small = [], []
            for p in parts:                         # join the small pieces between big arrays
                if type(p) is bytes:
                    small.append(p)
                else:
                    chunks.append(b"".join(small))
                    small = []
                    chunks.append(p)
            chunks.append(b"".join(small))
            size = sum(len(c) for c in chunks)
            head = _pack_head(_SYNC, kind, 0, 0, size)
            crc = _crc32(head)
            for c in chunks:            # here rather than in the writer thread: the checksum of
                crc = _crc32(c, crc)    # this frame overlaps with the writing of the previous one
            chunks.insert(0, head)
            chunks.append(_pack_crc(crc))
            self._flush()
            total = size + fmt.HEAD.size + fmt.CRC.size
            self._put(chunks, total)
            self._pos = self._flushed = off + total
        self._nframes += 1
        return off

    def _maybe_flush(self) -> None:
        self._tick = self._tick_every
        ex = self._cur
        if ex is not None and ex.promotable and len(ex.offs) >= fastpath.PROMOTE:
            fastpath.promote(self, ex)          # a long run of small frames: batch them
            self.write, self.pump = ex.write, ex.pump
        if self._pos - self._flushed >= self.batch_bytes or \
                time.monotonic() - self._last_flush >= self._interval:
            self._flush()

    def sync(self) -> None:
        """Put every frame written so far on disk (a reader scanning the file then sees them)."""
        if not self._closed:
            self._flush()
            self._sink.drain()

    def _flush(self) -> None:
        self._materialize()
        self._last_flush = time.monotonic()
        pend = self._pend
        if pend:
            if len(pend) <= _JOIN_PARTS and \
                    (nbytes := sum(len(p) for p in pend)) >= _JOIN_BYTES:
                data = pend[:]               # a few big parts (batches): written as they are
            else:                            # many small frames: one copy, one write
                data = b"".join(pend)
                nbytes = len(data)
            pend.clear()                 # the same list: compiled code appends to it
            self._put(data, nbytes, True)
            self._flushed = self._pos
        if self._max_bytes is not None and self._pos > self._max_bytes and not self._closed:
            raise ResourceLimitError(
                f"the trace {self.path} reached {size(self._pos)}, its size cap of "
                f"{size(self._max_bytes)} (--max-trace-size); the run stopped after "
                f"{self.iterations} recorded iterations, and the trace is closed, readable up "
                f"to there.")

    def _put(self, item, nbytes: int, inline: bool = False) -> None:
        try:
            self._sink.put(item, nbytes, inline)
        except OSError as exc:
            raise fmt.TraceError(f"writing the trace {self.path} failed: {exc.strerror or exc}; "
                               f"the frames written before can still be read.") from None

    def _settle(self) -> bool:
        """Before the footer: is what was handed over plus what is pending exactly the frames
        indexed? A Ctrl+C in the middle of a frame can leave half of one pending (dropped
        here) or lose a batch (then no footer is written: the reader scans, keeping every
        frame)."""
        if self._sink.error is not None:
            return False
        expected = self._pos - self._sink.accepted
        pending = sum(len(p) for p in self._pend)
        while pending > expected and self._pend:
            pending -= len(self._pend.pop())
        return pending == expected


def _big_view(v: np.ndarray) -> memoryview:
    if not v.flags.c_contiguous:
        v = np.ascontiguousarray(v)
    return memoryview(v).cast("B") if v.ndim else memoryview(v.reshape(1)).cast("B")
