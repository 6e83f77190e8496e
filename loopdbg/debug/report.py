"""The stop report: everything a person wants to see where a session stopped, as plain text.

    stopped: breakpoint 1 (i == 3) in loop loop at iteration 3
      loop:          loop (Loop, trip count 5)
      condition:     true -> iteration 4 runs next
      back edges:    acc <- acc_out   float32 (2, 3) min 0.1 max 4.2
      ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopdbg.debug.stop import END, ERROR, START, Stop
from loopdbg.engine.events import STOP_TEXT
from loopdbg.engine.trip import trip_text  # noqa: F401 - the faces say a trip count with it
from loopdbg.ir.elements import dtype_name, is_ml_dtype
from loopdbg.text import safe


def fmt_value(value: Any, *, width: int = 60) -> str:
    """A tensor in one line: dtype, shape, and the values when few, else min/max (+NaN/Inf counts)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return repr(value)
    if isinstance(value, tuple):
        return repr(value)
    if isinstance(value, list):                   # an ONNX sequence
        shown = ", ".join(f"[{k}] {fmt_value(v, width=width)}" for k, v in enumerate(value[:3]))
        more = f", ... and {len(value) - 3} more" if len(value) > 3 else ""
        return f"sequence of {len(value)} tensors" + (f": {shown}{more}" if value else "")
    a = np.asarray(value)
    shape = "(" + ", ".join(map(str, a.shape)) + ("," if a.ndim == 1 else "") + ")"
    head = f"{dtype_name(a.dtype)} {shape}"
    if a.size == 0:
        return f"{head} empty"
    if is_ml_dtype(a.dtype):                      # bfloat16, float8, int4 ...: their values
        a = a.astype(np.int64 if "int" in a.dtype.name else np.float32)
    if a.dtype.kind == "U":
        text = np.array2string(a.reshape(-1), separator=", ", max_line_width=10**6)
        return f"{head} {text}" if a.size <= 8 and len(text) <= width else head
    if a.dtype.kind not in "biufc":
        return head
    if a.size <= 8:
        text = np.array2string(a.reshape(-1) if a.ndim > 1 else a, precision=5, separator=", ",
                               max_line_width=10**6)
        if len(text) <= width:
            return f"{head} {text}"
    if a.dtype.kind == "b":
        return f"{head} {int(a.sum())} true"
    stats = []
    if a.dtype.kind in "fc":
        nans, infs = int(np.isnan(a).sum()), int(np.isinf(a).sum())
        finite = a[np.isfinite(a)]
        if nans:
            stats.append(f"{nans} NaN")
        if infs:
            stats.append(f"{infs} Inf")
    else:
        finite = a
    if finite.size:
        stats.insert(0, f"min {float(finite.min()):.5g} max {float(finite.max()):.5g} "
                        f"mean {float(finite.mean()):.5g}")
    return f"{head} " + ", ".join(stats)


def ends_because(event) -> str:
    """Why the loop ends after ``event`` (its last iteration), in words."""
    return STOP_TEXT.get(event.stop_reason or "", "it is done")


def headline(stop: Stop) -> str:
    """The first line of a stop report (names from the model escaped: see ``loopdbg.text``)."""
    return safe(_headline(stop))


def _headline(stop: Stop) -> str:
    e = stop.event
    if stop.kind == START:
        return f"ready: {stop.reason}"
    if stop.kind == END:
        return "finished: the run finished" + (f" (last iteration: loop {e.path}, iteration "
                                               f"{e.iteration})" if e is not None else "")
    if stop.kind == ERROR:
        return f"error: {stop.reason}"
    where = f" in loop {e.path} at iteration {e.iteration}" if e is not None else ""
    if stop.node is not None:
        n = stop.node
        return (f"stopped: {stop.reason} in loop {n.event.path}, iteration {n.event.iteration}")
    return f"stopped: {stop.reason}{where}"


def format_stop(stop: Stop, session=None) -> str:
    """The whole report (headline first)."""
    lines = [headline(stop)]
    e = stop.event
    if stop.node is not None:
        n = stop.node
        lines.append(f"  node:          {safe(n.layer.describe())}")
        for j in range(len(n.layer.outputs) or 1):
            key = n.layer.name if j == 0 else f"{n.layer.name}:{j}"
            if key in n.values:
                lines.append(f"  value:         {fmt_value(n.values[key])}")
        return "\n".join(map(safe, lines))
    if e is not None:
        spec = e.spec
        trip = trip_text(e.trip_count)
        kind = spec.kind
        outer = f", outer iterations {list(e.outer)}" if e.outer else ""
        lines.append(f"  loop:          {safe(e.path)} ({kind}, trip count {trip}{outer})")
        if kind == "Loop":
            nxt = (f"iteration {e.iteration + 1} runs next" if e.continues
                   else "the loop ends")
            lines.append(f"  condition:     {'true' if e.cond else 'false'} -> {nxt}")
        elif not e.continues:
            lines.append("  next:          the loop ends (every slice used)")
        if stop.loop_end is not None:
            lines.append(f"  loop ended:    {stop.loop_end.iterations} iterations; "
                         f"{safe(stop.loop_end.reason_text)}")
        _section(lines, "back edges", [(f"{p} <- {spec.result_names[r]}", e.body_out[r])
                                       for p, r in spec.back_edge_view])
        parts = []
        for name, _ in spec.concat_view:
            so_far = e.partial(name)
            parts.append((f"{name} so far", so_far))
            parts.append((f"{name} last slice", e.scan_slices[name]))
        _section(lines, "stacked (ONNX scan outputs)" if spec.onnx else "concatenated", parts)
        _section(lines, "sliced inputs", list(e.sliced_inputs.items()))
    if stop.watches:
        rows = []
        for w, value, err in stop.watches:
            rows.append((f"{w.number}: {w.text}", err if err else value))
        _section(lines, "watches", rows, raw_errors=True)
    if stop.kind == END and stop.finished is not None:
        _section(lines, "outputs", list(stop.finished.outputs.items()))
    if session is not None and session.notices:
        lines.append("  notices:")
        lines.extend(f"    {safe(n.message)}" for n in session.notices)
    return "\n".join(map(safe, lines))      # each line one line, whatever a name holds


def _section(lines: list[str], title: str, rows, raw_errors: bool = False) -> None:
    if not rows:
        return
    lines.append(f"  {title}:")
    rows = [(safe(k), v) for k, v in rows]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        text = safe(value) if (raw_errors and isinstance(value, str)) else fmt_value(value)
        lines.append(f"    {key:<{width}}  {text}")


def format_watches(stop: Stop) -> str:
    """The watches of a stop alone (for a run that ends without stopping on the way)."""
    lines: list[str] = []
    _section(lines, "watches (at the last iteration)",
             [(f"{w.number}: {w.text}", err if err else value) for w, value, err in stop.watches],
             raw_errors=True)
    return "\n".join(safe(line[2:]) for line in lines)


RANDOM_SOURCE = "random inputs"     # Session.source when loopdbg made the inputs up


def random_inputs_note(inputs, model_path: str = "MODEL") -> str:
    """Said when loopdbg made the inputs up: which, and how to give real ones."""
    shapes = ", ".join(f"{safe(name)} {tuple(np.shape(v))}" for name, v in list(inputs.items())[:4])
    more = ", ..." if len(inputs) > 4 else ""
    return (f"no inputs given and no inputs.npz beside the model: loopdbg made up random ones "
            f"({shapes}{more}); `loopdbg inputs {safe(model_path)} -o inputs.npz` writes them to "
            f"edit")


def random_failure_hint(inputs, model_path: str = "MODEL") -> str:
    """Said when a run on made-up inputs failed: random shapes are often what a kernel refuses."""
    name, value = next(iter(inputs.items()), ("NAME", np.zeros(2)))
    dims = ",".join(str(d) for d in np.shape(value)) or "D1,D2"
    return (f"the inputs are random data, and a kernel may fail on shapes the model does not "
            f"expect: give real inputs, or inputs of the right shapes with `loopdbg inputs "
            f"{safe(model_path)} --shape {safe(name)}={dims} -o inputs.npz` (edit the sizes)")


def if_lines(engine) -> list[str]:
    """Each If of the model with what the runs so far chose (the debugger's words for a model
    whose control flow is If only)."""
    out = []
    for spec in engine.ifs.values():
        text = spec.runs_text()
        text = f"condition {text[2:]}" if text.startswith("= ") else text
        where = f" in loop {safe(spec.parent)}" if spec.parent else ""
        out.append(f"If {safe(spec.layer.name)}{where}: {text}")
    return out


def no_loop_text(engine) -> str:
    """What the debugger says of a model without loops."""
    n = len(engine.ifs)
    ifs = f"; its control flow is {n} If node{'s' if n != 1 else ''}" if n else \
        ", nor any If: no control flow"
    return (f"this model has no loop (Loop, Scan or TensorIterator){ifs}. It runs once, from its "
            f"inputs to its outputs: see the Outputs tab.")
