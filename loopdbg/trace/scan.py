"""A trace file opened and indexed: from its footer in three small reads, or by scanning it.

A trace with a valid footer opens with three small reads (preamble and header, locator, footer).
Without one (the recording crashed, was killed, or the disk filled up), ``TraceFile`` scans the
file once, keeps every complete frame whose checksum holds, re-synchronises on the next sync
marker after damage, and says that the file was truncated. Every frame read is checked against
its checksum; a damaged one raises ``TraceError`` naming it. ``reader.TraceReader`` adds the
queries.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from pathlib import Path
from typing import Iterator

from loopdbg.files import kind_of
from loopdbg.trace import format as fmt
from loopdbg.trace.index import Index
from loopdbg.trace.frames import (Record, batch_frame, iteration_fields, iteration_frame,
                                   iteration_meta, meta_bytes)


class TraceFile:
    """A trace file open for reading, its frames indexed (see the module docstring)."""

    def __init__(self, path, *, scan: bool = False):
        self.path = str(path)
        self._last_batch: Record | None = None     # the BATCH frame read last (reader.frame)
        p = Path(self.path)
        if not p.exists():
            raise fmt.TraceError(f"{self.path}: no such file.")
        if p.is_dir():
            raise fmt.TraceError(f"{self.path} is a folder, not a trace file.")
        try:                    # O_NONBLOCK: opening a FIFO must not wait for a writer
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0)
                               | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise fmt.TraceError(f"cannot open {self.path}: {exc.strerror or exc}.") from None
        try:
            st = os.fstat(self._fd)
            if not stat.S_ISREG(st.st_mode):   # a FIFO would hang a read, /dev/zero never end
                raise fmt.TraceError(f"{self.path} is {kind_of(st.st_mode)}, not a regular file; "
                                   f"loopdbg reads only regular files.")
            self.size = st.st_size
            self._open(scan)
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise

    # -- opening ----------------------------------------------------------------------------
    def _open(self, force_scan: bool) -> None:
        raw = os.pread(self._fd, fmt.PREAMBLE.size, 0)
        if self.size == 0:
            raise fmt.TraceError(f"{self.path} is empty (the recording wrote nothing).")
        if raw[:len(fmt.MAGIC)] == fmt.MAGIC[:len(raw)] and len(raw) < fmt.PREAMBLE.size:
            raise fmt.TraceError(f"{self.path} is truncated inside its first 16 bytes; it holds "
                               f"nothing.")
        if len(raw) < fmt.PREAMBLE.size or raw[:len(fmt.MAGIC)] != fmt.MAGIC:
            raise fmt.TraceError(f"{self.path} is not a loopdbg trace (it does not start with the "
                               f"trace magic bytes).")
        _, major, minor = fmt.PREAMBLE.unpack(raw)
        self.version = (major, minor)
        if major not in fmt.READABLE:
            raise fmt.TraceError(f"{self.path} is a version {major}.{minor} trace; this loopdbg "
                               f"reads versions "
                               f"{' and '.join(f'{v}.x' for v in fmt.READABLE)}.")
        self.problems: list[str] = []
        self.truncated = False
        self.index_damaged = False
        self.valid_end = self.size             # end of the last good frame (scan mode)
        head = os.pread(self._fd, fmt.HEAD.size, fmt.PREAMBLE.size)
        if len(head) == fmt.HEAD.size and head[:4] == fmt.SYNC and \
                fmt.PREAMBLE.size + fmt.HEAD.size + fmt.HEAD.unpack(head)[4] + fmt.CRC.size > self.size:
            raise fmt.TraceError(f"{self.path} is truncated inside its header frame; it holds no "
                               f"recorded frames.")
        if len(head) < fmt.HEAD.size:
            raise fmt.TraceError(f"{self.path} is truncated before its header frame ended; it holds "
                               f"no recorded frames.")
        kind, data = self._read(fmt.PREAMBLE.size, "the header frame")
        if kind != fmt.HEADER:
            raise fmt.TraceError(f"{self.path}: the first frame is not a header.")
        try:
            meta, _ = fmt.parse_body(data, fmt.HEAD.size, len(data) - fmt.CRC.size)
            self.header: dict = fmt.load_json(meta)
            if not isinstance(self.header, dict):
                raise ValueError("it is not a JSON object")
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            raise self._damaged("the header frame", fmt.PREAMBLE.size,
                                f"its contents cannot be decoded ({exc})") from None
        self.index: Index | None = None
        if not force_scan:
            self.index = self._load_footer()
        if self.index is None:
            self.truncated = not self.index_damaged
            self._scan()
        self.end = self._end_meta()

    def _load_footer(self) -> Index | None:
        if self.size < fmt.PREAMBLE.size + fmt.LOCATOR.size:
            return None
        loc = fmt.parse_locator(os.pread(self._fd, fmt.LOCATOR.size, self.size - fmt.LOCATOR.size))
        if loc is None:
            return None                     # no locator at the end: the file was cut short
        if loc[0] + loc[1] != self.size - fmt.LOCATOR.size:
            self.index_damaged = True
            return None
        try:
            kind, data = self._read(loc[0], "the footer index")
            if kind != fmt.FOOTER:
                return None
            meta, arrays = fmt.parse_body(data, fmt.HEAD.size, len(data) - fmt.CRC.size)
            return Index.from_footer(fmt.load_json(meta), {n: a for _, n, a in arrays},
                                     self.version[0])
        except (fmt.TraceError, ValueError, KeyError, TypeError, AttributeError, struct.error):
            self.index_damaged = True
            return None

    def _scan(self) -> None:
        ix = Index()
        for off, kind, data in self._walk(index_only=True):
            try:
                self._index_frame(ix, off, kind, data)
            except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
                self.problems.append(f"the {fmt.KIND_NAMES.get(kind, 'unknown')} frame at byte "
                                     f"{off} cannot be decoded ({exc}); it was skipped")
        self.index = ix
        if self.index_damaged:
            self.problems.insert(0, "the footer index is damaged; the frames were found by "
                                    "scanning the file")

    def _index_frame(self, ix: Index, off: int, kind: int, data: bytes) -> None:
        """Add one frame found by scanning to the index; its meta is decoded and checked first
        (ValueError, KeyError, TypeError when it is not what the format says)."""
        if kind in (fmt.ITERATION, fmt.BATCH):
            if kind == fmt.ITERATION:
                path, outer, k, trip = iteration_meta(data)
                n = 1
            else:
                if self.version[0] < 2:
                    raise ValueError("a version 1 trace holds no batches")
                path, outer, k, n, trip, _ = fmt.parse_batch_meta(meta_bytes(data))
            row = ix.row(path, outer)
            have = len(ix.per_row[row]) if row is not None else 0
            if k < 0 or k > have + self.size // (fmt.HEAD.size + fmt.CRC.size):
                raise ValueError(f"iteration {k} cannot be in a file of {self.size} bytes")
            if row is None:
                row = ix.start(path, outer, -1, trip)
            ix.per_row[row].add(k, n, off)
        elif kind in (fmt.LOOP_START, fmt.LOOP_FINISH):
            meta = fmt.check_meta(kind, fmt.load_json(meta_bytes(data)))
            path, outer = meta["path"], tuple(meta["outer"])
            row = ix.row(path, outer)
            if kind == fmt.LOOP_START:
                trip = meta.get("trip_count")
                trip = None if trip is None else int(trip)
                ix.path_info.setdefault(path, {"kind": meta.get("kind"),
                                               "layer_name": meta.get("layer_name"),
                                               "layer_id": meta.get("layer_id")})
                if row is None or ix.ex_start[row] >= 0:
                    ix.start(path, outer, off, trip)
                else:
                    ix.ex_start[row] = off
            else:
                iterations = int(meta["iterations"])
                reason, error = meta["reason"], meta.get("error")
                if not isinstance(reason, str) or not isinstance(error, (str, type(None))):
                    raise TypeError("its reason or error is not text")
                if row is None:
                    row = ix.start(path, outer, -1, None)
                ix.finish(row, off, iterations, reason, error)
        elif kind == fmt.NOTICE:
            ix.notices.append(off)
        elif kind == fmt.INPUTS:
            ix.inputs = off
        elif kind == fmt.RUN_FINISH:
            ix.run_finish = off
        elif kind == fmt.END:
            ix.end = off
        ix.frames += 1

    def _walk(self, index_only: bool = False, skipped: list | None = None
              ) -> Iterator[tuple[int, int, bytes]]:
        """Every good frame in file order: (offset, kind, frame bytes). Notes damage in problems
        (``index_only``), else in ``skipped`` when given."""
        if self.size <= fmt.PREAMBLE.size:
            self.valid_end = self.size
            return
        mm = mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)     # the file opened, not the path
        try:
            yield from self._walk_map(mm, index_only, skipped)
        finally:
            mm.close()

    def _walk_map(self, mm, index_only: bool, skipped: list | None = None):
        size = len(mm)
        pos = fmt.PREAMBLE.size
        head_size, crc_size = fmt.HEAD.size, fmt.CRC.size
        unpack_head = fmt.HEAD.unpack_from
        problems = self.problems if index_only else [] if skipped is None else skipped
        good_end = pos
        while pos + head_size <= size:
            sync, kind, _, _, blen = unpack_head(mm, pos)
            end = pos + head_size + blen + crc_size
            ok = sync == fmt.SYNC and end <= size
            if ok:
                data = mm[pos:end]
                ok = fmt.crc_ok(data)
            if not ok:
                nxt = self._next_frame(mm, pos + 1)
                if nxt < 0 and not (sync == fmt.SYNC and end <= size):
                    break                   # an incomplete last frame (or locator): truncated
                if kind == fmt.FOOTER or self._is_locator(mm, pos):
                    pass
                elif sync == fmt.SYNC:
                    problems.append(f"the {fmt.KIND_NAMES.get(kind, 'unknown')} frame at byte "
                                    f"{pos} is damaged (checksum mismatch); it was skipped")
                else:
                    problems.append(f"bytes {pos}..{nxt if nxt >= 0 else size} are not a frame; "
                                    f"they were skipped")
                if nxt < 0:
                    break
                pos = nxt
                continue
            good_end = end
            if kind != fmt.FOOTER:
                yield pos, kind, data
            pos = end
        if index_only:
            self.valid_end = good_end

    def _is_locator(self, mm, pos: int) -> bool:
        return len(mm) - pos == fmt.LOCATOR.size and fmt.parse_locator(mm[pos:]) is not None

    @staticmethod
    def _next_frame(mm, start: int) -> int:
        """Offset of the next position at or after ``start`` holding a complete, valid frame."""
        size = len(mm)
        while True:
            p = mm.find(fmt.SYNC, start)
            if p < 0 or p + fmt.HEAD.size > size:
                return -1
            _, _, _, _, blen = fmt.HEAD.unpack_from(mm, p)
            end = p + fmt.HEAD.size + blen + fmt.CRC.size
            if end <= size and fmt.crc_ok(mm[p:end]):
                return p
            start = p + 1

    # -- reading frames ---------------------------------------------------------------------
    def _read(self, off: int, what: str) -> tuple[int, bytes]:
        """(kind, frame bytes) of the frame at ``off``, checked; TraceError naming ``what``."""
        if self._fd < 0:
            raise fmt.TraceError(f"the trace {self.path} is closed.")
        head = os.pread(self._fd, fmt.HEAD.size, off)
        if len(head) < fmt.HEAD.size:
            raise self._damaged(what, off, "it runs past the end of the file")
        sync, kind, _, _, blen = fmt.HEAD.unpack(head)
        if sync != fmt.SYNC:
            raise self._damaged(what, off, "no frame starts there")
        total = fmt.HEAD.size + blen + fmt.CRC.size
        if off + total > self.size:
            raise self._damaged(what, off, "it runs past the end of the file")
        data = os.pread(self._fd, total, off)
        if len(data) != total or not fmt.crc_ok(data):
            raise self._damaged(what, off, "its checksum does not match")
        return kind, data

    def _damaged(self, what: str, off: int, why: str) -> fmt.TraceError:
        return fmt.TraceError(f"{self.path}: {what} (at byte {off}) is damaged: {why}.")

    def _decode(self, off: int, what: str) -> Record:
        kind, data = self._read(off, what)
        return self._decode_data(off, kind, data, what)

    def _decode_data(self, off: int, kind: int, data: bytes, what: str) -> Record:
        try:
            meta, arrays = fmt.parse_body(data, fmt.HEAD.size, len(data) - fmt.CRC.size)
            if kind == fmt.ITERATION:
                return Record(kind, off, iteration_frame(meta, arrays, off), arrays)
            if kind == fmt.BATCH:
                return Record(kind, off, batch_frame(meta, arrays, off), arrays)
            return Record(kind, off, fmt.check_meta(kind, fmt.load_json(meta)), arrays)
        except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
            raise self._damaged(what, off, f"its contents cannot be decoded ({exc})") from None

    # -- checking and recovery ----------------------------------------------------------------
    def verify(self) -> list[str]:
        """Read every frame and check it: its checksum, its meta, and every array in it (the
        .npy header, a plain dtype, never an object array, sizes that fill the frame exactly);
        return the problems found (empty: all is well)."""
        problems = []
        for off, kind, data in self._walk_checked(problems):
            try:
                if kind == fmt.BATCH:
                    meta, arrays = fmt.parse_body(data, fmt.HEAD.size, len(data) - fmt.CRC.size)
                    batch_frame(meta, arrays, off)
                    continue
                meta, _ = fmt.parse_body(data, fmt.HEAD.size, len(data) - fmt.CRC.size, raw=True)
                if kind == fmt.ITERATION:
                    iteration_fields(meta)
                else:
                    fmt.check_meta(kind, fmt.load_json(meta))
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                problems.append(f"the {fmt.KIND_NAMES.get(kind, 'unknown')} frame at byte {off} is "
                                f"invalid: {exc}")
        return problems

    def _walk_checked(self, problems: list):
        if self.size <= fmt.PREAMBLE.size:
            return
        mm = mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)
        saved = self.problems
        self.problems = problems
        try:
            yield from self._walk_map(mm, True)
        finally:
            self.problems = saved
            mm.close()
        if self.truncated:
            problems.append(self.truncation_text())

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
        except fmt.TraceError as exc:
            self.problems.append(str(exc))
            return None

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()
