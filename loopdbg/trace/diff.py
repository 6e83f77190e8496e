"""Compare two traces frame by frame and find the first place where they diverge.

Both files are walked in order, one frame at a time (memory stays flat). Loop starts (trip count,
execution condition), iterations (every tensor, then the condition), loop ends (iteration count,
why it stopped, outputs) and the model's outputs are compared; notices and the header are not
(notes say when the models or the inputs differ).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from loopdbg.text import safe
from loopdbg.trace import format as fmt
from loopdbg.trace.reader import Record, TraceReader

# Inside an iteration, report first what was fed, then what was computed from it (trace-all nodes
# are in execution order), so the first differing tensor is the nearest to the cause.
_GROUP_ORDER = (fmt.SLICED_INPUTS, fmt.BODY_INPUTS, fmt.NODES, fmt.BACK_EDGES, fmt.SCAN_SLICES, fmt.OUTPUTS)
_COMPARED = (fmt.LOOP_START, fmt.ITERATION, fmt.LOOP_FINISH, fmt.RUN_FINISH)


@dataclass
class Divergence:
    where: str                      # "loop 'x', iteration 3" or "the model outputs"
    what: str                       # one sentence: what differs
    loop: str | None = None
    outer: tuple = ()
    iteration: int | None = None
    tensor: str | None = None       # "group/name"
    max_abs: float | None = None
    max_rel: float | None = None
    others: list = field(default_factory=list)  # other tensors differing in the same frame

    def text(self) -> str:
        """The report, the names from the traces escaped (see ``loopdbg.text``)."""
        s = f"first divergence: {safe(self.where)}: {safe(self.what)}"
        if self.others:
            more = ", ".join(map(safe, self.others[:5])) + (", ..." if len(self.others) > 5 else "")
            s += f"\n  also different in this frame: {more}"
        return s


@dataclass
class DiffResult:
    divergence: Divergence | None
    notes: list[str]
    compared: int                   # frames compared

    @property
    def identical(self) -> bool:
        return self.divergence is None


def diff(a: str, b: str, rtol: float = 0.0, atol: float = 0.0) -> DiffResult:
    with TraceReader(a) as ra, TraceReader(b) as rb:
        notes = _notes(ra, rb)
        count = 0
        ia = (f for f in ra.raw() if f[1] in _COMPARED)
        ib = (f for f in rb.raw() if f[1] in _COMPARED)
        while True:
            x = next(ia, None)
            y = next(ib, None)
            if x is None and y is None:
                return DiffResult(None, notes, count)
            count += 1
            if x is not None and y is not None and x[2] == y[2]:
                continue                    # the same bytes: nothing to decode
            d = _compare(x and ra.decode(*x), y and rb.decode(*y), rtol, atol)
            if d is not None:
                return DiffResult(d, notes, count)


def _notes(ra: TraceReader, rb: TraceReader) -> list[str]:
    notes = []
    ma, mb = fmt.header_part(ra.header, "model"), fmt.header_part(rb.header, "model")
    if (ma.get("xml_sha256"), ma.get("bin_sha256")) != (mb.get("xml_sha256"), mb.get("bin_sha256")):
        notes.append("the traces were recorded from different model files")
    ha = fmt.header_part(ra.header, "inputs").get("sha256")
    hb = fmt.header_part(rb.header, "inputs").get("sha256")
    if ha != hb:
        notes.append("the traces were recorded with different inputs")
    for r, name in ((ra, "A"), (rb, "B")):
        if r.truncated:
            notes.append(f"{name} ({r.path}) is truncated")
    return notes


def _describe(r: Record | None) -> str:
    if r is None:
        return "the end of the trace"
    m = r.meta
    if r.kind == fmt.ITERATION:
        return f"iteration {m.iteration} of loop '{m.path}'{_at(m.outer)}"
    if r.kind == fmt.LOOP_START:
        return f"the start of loop '{m['path']}'{_at(tuple(m['outer']))}"
    if r.kind == fmt.LOOP_FINISH:
        return (f"the end of loop '{m['path']}'{_at(tuple(m['outer']))} after "
                f"{m['iterations']} iterations ({m['reason']})")
    return "the end of the run"


def _compare(x: Record | None, y: Record | None, rtol, atol) -> Divergence | None:
    if x is None or y is None or x.kind != y.kind or _key(x) != _key(y):
        ref = x if x is not None else y
        where = _where(ref)
        return Divergence(where, f"A has {_describe(x)}, B has {_describe(y)}",
                          *_loc(ref))
    if x.kind == fmt.LOOP_START:
        for k, label in (("trip_count", "trip count"), ("execution_condition",
                                                        "execution condition")):
            if x.meta.get(k) != y.meta.get(k):
                return Divergence(_where(x), f"the {label} is {x.meta.get(k)} in A, "
                                  f"{y.meta.get(k)} in B", *_loc(x))
        return None
    d = _compare_arrays(x, y, rtol, atol)
    if d is not None:
        return d
    if x.kind == fmt.ITERATION:
        fa, fb = x.meta, y.meta
        for k in ("cond", "continues", "trip_count"):
            if getattr(fa, k) != getattr(fb, k):
                return Divergence(_where(x), f"{'the body condition' if k == 'cond' else k} is "
                                  f"{getattr(fa, k)} in A, {getattr(fb, k)} in B", *_loc(x))
    elif x.kind == fmt.LOOP_FINISH:
        if (x.meta["iterations"], x.meta["reason"]) != (y.meta["iterations"], y.meta["reason"]):
            return Divergence(_where(x), f"A stopped after {x.meta['iterations']} iterations "
                              f"({x.meta['reason']}), B after {y.meta['iterations']} "
                              f"({y.meta['reason']})", *_loc(x))
    return None


def _compare_arrays(x: Record, y: Record, rtol, atol) -> Divergence | None:
    ta = {(g, n): a for g, n, a in x.arrays}
    tb = {(g, n): a for g, n, a in y.arrays}
    keys = sorted(set(ta) | set(tb), key=lambda k: (_GROUP_ORDER.index(k[0])
                                                     if k[0] in _GROUP_ORDER else 99))
    keys = [k for k in keys if k[0] != fmt.BODY_INPUTS or (k in ta and k in tb)]
    first = None
    others = []
    for key in keys:
        label = f"{fmt.GROUP_NAMES[key[0]]}/{key[1]}"
        a, b = ta.get(key), tb.get(key)
        if a is None or b is None:
            why = f"tensor {label} is only in {'B' if a is None else 'A'}"
            err = (None, None)
        else:
            why, err = compare_arrays(a, b, rtol, atol)
            if why is None:
                continue
            why = f"tensor {label}: {why}"
        if first is None:
            first = Divergence(_where(x), why, *_loc(x), tensor=label, max_abs=err[0],
                               max_rel=err[1])
        else:
            others.append(label)
    if first is not None:
        first.others = others
    return first


def compare_arrays(a: np.ndarray, b: np.ndarray, rtol: float = 0.0, atol: float = 0.0):
    """(None, (0, 0)) when equal within rtol/atol (NaN equals NaN); else (why, (max abs, max rel))."""
    if a.shape != b.shape:
        return f"shape {a.shape} in A, {b.shape} in B", (None, None)
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} in A, {b.dtype} in B", (None, None)
    if a.size == 0:
        return None, (0.0, 0.0)
    if a.dtype.kind not in "biufc":
        return (None, (0.0, 0.0)) if np.array_equal(a, b) else ("the values differ", (None, None))
    fa = a.astype(np.float64) if a.dtype.kind in "biu" else a
    fb = b.astype(np.float64) if b.dtype.kind in "biu" else b
    if rtol == 0 and atol == 0:
        same = np.array_equal(fa, fb, equal_nan=True)
    else:
        same = bool(np.isclose(fa, fb, rtol=rtol, atol=atol, equal_nan=True).all())
    if same:
        return None, (0.0, 0.0)
    with np.errstate(all="ignore"):
        diff = np.abs(fa.astype(np.complex128 if a.dtype.kind == "c" else np.float64) - fb)
        both_nan = np.isnan(fa) & np.isnan(fb)
        diff = np.where(both_nan, 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        ref = np.abs(fb)
        rel = np.where(diff == 0, 0.0, np.where(ref > 0, diff / ref, np.inf))
    max_abs, max_rel = float(diff.max()), float(rel.max())
    at = np.unravel_index(int(np.argmax(diff)), diff.shape)
    where = f" at index {list(map(int, at))}" if a.ndim else ""
    return (f"max abs error {max_abs:.6g}, max rel error {max_rel:.6g} "
            f"(largest{where}: A {_num(fa[at])}, B {_num(fb[at])})"), (max_abs, max_rel)


def _num(x) -> str:
    return f"{x:.9g}" if isinstance(x, (float, np.floating)) else str(x)


def _key(r: Record):
    m = r.meta
    if r.kind == fmt.ITERATION:
        return (m.path, m.outer, m.iteration)
    if r.kind in (fmt.LOOP_START, fmt.LOOP_FINISH):
        return (m["path"], tuple(m["outer"]))
    return ()


def _loc(r: Record) -> tuple:
    m = r.meta
    if r.kind == fmt.ITERATION:
        return (m.path, m.outer, m.iteration)
    if r.kind in (fmt.LOOP_START, fmt.LOOP_FINISH):
        return (m["path"], tuple(m["outer"]), None)
    return (None, (), None)


def _where(r: Record) -> str:
    m = r.meta
    if r.kind == fmt.ITERATION:
        return f"loop '{m.path}'{_at(m.outer)}, iteration {m.iteration}"
    if r.kind == fmt.LOOP_START:
        return f"loop '{m['path']}'{_at(tuple(m['outer']))}, at its start"
    if r.kind == fmt.LOOP_FINISH:
        return f"loop '{m['path']}'{_at(tuple(m['outer']))}, at its end"
    return "the model outputs"


def _at(outer: tuple) -> str:
    return f" (outer iterations {', '.join(map(str, outer))})" if outer else ""


__all__ = ["diff", "DiffResult", "Divergence", "compare_arrays"]
