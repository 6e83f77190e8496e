"""BATCH frames: many iterations of one loop execution in one frame, one header per tensor.

When the tensors of a loop execution keep their dtypes and shapes (the usual case) and are small,
the writer stops writing one ITERATION frame per iteration (~150 bytes of framing, names and .npy
header around a few bytes of data) and keeps, per iteration, only the tensors (references: the
engine never writes an array again once an event holds it) and one flag byte. ``materialize`` then writes them as one BATCH frame: its meta names the execution and the
first iteration, with one flag byte per iteration (bit 0: the condition, bit 1: continues), and
each tensor is one array whose rows are the iterations. A batch stands for exactly the ITERATION
frames its iterations would have had (``format.batch_iterations`` rebuilds them byte for byte),
so readers, ``diff`` and ``export`` see iterations, never batches.

A batch ends when it holds ``BATCH`` iterations or ``batch_bytes`` bytes of memory, or when the
writer flushes (at least every ``flush_interval``): a recording cut anywhere keeps every batch
written before the cut.
"""

from __future__ import annotations


import numpy as np

from loopdbg.trace import format as fmt

MAX_FRAME = 4096            # bytes of one iteration's frame: bigger ones are written one by one
BATCH = 16384               # iterations per BATCH frame (at most)


class BatchLayout:
    """The tensors of one loop execution's iterations, waiting to be written as a BATCH frame.

    The compiled writer (``fastpath``, batch mode) touches three attributes per iteration:
    ``next`` (the iteration it expects, then the one after), the rows' ``append`` and
    ``check_at`` (the iteration at which ``TraceWriter.batch_check`` looks at the batch next);
    the batch's first iteration is ``first``, so it holds ``next - first`` iterations."""

    __slots__ = ("writer", "runs", "next", "first", "path", "outer", "trip", "slots", "data",
                 "flags", "row_bytes", "size", "capacity", "step", "check_at")

    def __init__(self, writer, path: str, outer: tuple, trip: int | None, slots: list,
                 next_iteration: int, runs, same: tuple = ()):
        """``slots``: [(group, name, dtype, shape)] of the tensors, in frame order; ``same[k]``
        is the slot whose value slot ``k`` always is (a back edge that is also a scan slice
        shares its rows), or ``k``."""
        self.writer = writer
        self.runs = runs
        self.next = self.first = next_iteration
        self.path, self.outer, self.trip = path, outer, trip
        self.slots = slots
        same = same or tuple(range(len(slots)))
        rows: list[list] = []
        for k in range(len(slots)):             # each tensor's rows: the arrays themselves (the
            rows.append(rows[same[k]] if same[k] < k else [])   # engine never writes them again)
        self.data = rows
        self.flags: list = []                # (iteration, cond | continues << 1) where that is
        #                                      not 3 (cond and continues: nearly every one)
        self.row_bytes = sum(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                             for _, _, dtype, shape in slots)
        self.size = self.row_bytes + 1      # bytes per iteration in the file (plus the batch's)
        distinct = len({id(r) for r in rows})
        held = self.size + 120 * distinct   # ... and in memory while waiting (array objects)
        self.capacity = max(64, min(BATCH, writer.batch_bytes // held))
        self.step = min(256, self.capacity)
        self.check_at = self.first + self.step

    @property
    def n(self) -> int:
        """Iterations waiting in this batch."""
        return self.next - self.first

    @staticmethod
    def fits(frame_size: int) -> bool:
        return frame_size <= MAX_FRAME

    def materialize(self) -> None:
        """Write the waiting iterations as one BATCH frame into the writer's pending bytes."""
        n = self.next - self.first
        if not n:
            return
        first = self.first
        flags = bytearray(b"\x03") * n
        for it, f in self.flags:
            flags[it - first] = f
        meta = fmt.batch_meta(first, n, self.trip, self.path, self.outer, bytes(flags))
        parts = [fmt.META_LEN.pack(len(meta)), meta, fmt.COUNT.pack(len(self.slots))]
        joined: dict[int, bytes] = {}       # shared rows are joined once
        for (group, name, dtype, shape), rows in zip(self.slots, self.data):
            nb = name.encode()
            hdr = fmt.npy_header(dtype, (n,) + tuple(shape))
            data = joined.get(id(rows))
            if data is None:
                try:
                    data = b"".join(rows)
                except TypeError:               # a strided view: copy each row in C order
                    data = b"".join(np.ascontiguousarray(r) for r in rows)
                joined[id(rows)] = data
            parts += [fmt.ENTRY.pack(group, len(nb), len(hdr) + len(data)) + nb + hdr, data]
        head = fmt.HEAD.pack(fmt.SYNC, fmt.BATCH, 0, 0, sum(len(p) for p in parts))
        crc = fmt.crc32(head)
        for p in parts:                     # the rows are copied once, here, and once more
            crc = fmt.crc32(p, crc)           # when the pending frames are written
        parts.insert(0, head)
        parts.append(fmt.CRC.pack(crc))
        base = self.writer.append_frames(parts, 1)
        self.runs.add(first, n, base)
        for rows in self.data:
            rows.clear()
        self.flags.clear()
        self.first = self.next
        self.check_at = self.next + self.step
