"""Iteration frames of fixed layout, encoded a few thousand at a time with numpy.

When the tensors of a loop execution keep their dtypes and shapes (the usual case) and are small,
every ITERATION frame of it has the same bytes except the iteration number, the condition, the
"continues" flag, the tensors' data and the checksum. Per iteration the writer then only keeps the
tensors' bytes (``tobytes``) and the two flags; ``materialize`` builds the frames as rows of a
numpy array from a template, and computes their crc32 checksums with tables: crc32 is affine over
GF(2), so for messages of one length crc(row) = crc(template) ^ XOR over the varying bytes of a
per-(position, value) table. The bytes are exactly those of the per-frame encoder.
"""

from __future__ import annotations

import zlib

import numpy as np

from loopdbg.trace import format as F

MAX_FRAME = 4096            # bytes: bigger frames are encoded one by one
MAX_TABLE_BYTES = 64        # varying bytes per frame up to which crc tables are used
BATCH = 4096                # frames per materialization (at most)
_tables: dict = {}          # (frame length, varying positions) -> crc tables


class FixedLayout:
    """The frame template of one loop execution, and the iterations waiting to be encoded."""

    def __init__(self, writer, lead: bytes, trip: int, tail_count: bytes, slots: list,
                 next_iteration: int, offsets):
        """``slots``: [(entry prefix, nbytes)] in frame order; ``lead``: head + meta length."""
        self.writer = writer
        self.offsets = offsets
        self.next = next_iteration
        self.data: list[bytes] = []          # slot bytes, frame after frame
        self.flags: list = []                # cond, continues, frame after frame
        self.n = 0
        it_off = len(lead)
        parts = [lead, F.ITER_FIXED.pack(0, -1 if trip is None else trip, 0, 0), tail_count]
        pos = it_off + F.ITER_FIXED.size + len(tail_count)
        self.slices = []                     # (frame offset, data offset, nbytes)
        dpos = 0
        for prefix, nbytes in slots:
            parts.append(prefix)
            pos += len(prefix)
            self.slices.append((pos, dpos, nbytes))
            parts.append(bytes(nbytes))
            pos += nbytes
            dpos += nbytes
        self.data_size = dpos
        body = b"".join(parts)
        self.size = len(body) + F.CRC.size
        self.template = np.frombuffer(body + bytes(F.CRC.size), dtype=np.uint8)
        self.it_off = it_off
        self.cond_off = it_off + 16
        varying = list(range(it_off, it_off + 8)) + [it_off + 16, it_off + 17]
        for off, _, nb in self.slices:
            varying.extend(range(off, off + nb))
        self.varying = np.array(varying, dtype=np.intp)
        self.table = None
        if len(varying) <= MAX_TABLE_BYTES:
            key = (len(body), tuple(varying))
            self.table = _tables.get(key)
            if self.table is None:
                if len(_tables) > 256:
                    _tables.clear()
                self.table = _tables[key] = _crc_tables(body, self.varying)
        self.template_crc = zlib.crc32(body)     # with zeros in every varying byte
        self.capacity = max(64, min(BATCH, writer._batch // self.size))   # frames per batch
        self.step = min(256, self.capacity)
        self.check_at = self.step

    @staticmethod
    def fits(total_size: int) -> bool:
        return total_size <= MAX_FRAME

    def materialize(self) -> None:
        """Encode the waiting iterations into the writer's pending bytes."""
        n = self.n
        if not n:
            return
        size = self.size
        rows = np.empty((n, size), dtype=np.uint8)
        rows[:] = self.template
        first = self.next - n
        its = np.arange(first, first + n, dtype="<i8")
        rows[:, self.it_off:self.it_off + 8] = its.view(np.uint8).reshape(n, 8)
        rows[:, self.cond_off:self.cond_off + 2] = np.array(self.flags, dtype=bool).reshape(n, 2)
        if self.data_size:
            data = np.frombuffer(b"".join(self.data), dtype=np.uint8).reshape(n, self.data_size)
            for off, dpos, nb in self.slices:
                rows[:, off:off + nb] = data[:, dpos:dpos + nb]
        body = size - F.CRC.size
        if self.table is not None:
            picked = self.table[np.arange(len(self.varying)), rows[:, self.varying]]
            crcs = np.bitwise_xor.reduce(picked, axis=1) ^ np.uint32(self.template_crc)
        else:
            flat = memoryview(rows.reshape(-1))
            crc32 = zlib.crc32
            crcs = np.array([crc32(flat[k * size:k * size + body]) for k in range(n)],
                            dtype=np.uint32)
        rows[:, body:] = crcs.astype("<u4").view(np.uint8).reshape(n, 4)
        base = self.writer.append_frames(rows.tobytes(), n)
        self.offsets.frombytes(np.arange(base, base + n * size, size, dtype=np.uint64).tobytes())
        self.data.clear()
        self.flags.clear()
        self.n = 0
        self.check_at = self.step


def _crc_tables(body: bytes, varying: np.ndarray) -> np.ndarray:
    """table[j, x] = crc32(zeros with byte x at varying[j]) ^ crc32(zeros): linear in x."""
    length = len(body)
    zeros = bytearray(length)
    cz = zlib.crc32(zeros)
    basis = np.empty((len(varying), 8), dtype=np.uint32)
    for j, p in enumerate(varying.tolist()):
        for bit in range(8):
            zeros[p] = 1 << bit
            basis[j, bit] = zlib.crc32(zeros) ^ cz
        zeros[p] = 0
    bits = (np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1          # (256, 8)
    return np.bitwise_xor.reduce(np.where(bits[None, :, :] == 1, basis[:, None, :],
                                          np.uint32(0)), axis=2).astype(np.uint32)
