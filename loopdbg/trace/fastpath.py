"""Compiled writers for the iterations of one loop execution.

A scalar loop writes one small frame per iteration, and the engine runs such an iteration in a
few microseconds, so the writer's cost per frame decides whether recording doubles the run time.
After the first iteration of an execution (written by the general code, with the body inputs),
``plan`` generates straight-line code for the next ones: it checks that the event is the next
iteration of this execution with tensors of the same dtypes and shapes, then encodes the frame
with one join and one checksum (*single* mode). Once an execution has run ``PROMOTE`` iterations
that way and its frames are small, ``promote`` switches it to *batch* mode (``batch.BatchLayout``),
which only keeps the tensors' bytes and a flag byte per iteration, written as BATCH frames. Code objects are cached per loop and tensor
signature, so the many short executions of a nested loop compile nothing.

Each mode gives two functions: ``fast(e) -> bool`` (False: not mine, nothing written) and
``write(e)`` (the same, falling back to the general ``TraceWriter.write``), installed as the
writer's ``write`` while the execution is current. What the fast path uses of its writer is
``FastPathWriter``; the plans it made for a writer are its own (``_writer_plans``).
"""

from __future__ import annotations

import struct
import types
import weakref
from typing import Callable, Protocol

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.engine.codegen import compile_source, function_code
from loopdbg.trace import format as fmt
from loopdbg.trace.batch import BatchLayout

PROMOTE = 128               # single-mode iterations before an execution may switch to batches
MAX_PLANS = 8               # per execution: tensors whose shapes keep changing stay general

_BIG = fmt.BIG
_code_cache: dict = {}      # (slot positions, mode) -> (fast code, write code)
# writer -> {(id(spec), tail length) -> plan}: the many executions of a nested loop share one
_writer_plans: "weakref.WeakKeyDictionary[FastPathWriter, dict]" = weakref.WeakKeyDictionary()


class FastPathWriter(Protocol):
    """What the fast path uses of its writer (``TraceWriter``)."""

    batch_bytes: int                        # frames are flushed and batched by this much
    pump: Callable | None                   # the installed code as a loop over events

    def write(self, event) -> None: ...     # the general writer (the class's method)

    def append_frame(self, frame: bytes, offsets) -> None: ...

    def append_frames(self, parts: list, count: int) -> int: ...

    def entry_prefix(self, group: int, name: str, v: np.ndarray) -> bytes: ...

    def check_every(self, frames: int) -> None: ...

    def batch_check(self) -> None: ...


class Execution:
    """One run of one loop (key: path, outer) as the writer sees it."""

    __slots__ = ("path", "outer", "spec", "offs", "slots", "tail", "fast", "write", "layout",
                 "plans", "promotable", "static", "single", "run", "planned", "pump")

    def __init__(self, path: str, outer: tuple, spec, offs, slots):
        self.path, self.outer, self.spec, self.offs, self.slots = path, outer, spec, offs, slots
        pb = path.encode()
        self.tail = struct.pack(f"<HH{len(outer)}q", len(outer), len(pb), *outer) + pb
        self.fast = self.write = self.layout = self.static = self.single = self.run = None
        self.pump = None                    # batch modes: the write code as a loop (``drain``)
        self.plans = 0
        self.promotable = False             # batch mode allowed (small frames, not interleaved)


def slots_of(spec) -> list | None:
    """(from body_out?, index, group, name) of every tensor an iteration frame holds."""
    try:
        return ([(True, r, fmt.BACK_EDGES, p) for p, r in spec.back_edge_view]
                + [(True, r, fmt.SCAN_SLICES, n) for n, r in spec.concat_view]
                + [(False, q, fmt.SLICED_INPUTS, n) for n, q in spec.sliced_view])
    except AttributeError:
        return None


def plan(writer: FastPathWriter, ex: Execution, e) -> None:
    """Compile single-mode code for the iterations after ``e`` (if its tensors allow)."""
    ex.fast = ex.write = ex.layout = ex.pump = None
    if ex.slots is None or e.nodes is not None or ex.plans >= MAX_PLANS:
        return
    ex.plans += 1
    values = [np.asarray((e.body_out if is_out else e.body_in)[idx])
              for is_out, idx, _, _ in ex.slots]
    sig = tuple((v.dtype, v.shape) for v in values)
    key = (id(ex.spec), len(ex.tail))
    plans = _writer_plans.get(writer)
    if plans is None:
        plans = _writer_plans[writer] = {}
    cached = plans.get(key)                 # the many executions of a nested loop share it
    if cached is None or cached[0] is not ex.spec or cached[1] != sig:
        if any(v.nbytes >= _BIG for v in values):
            return
        prefixes = [(writer.entry_prefix(group, name, v), v.nbytes)
                    for (_, _, group, name), v in zip(ex.slots, values)]
        size = (fmt.META_LEN.size + fmt.ITER_FIXED.size + len(ex.tail) + fmt.COUNT.size
                + sum(len(p) + n for p, n in prefixes))
        lead = fmt.HEAD.pack(fmt.SYNC, fmt.ITERATION, 0, 0, size) + \
            fmt.META_LEN.pack(fmt.ITER_FIXED.size + len(ex.tail))
        total = size + fmt.HEAD.size + fmt.CRC.size
        base = _namespace(writer, ex, sig, prefixes)
        base.update(LEAD=lead, append_frame=writer.append_frame)
        cached = plans[key] = (ex.spec, sig, prefixes, lead, total, base)
    _, sig, prefixes, lead, total, base = cached
    post = ex.tail + fmt.COUNT.pack(len(ex.slots))
    ex.static = (sig, prefixes, lead, post, total, e.trip_count)
    ex.promotable = BatchLayout.fits(total)
    ns = dict(base)
    ex.run = e.run                          # the compiled code takes this execution's events
    ex.planned = e.iteration                # ... with the tensors' dtypes and shapes of this one
    trip = e.trip_count
    ns.update(RUN=ex.run, TRIP=-1 if trip is None else trip, POST=post, OFFS=ex.offs,
              PLANNED=ex.planned)
    writer.check_every(max(1, min(128, writer.batch_bytes // total)))
    ex.fast, ex.write = ex.single = _functions(ex, "single", ns)


def demote(ex: Execution) -> None:
    """Another execution's frames come between this one's (an outer loop): batches would be cut
    short at every switch, so go back to single mode for good."""
    if ex.layout is not None:
        ex.layout.materialize()
        ex.layout = None
        ex.fast, ex.write = ex.single
        ex.pump = None
    ex.promotable = False


def promote(writer: FastPathWriter, ex: Execution) -> None:
    """Switch a long-running execution with small frames to batch mode."""
    sig, prefixes, lead, post, total, trip = ex.static
    slots = [(group, name, dtype, shape)
             for (_, _, group, name), (dtype, shape) in zip(ex.slots, sig)]
    layout = BatchLayout(writer, ex.path, ex.outer, trip, slots, len(ex.offs), ex.offs,
                         _same(ex.slots))
    ns = _namespace(writer, ex, sig, prefixes)
    ns.update(RUN=ex.run, PLANNED=ex.planned, B=layout, flags_append=layout.flags.append,
              batch_check=writer.batch_check)
    for k, rows in enumerate(layout.data):
        ns[f"data{k}_append"] = rows.append
    ex.layout = layout
    # Every iteration written so far had the planned dtypes and shapes; if the engine has
    # proved the loop steady by the last of them, the rest have them too: nothing to check.
    steady = ex.run is not None and ex.run.steady_from <= len(ex.offs) - 1
    ex.fast, ex.write = _functions(ex, "steady batch" if steady else "batch", ns)
    ex.promotable = False


def _same(slots) -> tuple[int, ...]:
    """For each slot, the first slot that holds the same value (itself if none does)."""
    first: dict = {}
    return tuple(first.setdefault((is_out, idx), k) for k, (is_out, idx, _, _) in enumerate(slots))


def _namespace(writer: FastPathWriter, ex: Execution, sig, prefixes) -> dict:
    ns = {"SPEC": ex.spec, "general": type(writer).write.__get__(writer), "W": writer,
          "IterationDone": ev.IterationDone, "ndarray": np.ndarray, "asarray": np.asarray,
          "join": b"".join, "pack_iter": fmt.ITER_FIXED.pack}
    for k, (dtype, shape) in enumerate(sig):
        ns[f"D{k}"], ns[f"S{k}"] = dtype, shape
        ns[f"P{k}"] = prefixes[k][0]
    return ns


def _functions(ex: Execution, mode: str, ns: dict):
    key = (tuple((is_out, idx) for is_out, idx, _, _ in ex.slots), mode)
    codes = _code_cache.get(key)
    if codes is None:
        codes = tuple(_compile(ex, mode, fallback) for fallback in ("return False",
                                                                    "return general(e)"))
        if mode != "single":
            codes += (_compile(ex, mode, "return general(e)", pump=True),)
        if len(_code_cache) > 512:
            _code_cache.clear()
        _code_cache[key] = codes
    ex.pump = None
    if len(codes) > 2:
        ex.pump = ns["SELF"] = types.FunctionType(codes[2], ns, "pump")
    return types.FunctionType(codes[0], ns, "fast"), types.FunctionType(codes[1], ns, "write")


class _Lines:
    """The lines of one generated writer function, written once for each of its shapes: ``f(e)``
    for one event, whose fallback is ``fallback`` (``return False`` or ``return general(e)``), or
    with ``pump`` a loop over the events (``TraceWriter.pump``), where a fallback writes the
    event by the general code and goes on unless that installed other code (then False), and the
    end is True when the events are exhausted."""

    def __init__(self, fallback: str, pump: bool):
        self.fallback_line, self.pump = fallback, pump
        self.lines = ["def f(events):", "    for e in events:"] if pump else ["def f(e):"]
        self.base = "        " if pump else "    "

    def add(self, depth: int, *texts: str) -> None:
        self.lines += [self.base + "    " * depth + t for t in texts]

    def fallback(self, depth: int) -> None:
        if self.pump:
            self.add(depth, "general(e)", "if W.pump is not SELF:", "    return False", "continue")
        else:
            self.add(depth, self.fallback_line)

    def accept(self, depth: int) -> None:
        """This event is written: the next one (or True)."""
        self.add(depth, "continue" if self.pump else "return True")

    def source(self) -> str:
        return "\n".join(self.lines + (["    return True"] if self.pump else [])) + "\n"


def _compile(ex: Execution, mode: str, fallback: str, pump: bool = False):
    n = len(ex.slots)
    out = _Lines(fallback, pump)
    # IterationDone is a tuple: one unpacking reads every field (engine.events._FIELDS); the
    # loop execution (its LoopRun: path, outer, spec, trip count) is one identity check
    same = _same(ex.slots)
    if mode == "steady batch":          # only the engine's own events of this run come here
        out.add(0, "try:", "    run, it, cond, cont, i, o, _, _ = e",
                "except (TypeError, ValueError):  # another kind of event")
        out.fallback(1)
        out.add(0, "if run is not RUN or it != B.next:")
        out.fallback(1)
        out.add(0, *(f"data{k}_append({'o' if is_out else 'i'}[{idx}])"
                     for k, (is_out, idx, _, _) in enumerate(ex.slots) if same[k] == k))
        return _finish(out, mode)
    out.add(0, "if type(e) is not IterationDone:")
    out.fallback(1)
    out.add(0, "run, it, cond, cont, i, o, nodes, _ = e",
            "if run is not RUN or nodes is not None" + (" or it != B.next:" if mode == "batch"
                                                        else ":"))
    out.fallback(1)
    out.add(0, *(f"v{k} = {'o' if is_out else 'i'}[{idx}]"
                 for k, (is_out, idx, _, _) in enumerate(ex.slots) if same[k] == k))
    out.add(0, *(f"v{k} = v{same[k]}" for k in range(n) if same[k] != k))   # a back edge that
    # is also a scan slice: one value. Its dtype and shape are checked until the engine says
    # that every iteration from one at or before the planned one on keeps them (steady_from).
    if n:
        out.add(0, "if PLANNED < run.steady_from:")
    for k in range(n):
        if same[k] == k:
            out.add(1, "try:                # an array or a numpy scalar (both have the bytes)",
                    f"    if v{k}.dtype is not D{k} or v{k}.shape != S{k}:")
            out.fallback(3)
            out.add(1, "except AttributeError:  # a sequence, an optional, a Python number")
            out.fallback(2)
    if mode == "batch":                 # the arrays themselves: batch.materialize joins them
        out.add(0, *(f"data{k}_append(v{k})" for k in range(n) if same[k] == k))  # shared rows
        return _finish(out, mode)
    parts = "".join(f", P{k}, v{k}.tobytes()" for k in range(n))
    out.add(0, "append_frame(join((LEAD, pack_iter(it, TRIP, "
            f"bool(cond), bool(cont)), POST{parts})), OFFS)")
    out.accept(0)
    return _code(out, mode)


def _finish(out: _Lines, mode: str):
    """The end of a batch-mode function: the flags, the next iteration, the batch's check."""
    out.add(0, "if cond is not True or cont is not True:       # the last one, a false cond",
            "    flags_append((it, (3 if cont else 1) if cond else (2 if cont else 0)))",
            "it += 1",
            "B.next = it",
            "if it >= B.check_at:",
            "    batch_check()")
    out.accept(0)
    return _code(out, mode)


def _code(out: _Lines, mode: str):
    """The function's code, its source registered with linecache (engine.codegen)."""
    what = f"trace writer, {mode} mode{', pump' if out.pump else ''}"
    return function_code(compile_source(out.source(), what)[0])
