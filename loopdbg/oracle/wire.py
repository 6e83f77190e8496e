"""The parent/child wire: one message is a JSON header and a list of arrays as ``.npy`` blobs.

    message := u64 header_len, header (UTF-8 JSON object), u64 n_arrays,
               n_arrays x (u64 blob_len, blob)            blob := one .npy file, never pickled

All integers little-endian. Arrays cross in numpy's own ``.npy`` format with ``allow_pickle``
off on both sides, so an object array can neither be sent nor received. The reader takes a
deadline: a child that stops answering is a hang, reported, never waited on for ever.
"""

from __future__ import annotations

import io
import json
import os
import select
import struct
import time
from typing import Callable, Sequence

import numpy as np

_U64 = struct.Struct("<Q")
MAX_HEADER = 64 * 2**20


class WireClosed(Exception):
    """The other side closed the pipe (it exited or died)."""


class WireTimeout(Exception):
    """The other side did not answer before the deadline."""


def encode(header: dict, arrays: Sequence[np.ndarray] = ()) -> bytes:
    """One message as bytes; raises ValueError for an array that would need a pickle."""
    head = json.dumps(header).encode()
    parts = [_U64.pack(len(head)), head, _U64.pack(len(arrays))]
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.hasobject:
            raise ValueError(f"an array of dtype {a.dtype} cannot cross without a pickle")
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.ascontiguousarray(a) if a.ndim else a,
                                  allow_pickle=False)
        blob = buf.getvalue()
        parts += [_U64.pack(len(blob)), blob]
    return b"".join(parts)


def send(fd: int, header: dict, arrays: Sequence[np.ndarray] = ()) -> None:
    data = memoryview(encode(header, arrays))
    while data:
        try:
            n = os.write(fd, data)
        except BrokenPipeError:
            raise WireClosed() from None
        data = data[n:]


def receive(fd: int, deadline: float | None = None,
            watch: Callable[[], None] | None = None) -> tuple[dict, list[np.ndarray]]:
    """Read one message from ``fd``; WireTimeout past ``deadline`` (time.monotonic()).

    ``watch`` is called about every 0.2 s while waiting (the parent checks the child's memory
    there and may raise to give up).
    """
    reader = _Reader(fd, deadline, watch)
    (n,) = _U64.unpack(reader.read(8))
    if n > MAX_HEADER:
        raise ValueError(f"a message header of {n} bytes")
    header = json.loads(reader.read(n).decode())
    (count,) = _U64.unpack(reader.read(8))
    arrays = []
    for _ in range(count):
        (size,) = _U64.unpack(reader.read(8))
        blob = reader.read(size)
        arrays.append(np.lib.format.read_array(io.BytesIO(blob), allow_pickle=False))
    return header, arrays


class _Reader:
    def __init__(self, fd: int, deadline: float | None, watch):
        self.fd, self.deadline, self.watch = fd, deadline, watch

    def read(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            self._wait()
            chunk = os.read(self.fd, min(left, 1 << 20))
            if not chunk:
                raise WireClosed()
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _wait(self) -> None:
        if self.deadline is None and self.watch is None:
            return
        while True:
            step = 0.2
            if self.deadline is not None:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise WireTimeout()
                step = min(step, left)
            ready, _, _ = select.select([self.fd], [], [], step)
            if ready:
                return
            if self.watch is not None:
                self.watch()
