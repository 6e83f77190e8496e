"""TraceWriter: turns engine events into frames and appends them to a trace file.

The recording thread encodes every event into bytes (small arrays copied with ``tobytes``, big ones
referenced, never copied: the engine never writes an array again after an event refers to it) and
hands batches to a background thread (``sink.Sink``) at least every ``flush_interval`` seconds, so a
killed process loses at most that much. ``close`` writes the END frame, the footer index and the
locator; a writer that is never closed leaves a file the reader recovers by scanning.
"""

from __future__ import annotations

import struct
import time
import zlib
from typing import Mapping

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.trace import format as F
from loopdbg.trace.index import Index
from loopdbg.trace.sink import Sink

_pack_head = F.HEAD.pack
_pack_crc = F.CRC.pack
_pack_meta_len = F.META_LEN.pack
_pack_count = F.COUNT.pack
_pack_iter = F.ITER_FIXED.pack
_crc32 = zlib.crc32
_ndarray = np.ndarray
_asarray = np.asarray
_IterationDone = ev.IterationDone
_SYNC = F.SYNC
_BIG = F.BIG
_NO_EXECUTION = (None,) * 8


class TraceWriter:
    """Append-only writer of one trace file (see the package docstring for the format).

    ``write(event)`` takes any engine event; ``close(status, error)`` finishes the file.
    Use as a context manager to close it whatever happens.
    """

    def __init__(self, path, header: Mapping | None = None, *,
                 model_inputs: Mapping[str, np.ndarray] | None = None,
                 flush_interval: float = 0.25, batch_bytes: int = 1 << 20,
                 queue_bytes: int = 64 << 20):
        self.path = str(path)
        try:
            self._raw = open(self.path, "wb", buffering=0)
        except OSError as exc:
            raise F.TraceError(f"cannot create the trace file {self.path}: "
                               f"{exc.strerror or exc}.") from None
        self._sink = Sink(self._raw, queue_bytes)
        self._pend = bytearray()
        self._pos = 0
        self._batch = batch_bytes
        self._interval = flush_interval
        self._last_flush = time.monotonic()
        self._closed = False
        self._broken = False
        self.index = Index()
        self._entries: dict = {}          # (group, name, dtype, shape) -> entry prefix bytes
        self._names: dict = {}
        self._cur = _NO_EXECUTION             # what the current loop execution's frames share
        self._nframes = 0
        self._tick = 128
        self._schemas: dict = {}
        self.header = dict(header or {})
        self._append(F.preamble())
        self._frame(F.HEADER, F.json_bytes(self.header), ())
        if model_inputs:
            self.index.inputs = self._frame(
                F.INPUTS, b"{}", [(F.MODEL_INPUTS, k, v) for k, v in sorted(model_inputs.items())])
        self._flush()

    # -- public -----------------------------------------------------------------------------
    @property
    def frames(self) -> int:
        return self._nframes

    @property
    def iterations(self) -> int:
        return sum(len(offs) for offs in self.index.per_row)

    @property
    def bytes_written(self) -> int:
        """Bytes of frames encoded so far (on disk once the writer thread catches up)."""
        return self._pos

    @property
    def closed(self) -> bool:
        return self._closed

    def write(self, event) -> None:
        """Append one engine event. The common case (another iteration of the same loop
        execution, no trace-all) is inlined here: it runs once per iteration of every loop."""
        if type(event) is _IterationDone and not self._closed:
            cur = self._cur
            if cur[0] is event.path and cur[1] is event.outer and cur[2] is event.spec \
                    and cur[4] is not None and cur[3] and event.nodes is None:
                _, _, _, offs, slots, pre, post, head_cache = cur
                body_in, body_out = event.body_in, event.body_out
                trip = event.trip_count
                parts = [pre, _pack_iter(event.iteration, -1 if trip is None else trip,
                                         event.cond, event.continues), post]
                add = parts.append
                big = None
                for is_out, idx, c, group, name in slots:
                    v = body_out[idx] if is_out else body_in[idx]
                    if type(v) is not _ndarray:
                        v = _asarray(v)
                    if v.dtype is not c[0] or v.shape != c[1]:
                        c[0], c[1], c[2] = v.dtype, v.shape, self._entry(group, name, v)
                    add(c[2])
                    if v.nbytes < _BIG:
                        add(v.tobytes())
                    else:
                        big = True
                        add(_big_view(v))
                if big is None:
                    body = b"".join(parts)
                    blen = len(body)
                    if head_cache[0] != blen:
                        head = _pack_head(_SYNC, F.ITERATION, 0, 0, blen)
                        head_cache[:] = [blen, head, _crc32(head)]
                    pend = self._pend
                    off = self._pos
                    pend += head_cache[1]
                    pend += body
                    pend += _pack_crc(_crc32(body, head_cache[2]))
                    self._pos = off + blen + 20
                    self._nframes += 1
                else:
                    off = self._emit(F.ITERATION, b"".join(parts[1:3]), None, parts[3:], big,
                                     parts[:1])
                offs.append(off)
                self._tick -= 1
                if self._tick < 0 or len(self._pend) >= self._batch:
                    self._maybe_flush()
                return
        self._write_other(event)

    def _maybe_flush(self) -> None:
        self._tick = 128
        if len(self._pend) >= self._batch or time.monotonic() - self._last_flush >= self._interval:
            self._flush()

    def _write_other(self, event) -> None:
        if self._closed:
            raise F.TraceError(f"the trace {self.path} is closed; nothing more can be written.")
        if isinstance(event, ev.IterationDone):
            self._iteration(event)
        elif isinstance(event, ev.LoopStarted):
            self._loop_started(event)
        elif isinstance(event, ev.LoopFinished):
            self._loop_finished(event)
        elif isinstance(event, ev.Notice):
            off = self._frame(F.NOTICE, F.json_bytes(
                {"path": event.path, "message": event.message, "rule": event.rule}), ())
            self.index.notices.append(off)
        elif isinstance(event, ev.RunFinished):
            meta = {"interrupted": event.interrupted, "loops": len(event.loops),
                    "notices": len(event.notices), "outputs": list(event.outputs)}
            self.index.run_finish = self._frame(
                F.RUN_FINISH, F.json_bytes(meta),
                [(F.OUTPUTS, k, v) for k, v in event.outputs.items()])
        else:
            raise TypeError(f"not an engine event: {type(event).__name__}")
        self._maybe_flush()

    def close(self, status: str = F.COMPLETE, error: str | None = None) -> None:
        """Write the END frame, the footer and the locator; close the file. Idempotent."""
        if self._closed:
            return
        self._closed = True
        failure = None
        try:
            self._settle()
            if not self._broken:
                end = {"status": status, "error": error, "frames": self._nframes + 2,
                       "iterations": self.iterations}
                self.index.end = self._frame(F.END, F.json_bytes(end), ())
                self.index.frames = self._nframes + 1    # with the footer frame
                meta, arrays = self.index.footer()
                footer_off = self._pos
                self._frame(F.FOOTER, F.json_bytes(meta), [(0, n, a) for n, a in arrays])
                self._append(F.locator(footer_off, self._pos - footer_off))
            self._flush()
            self._sink.drain()
        except OSError as exc:
            failure = exc
        finally:
            self._sink.close()
            try:
                self._raw.close()
            except OSError as exc:
                failure = failure or exc
        if failure is not None:
            raise F.TraceError(f"writing the trace {self.path} failed: "
                               f"{getattr(failure, 'strerror', None) or failure}; the frames "
                               f"written before can still be read.") from None

    def __enter__(self):
        return self

    def __exit__(self, et, exc, tb):
        if et is None:
            self.close(F.COMPLETE)
        elif issubclass(et, KeyboardInterrupt):
            self.close(F.INTERRUPTED, "interrupted (Ctrl+C)")
        elif issubclass(et, GeneratorExit):
            self.close(F.STOPPED)
        else:
            self.close(F.ERROR, str(exc) or et.__name__)
        return False

    # -- events -----------------------------------------------------------------------------
    def _loop_started(self, e: ev.LoopStarted) -> None:
        meta = {"path": e.path, "layer_id": e.layer_id, "layer_name": e.layer_name,
                "kind": e.kind, "trip_count": e.trip_count,
                "execution_condition": e.execution_condition, "outer": list(e.outer),
                "schema": self._schema(e.path, e.spec)}
        off = self._frame(F.LOOP_START, F.json_bytes(meta), ())
        self.index.path_info.setdefault(e.path, {"kind": e.kind, "layer_name": e.layer_name,
                                                 "layer_id": e.layer_id})
        self.index.start(e.path, e.outer, off, e.trip_count)
        self._cur = _NO_EXECUTION

    def _loop_finished(self, e: ev.LoopFinished) -> None:
        meta = {"path": e.path, "outer": list(e.outer), "iterations": e.iterations,
                "reason": e.reason, "error": e.error}
        concats = set(self._schemas.get(e.path, {}).get("concats", ()))
        arrays = [(F.OUTPUTS, k, v) for k, v in e.outputs.items() if k not in concats]
        off = self._frame(F.LOOP_FINISH, F.json_bytes(meta), arrays)
        row = self.index.row(e.path, e.outer)
        if row is None:
            row = self.index.start(e.path, e.outer, -1, None)
        self.index.finish(row, off, e.iterations, e.reason, e.error)
        self._cur = _NO_EXECUTION

    def _schema(self, path: str, spec) -> dict | None:
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
        cur = self._cur
        if cur[0] is not e.path or cur[1] is not e.outer or cur[2] is not e.spec:
            cur = self._execution(e)
        self._iteration_general(e, cur)     # the next ones take the fast path in write()

    def _iteration_general(self, e, cur) -> None:
        """Any iteration: the first of an execution (body inputs too), trace-all, no spec."""
        offs = cur[3]
        arrays = [(F.BACK_EDGES, k, v) for k, v in e.back_edges.items()]
        arrays += [(F.SCAN_SLICES, k, v) for k, v in e.scan_slices.items()]
        arrays += [(F.SLICED_INPUTS, k, v) for k, v in e.sliced_inputs.items()]
        if not offs:
            arrays += [(F.BODY_INPUTS, k, v) for k, v in e.inputs.items()]
        if e.nodes is not None:
            arrays += [(F.NODES, k, v) for k, v in e.nodes.items() if v is not None]
        trip = e.trip_count
        meta = _pack_iter(e.iteration, -1 if trip is None else trip, e.cond, e.continues) + \
            cur[6][:-4]
        offs.append(self._frame(F.ITERATION, meta, arrays))

    def _execution(self, e):
        """Set up (and cache) what every iteration frame of this loop execution shares."""
        path, outer, spec = e.path, e.outer, e.spec
        row = self.index.row(path, outer)
        if row is None:
            row = self.index.start(path, outer, -1, e.trip_count)
        offs = self.index.per_row[row]
        pb = path.encode()
        tail = struct.pack(f"<HH{len(outer)}q", len(outer), len(pb), *outer) + pb
        slots = None
        try:
            slots = ([(True, r, [None, None, None], F.BACK_EDGES, p)
                      for p, r in spec.back_edge_view]
                     + [(True, r, [None, None, None], F.SCAN_SLICES, n)
                        for n, r in spec.concat_view]
                     + [(False, q, [None, None, None], F.SLICED_INPUTS, n)
                        for n, q in spec.sliced_view])
        except AttributeError:
            slots = None
        n = len(slots) if slots is not None else 0
        pre = _pack_meta_len(F.ITER_FIXED.size + len(tail))
        post = tail + _pack_count(n)
        self._cur = (path, outer, spec, offs, slots, pre, post, [-1, b"", 0])
        return self._cur

    def _entry(self, group: int, name: str, v: np.ndarray) -> bytes:
        key = (group, name, v.dtype, v.shape)
        prefix = self._entries.get(key)
        if prefix is None:
            F.check_array(v, f"'{name}'")
            nb = name.encode()
            hdr = F.npy_header(v.dtype, v.shape)
            prefix = F.ENTRY.pack(group, len(nb), len(hdr) + v.nbytes) + nb + hdr
            if len(self._entries) > 20000:
                self._entries.clear()
            self._entries[key] = prefix
        return prefix

    # -- frames -----------------------------------------------------------------------------
    def _frame(self, kind: int, meta: bytes, arrays) -> int:
        parts = []
        big = None
        n = 0
        for group, name, v in arrays:
            v = F.check_array(v, f"'{name}'")
            parts.append(self._entry(group, name, v))
            if v.nbytes < _BIG:
                parts.append(v.tobytes())
            else:
                big = True
                parts.append(_big_view(v))
            n += 1
        return self._emit(kind, meta, n, parts, big)

    def _emit(self, kind: int, meta: bytes, n: int | None, parts: list, big, pre=None) -> int:
        """Append a frame: ``meta`` then ``n`` arrays (``parts``: prefix, data, prefix, data...).
        With ``n`` None, ``meta`` already ends with the array count and ``pre`` holds its length."""
        off = self._pos
        lead = (_pack_meta_len(len(meta)), meta, _pack_count(n)) if n is not None else \
            (pre[0], meta)
        if big is None:
            body = b"".join((*lead, *parts))
            head = _pack_head(_SYNC, kind, 0, 0, len(body))
            crc = _crc32(body, _crc32(head))
            self._pend += head
            self._pend += body
            self._pend += _pack_crc(crc)
            self._pos = off + len(body) + 20
        else:
            chunks = []
            small = list(lead)
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
            total = size + F.HEAD.size + F.CRC.size
            self._put(chunks, total)
            self._pos = off + total
        self._nframes += 1
        return off

    def _append(self, raw: bytes) -> None:
        self._pend += raw
        self._pos += len(raw)

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if self._pend:
            self._put(self._pend, len(self._pend), True)
            self._pend = bytearray()

    def _put(self, item, nbytes: int, inline: bool = False) -> None:
        try:
            self._sink.put(item, nbytes, inline)
        except OSError as exc:
            raise F.TraceError(f"writing the trace {self.path} failed: {exc.strerror or exc}; "
                               f"the frames written before can still be read.") from None

    def _settle(self) -> None:
        """After an interruption mid-frame: drop a partial frame, or give up on the footer."""
        if self._sink.last is self._pend:
            self._pend = bytearray()
        expected = self._pos - self._sink.accepted
        if expected < 0 or expected > len(self._pend):
            self._broken = True                     # the reader will scan: every frame is kept
        elif expected < len(self._pend):
            del self._pend[expected:]
        if self._sink.error is not None:
            self._broken = True


def _big_view(v: np.ndarray) -> memoryview:
    if not v.flags.c_contiguous:
        v = np.ascontiguousarray(v)
    return memoryview(v).cast("B") if v.ndim else memoryview(v.reshape(1)).cast("B")

