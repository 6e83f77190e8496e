"""Where every frame of a trace is: built while writing (or while scanning a damaged file), saved as
the footer, loaded back in one read.

A loop *execution* is one run of a loop layer: the key is (path, outer), where ``outer`` holds the
iterations of the enclosing loops (``()`` for a top-level loop). Its iterations are consecutive
from 0, so the offsets of its ITERATION frames form one array and ``(path, outer, k)`` is found in
O(1). Columns are ``array`` objects while building and numpy arrays once loaded from a footer.
"""

from __future__ import annotations

from array import array

import numpy as np

_COLUMNS = (("ex_path", "i", np.int32), ("ex_outer_n", "i", np.int32),
            ("ex_outer", "q", np.int64), ("ex_start", "q", np.int64),
            ("ex_finish", "q", np.int64), ("ex_iterations", "q", np.int64),
            ("ex_reason", "h", np.int16), ("ex_trip", "q", np.int64),
            ("ex_first", "q", np.int64), ("ex_count", "q", np.int64),
            ("iter_offsets", "Q", np.uint64), ("notices", "Q", np.uint64))


class Index:
    def __init__(self):
        self.paths: list[str] = []
        self.path_ids: dict[str, int] = {}
        self.path_info: dict[str, dict] = {}
        self.reasons: list[str] = []
        self.errors: dict[int, str] = {}            # execution row -> error message
        for name, code, _ in _COLUMNS:
            setattr(self, name, array(code))
        self.per_row: list[array] = []              # while building: offsets of each execution
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
        self.per_row.append(array("Q"))
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

    def offsets(self, row: int):
        if not self.loaded:
            return self.per_row[row]
        first = int(self.ex_first[row])
        return self.iter_offsets[first:first + int(self.ex_count[row])]

    def count(self, row: int) -> int:
        return int(self.ex_count[row]) if self.loaded else len(self.per_row[row])

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
        self.iter_offsets = array("Q")
        for offs in self.per_row:
            self.ex_first.append(len(self.iter_offsets))
            self.ex_count.append(len(offs))
            self.iter_offsets.extend(offs)
        meta = {"paths": self.paths, "path_info": self.path_info, "reasons": self.reasons,
                "errors": {str(k): v for k, v in self.errors.items()}, "inputs": self.inputs,
                "run_finish": self.run_finish, "end": self.end, "frames": self.frames}
        arrays = [(name, np.frombuffer(getattr(self, name), dtype=dt) if len(getattr(self, name))
                   else np.zeros(0, dt)) for name, _, dt in _COLUMNS]
        return meta, arrays

    @classmethod
    def from_footer(cls, meta: dict, arrays: dict) -> "Index":
        ix = cls()
        ix.paths = list(meta["paths"])
        ix.path_ids = {p: k for k, p in enumerate(ix.paths)}
        ix.path_info = dict(meta.get("path_info", {}))
        ix.reasons = list(meta["reasons"])
        ix.errors = {int(k): v for k, v in meta.get("errors", {}).items()}
        ix.inputs, ix.run_finish, ix.end = meta["inputs"], meta["run_finish"], meta["end"]
        ix.frames = meta["frames"]
        for name, _, dt in _COLUMNS:
            a = arrays[name]
            if a.dtype != dt or a.ndim != 1:
                raise ValueError(f"footer column {name} has the wrong type")
            setattr(ix, name, a)
        ix.per_row = []
        ix.loaded = True
        ix._keys = None
        ix._key_list = None
        n = len(ix.ex_path)
        if any(len(getattr(ix, c)) != n for c in ("ex_outer_n", "ex_start", "ex_finish",
                                                  "ex_iterations", "ex_reason", "ex_trip",
                                                  "ex_first", "ex_count")):
            raise ValueError("footer columns disagree in length")
        if n and int((ix.ex_first + ix.ex_count).max()) > len(ix.iter_offsets):
            raise ValueError("footer offsets are out of range")
        return ix
