"""The background thread that puts a trace's bytes on disk, so the run computes while the disk writes.

The recorder hands over batches (a ``bytearray`` of small frames, or a list of buffers holding a big
frame's arrays without copying them). The queue is bounded in bytes, so memory stays flat however
long the run: when the disk is slower than the model, the run waits. A write error (a full disk) is
kept and raised by the next ``put``/``drain`` in the recording thread. Small batches are written
by the recording thread itself when the writer thread is idle: waking a thread costs more than
the write (GIL hand-offs), so a scalar loop never pays for the thread.
"""

from __future__ import annotations

import os
import threading
from collections import deque


_IOV = 512                  # buffers per writev (Linux allows 1024)


class Sink:
    def __init__(self, raw, limit: int = 64 << 20):
        self.raw = raw                  # an unbuffered file (FileIO)
        self.limit = limit
        self.accepted = 0               # bytes handed over so far
        self.written = 0                # bytes on disk so far
        self.error: OSError | None = None
        self.last = None                # the last object handed over (see TraceWriter._settle)
        self._queue: deque = deque()
        self._inflight = 0
        self._closing = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="loopdbg-trace-writer", daemon=True)
        self._thread.start()

    def put(self, item, nbytes: int, inline: bool = False) -> None:
        """Hand ``item`` over; with ``inline``, write it in the calling thread if the writer
        thread is idle (cheaper for small batches than waking it: no GIL hand-offs)."""
        cv = self._cv
        if inline and not self._inflight and self.error is None:
            self.accepted += nbytes
            self.last = item
            try:
                self._write_item(item)
            except OSError as exc:
                self.error = exc
                raise
            return
        with cv:
            while self._inflight and self._inflight + nbytes > self.limit and self.error is None:
                cv.wait()
            if self.error is not None:
                raise self.error
            self._queue.append((item, nbytes))
            self._inflight += nbytes
            self.accepted += nbytes
            self.last = item
            cv.notify_all()

    def drain(self) -> None:
        """Wait until everything handed over is on disk (or failed)."""
        with self._cv:
            while self._inflight and self.error is None:
                self._cv.wait()
            if self.error is not None:
                raise self.error

    def close(self) -> None:
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        self._thread.join()

    def _run(self) -> None:
        cv = self._cv
        while True:
            with cv:
                while not self._queue and not self._closing:
                    cv.wait()
                if not self._queue:
                    return
                item, nbytes = self._queue.popleft()
            if self.error is None:
                try:
                    self._write_item(item)
                except OSError as exc:
                    self.error = exc
            with cv:
                self._inflight -= nbytes
                cv.notify_all()

    def _write_item(self, item) -> None:
        if isinstance(item, list):
            if hasattr(self.raw, "fileno"):
                self._writev(item)
            else:                           # a file object of its own (tests): one by one
                for buf in item:
                    self._write(buf)
        else:
            self._write(item)

    def _writev(self, bufs: list) -> None:
        """Write the buffers in order without joining them: ``os.writev`` of up to ``_IOV``
        at a time (a short write goes on from where it stopped)."""
        fd = self.raw.fileno()
        views = [memoryview(b).cast("B") for b in bufs]
        views = [v for v in views if len(v)]
        while views:
            batch = views[:_IOV]
            k = os.writev(fd, batch)
            if not k:
                raise OSError("the file accepted no more bytes")
            self.written += k
            done = 0
            for v in batch:                 # drop what was written, keep the rest
                if k >= len(v):
                    k -= len(v)
                    done += 1
                else:
                    views[done] = v[k:]
                    break
            del views[:done]

    def _write(self, buf) -> None:
        view = memoryview(buf).cast("B")
        n = len(view)
        done = 0
        write = self.raw.write
        while done < n:
            k = write(view[done:] if done else view)
            if not k:
                raise OSError("the file accepted no more bytes")
            done += k
        self.written += n
