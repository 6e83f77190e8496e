"""Where every frame of a trace is: built while writing (or while scanning a damaged file), saved as
the footer, loaded back in one read.

A loop *execution* is one run of a loop layer: the key is (path, outer), where ``outer`` holds the
iterations of the enclosing loops (``()`` for a top-level loop). Its iterations are consecutive
from 0 and stored in *runs*: an ITERATION frame holds a run of one, a BATCH frame a run of many.
The index keeps, per run, its first iteration and its frame's offset (``Runs``), so it costs 16
bytes per batch of thousands of iterations, and ``(path, outer, k)`` is one dict lookup and one
binary search among the execution's runs (``locate``). Columns are ``array`` objects while
building and numpy arrays once loaded from a footer.

Version 1 footers (one offset per iteration, ``iter_offsets``) are read too: each iteration is
then a run of its own.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

import numpy as np

_COLUMNS = (("ex_path", "i", np.int32), ("ex_outer_n", "i", np.int32),
            ("ex_outer", "q", np.int64), ("ex_start", "q", np.int64),
            ("ex_finish", "q", np.int64), ("ex_iterations", "q", np.int64),
            ("ex_reason", "h", np.int16), ("ex_trip", "q", np.int64),
            ("ex_first", "q", np.int64), ("ex_count", "q", np.int64),
            ("ex_recorded", "q", np.int64), ("run_first", "q", np.int64),
            ("run_offset", "Q", np.uint64), ("notices", "Q", np.uint64))
_V1_COLUMNS = tuple(c for c in _COLUMNS if c[0] not in ("ex_recorded", "run_first", "run_offset")) \
    + (("iter_offsets", "Q", np.uint64),)


class Runs:
    """Where the recorded iterations of one execution are, while writing or scanning: runs of
    consecutive iterations, each in one frame, as (first iteration, frame offset); a gap left by
    a damaged frame is a run at offset 0 (missing)."""

    __slots__ = ("firsts", "offsets", "count")

    def __init__(self):
        self.firsts = array("q")
        self.offsets = array("Q")
        self.count = 0                 # iterations covered

    def __len__(self) -> int:
        return self.count

    def append(self, offset: int) -> None:
        """The next iteration, in its own frame at ``offset``."""
        self.firsts.append(self.count)
        self.offsets.append(offset)
        self.count += 1

    def add(self, first: int, n: int, offset: int) -> None:
        """Iterations ``first`` .. ``first + n - 1`` in one frame at ``offset``; ValueError when
        they overlap iterations already placed."""
        if first < self.count or n < 1:
            raise ValueError(f"iterations {first}..{first + n - 1} come after iteration "
                             f"{self.count - 1} was already placed")
        if first > self.count:                      # frames lost in between
            self.firsts.append(self.count)
            self.offsets.append(0)
        self.firsts.append(first)
        self.offsets.append(offset)
        self.count = first + n


class Index:
    def __init__(self):
        self.paths: list[str] = []
        self.path_ids: dict[str, int] = {}
        self.path_info: dict[str, dict] = {}
        self.reasons: list[str] = []
        self.errors: dict[int, str] = {}            # execution row -> error message
        for name, code, _ in _COLUMNS:
            setattr(self, name, array(code))
        self.per_row: list[Runs] = []               # while building: each execution's runs
        self._keys: dict | None = {}
        self._key_list: list | None = None
        self.inputs = -1                            # offsets of the single frames (-1: absent)
        self.run_finish = -1
        self.end = -1
        self.frames = 0
        self.loaded = False                         # True: read from a footer, not for building

    # -- building ---------------------------------------------------------------------------
    def path_id(self, path: str) -> int:
        pid = self.path_ids.get(path)
        if pid is None:
            pid = self.path_ids[path] = len(self.paths)
            self.paths.append(path)
        return pid

    def start(self, path: str, outer: tuple, offset: int, trip: int | None) -> int:
        """A new execution (a LOOP_START frame at ``offset``, or -1 when it was not seen)."""
        row = len(self.ex_path)
        self.ex_path.append(self.path_id(path))
        self.ex_outer_n.append(len(outer))
        self.ex_outer.extend(outer)
        self.ex_start.append(offset)
        self.ex_finish.append(-1)
        self.ex_iterations.append(-1)
        self.ex_reason.append(-1)
        self.ex_trip.append(-1 if trip is None else trip)
        self.per_row.append(Runs())
        self.keys()[(path, tuple(outer))] = row
        return row

    def finish(self, row: int, offset: int, iterations: int, reason: str, error: str | None):
        self.ex_finish[row] = offset
        self.ex_iterations[row] = iterations
        if reason not in self.reasons:
            self.reasons.append(reason)
        self.ex_reason[row] = self.reasons.index(reason)
        if error:
            self.errors[row] = error

    # -- queries ----------------------------------------------------------------------------
    def keys(self) -> dict:
        """{(path, outer): row}, built on first use for a loaded index."""
        if self._keys is None:
            keys = {}
            pos = 0
            paths = self.paths
            outer_n = self.ex_outer_n.tolist()
            flat = self.ex_outer.tolist()
            for row, pid in enumerate(self.ex_path.tolist()):
                n = outer_n[row]
                keys[(paths[pid], tuple(flat[pos:pos + n]))] = row
                pos += n
            self._keys = keys
        return self._keys

    def row(self, path: str, outer: tuple = ()) -> int | None:
        return self.keys().get((path, tuple(outer)))

    def rows(self, path: str | None = None) -> list[int]:
        """Execution rows in the order they started (only those of ``path`` if given)."""
        if path is None:
            return list(range(len(self.ex_path)))
        pid = self.path_ids.get(path)
        if pid is None:
            return []
        return [r for r, p in enumerate(self.ex_path) if p == pid]

    def key(self, row: int) -> tuple[str, tuple]:
        if self._key_list is None or len(self._key_list) != len(self.ex_path):
            self._key_list = [None] * len(self.ex_path)
            for k, r in self.keys().items():
                self._key_list[r] = k
        return self._key_list[row]

    def runs(self, row: int) -> tuple:
        """(first iterations, frame offsets) of the execution's runs, in iteration order."""
        if not self.loaded:
            r = self.per_row[row]
            return r.firsts, r.offsets
        first, n = int(self.ex_first[row]), int(self.ex_count[row])
        return self.run_first[first:first + n], self.run_offset[first:first + n]

    def locate(self, row: int, k: int) -> tuple[int, int]:
        """(frame offset, first iteration of that frame) of iteration ``k`` (0 <= k < count);
        offset 0: the frame is missing."""
        firsts, offsets = self.runs(row)
        j = bisect_right(firsts, k) - 1
        if j < 0:                                # (a damaged footer: the frame check says so)
            return 0, 0
        return int(offsets[j]), int(firsts[j])

    def offsets(self, row: int) -> np.ndarray:
        """The frame offset of every recorded iteration of the execution (runs expanded)."""
        firsts, offsets = self.runs(row)
        firsts = np.asarray(firsts, dtype=np.int64)
        ends = np.append(firsts[1:], self.count(row)) if len(firsts) else firsts
        return np.repeat(np.asarray(offsets, dtype=np.uint64), ends - firsts)

    def count(self, row: int) -> int:
        return int(self.ex_recorded[row]) if self.loaded else len(self.per_row[row])

    def reason(self, row: int) -> str | None:
        code = int(self.ex_reason[row])
        return self.reasons[code] if code >= 0 else None

    @property
    def iterations_recorded(self) -> int:
        return sum(self.count(r) for r in range(len(self.ex_path)))

    # -- the footer -------------------------------------------------------------------------
    def footer(self) -> tuple[dict, list]:
        """(meta, [(name, array)]) of the FOOTER frame."""
        self.ex_first = array("q")
        self.ex_count = array("q")
        self.ex_recorded = array("q")
        self.run_first = array("q")
        self.run_offset = array("Q")
        for runs in self.per_row:
            self.ex_first.append(len(self.run_first))
            self.ex_count.append(len(runs.firsts))
            self.ex_recorded.append(runs.count)
            self.run_first.extend(runs.firsts)
            self.run_offset.extend(runs.offsets)
        meta = {"paths": self.paths, "path_info": self.path_info, "reasons": self.reasons,
                "errors": {str(k): v for k, v in self.errors.items()}, "inputs": self.inputs,
                "run_finish": self.run_finish, "end": self.end, "frames": self.frames}
        arrays = [(name, np.frombuffer(getattr(self, name), dtype=dt) if len(getattr(self, name))
                   else np.zeros(0, dt)) for name, _, dt in _COLUMNS]
        return meta, arrays

    @classmethod
    def from_footer(cls, meta: dict, arrays: dict, version: int = 2) -> "Index":
        ix = cls()
        _check_footer_meta(meta)
        ix.paths = list(meta["paths"])
        ix.path_ids = {p: k for k, p in enumerate(ix.paths)}
        ix.path_info = dict(meta.get("path_info", {}))
        ix.reasons = list(meta["reasons"])
        ix.errors = {int(k): v for k, v in meta.get("errors", {}).items()}
        ix.inputs, ix.run_finish, ix.end = meta["inputs"], meta["run_finish"], meta["end"]
        ix.frames = meta["frames"]
        for name, _, dt in (_COLUMNS if version >= 2 else _V1_COLUMNS):
            a = arrays[name]
            if a.dtype != dt or a.ndim != 1:
                raise ValueError(f"footer column {name} has the wrong type")
            setattr(ix, name, a)
        ix.per_row = []
        ix.loaded = True
        ix._keys = None
        ix._key_list = None
        if version < 2:                          # one run per iteration
            counts = ix.ex_count
            ix.ex_recorded = counts.copy()
            ix.run_offset = ix.iter_offsets
            ix.run_first = np.zeros(len(ix.iter_offsets), np.int64)
            for first, n in zip(ix.ex_first.tolist(), counts.tolist()):
                if 0 <= first and n >= 0 and first + n <= len(ix.run_first):
                    ix.run_first[first:first + n] = np.arange(n)
        n = len(ix.ex_path)
        if any(len(getattr(ix, c)) != n for c in ("ex_outer_n", "ex_start", "ex_finish",
                                                  "ex_iterations", "ex_reason", "ex_trip",
                                                  "ex_first", "ex_count", "ex_recorded")):
            raise ValueError("footer columns disagree in length")
        if len(ix.run_first) != len(ix.run_offset):
            raise ValueError("footer run columns disagree in length")
        if n and (int(ix.ex_first.min()) < 0 or int(ix.ex_count.min()) < 0
                  or int((ix.ex_first + ix.ex_count).max()) > len(ix.run_offset)):
            raise ValueError("footer offsets are out of range")
        if n and int(ix.ex_recorded.min()) < 0:
            raise ValueError("footer counts are negative")
        if n and (int(ix.ex_path.min()) < 0 or int(ix.ex_path.max()) >= len(ix.paths)):
            raise ValueError("footer loop indices are past its table of loops")
        if n and (int(ix.ex_reason.min()) < -1 or int(ix.ex_reason.max()) >= len(ix.reasons)):
            raise ValueError("footer stop reason indices are past its table of reasons")
        if n and (int(ix.ex_outer_n.min()) < 0 or int(ix.ex_outer_n.sum()) != len(ix.ex_outer)):
            raise ValueError("footer outer iteration counts disagree with its outer column")
        if any(e >= n for e in ix.errors):
            raise ValueError("footer errors name executions it does not have")
        return ix


def _is_int(v) -> bool:
    return type(v) is int and -1 <= v < 2**63


def _check_footer_meta(meta) -> None:
    """ValueError unless the footer's JSON meta has the fields and types the format says (a
    hostile footer whose checksum holds must not reach the readers as a str where an offset is
    expected, or a table that is not a list of names)."""
    if not isinstance(meta, dict):
        raise ValueError("the footer meta is not a JSON object")
    for name in ("paths", "reasons"):
        if not isinstance(meta.get(name), list) or \
                not all(isinstance(v, str) for v in meta[name]):
            raise ValueError(f"the footer's '{name}' is not a list of text")
    for name in ("inputs", "run_finish", "end", "frames"):
        if not _is_int(meta.get(name)):
            raise ValueError(f"the footer's '{name}' is not an offset")
    info = meta.get("path_info", {})
    if not isinstance(info, dict) or not all(isinstance(v, dict) for v in info.values()):
        raise ValueError("the footer's 'path_info' is not an object of objects")
    errors = meta.get("errors", {})
    if not isinstance(errors, dict) or not all(
            k.isascii() and k.isdigit() and len(k) < 19 and isinstance(v, str) for k, v in errors.items()):
        raise ValueError("the footer's 'errors' is not an object of messages by execution")
