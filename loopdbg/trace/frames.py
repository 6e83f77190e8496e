"""What a trace reader hands out: decoded frames, loop executions, and the decoding of the
ITERATION frame's fixed fields (see the format in ``trace/__init__.py``)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from loopdbg.trace import format as fmt

_GROUP_ATTR = {fmt.BACK_EDGES: "back_edges", fmt.SCAN_SLICES: "scan_slices",
               fmt.SLICED_INPUTS: "sliced_inputs", fmt.NODES: "nodes", fmt.BODY_INPUTS: "inputs"}


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
        return fmt.KIND_NAMES.get(self.kind, f"kind {self.kind}")


def meta_bytes(data: bytes) -> bytes:
    (mlen,) = fmt.META_LEN.unpack_from(data, fmt.HEAD.size)
    return data[fmt.HEAD.size + 4:fmt.HEAD.size + 4 + mlen]


def iteration_meta(data: bytes) -> tuple:
    """(path, outer, iteration, trip) of an ITERATION frame without decoding its arrays."""
    return _parse_iter_meta(meta_bytes(data))[:4]


def iteration_fields(meta: bytes) -> tuple:
    """(path, outer, iteration, trip, cond, continues) of an ITERATION frame's meta bytes;
    ValueError or struct.error when they do not have the format's layout."""
    return _parse_iter_meta(meta)


def _parse_iter_meta(meta: bytes) -> tuple:
    it, trip, cond, cont, n_outer, plen = fmt.ITER_META.unpack_from(meta, 0)
    pos = fmt.ITER_META.size
    outer = struct.unpack_from(f"<{n_outer}q", meta, pos)
    pos += 8 * n_outer
    if pos + plen != len(meta):
        raise ValueError("the iteration's meta has the wrong length")
    path = meta[pos:pos + plen].decode()
    return path, outer, it, (None if trip < 0 else trip), bool(cond), bool(cont)


def iteration_frame(meta: bytes, arrays: list, off: int) -> IterationFrame:
    path, outer, it, trip, cond, cont = _parse_iter_meta(meta)
    return iteration_frame_of(path, it, trip, cond, cont, outer, arrays, off)


@dataclass
class BatchFrame:
    """A BATCH frame decoded: iterations ``first`` .. ``first + count - 1`` of one execution,
    each array holding one row per iteration."""

    path: str
    outer: tuple[int, ...]
    first: int
    count: int
    trip_count: int | None
    flags: bytes
    arrays: list = field(default_factory=list, repr=False)   # [(group, name, rows)]
    offset: int = -1

    def iteration(self, k: int) -> IterationFrame:
        """Iteration ``k`` (absolute, within the batch) as an IterationFrame of row views."""
        j = k - self.first
        flag = self.flags[j]
        return iteration_frame_of(self.path, k, self.trip_count, bool(flag & 1),
                                  bool(flag & 2), self.outer,
                                  [(g, n, a[j]) for g, n, a in self.arrays], self.offset)


def batch_frame(meta: bytes, arrays: list, off: int) -> BatchFrame:
    """A BATCH frame's meta and arrays, checked: every array has one row per iteration."""
    path, outer, first, count, trip, flags = fmt.parse_batch_meta(meta)
    for _, name, a in arrays:
        if a.ndim < 1 or a.shape[0] != count:
            raise ValueError(f"array '{name}' does not have one row per iteration")
    return BatchFrame(path, outer, first, count, trip, flags, arrays, off)


def iteration_frame_of(path, iteration, trip, cond, cont, outer, arrays, off) -> IterationFrame:
    f = IterationFrame(path, iteration, trip, cond, cont, outer, offset=off)
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
