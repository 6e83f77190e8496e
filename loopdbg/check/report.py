"""The text of a check: the outputs table, the per-loop table, the first divergence, the diagnosis.

    check: model.xml on inputs.npz, OpenVINO 2026.4.1 CPU (precision f32), rtol 1e-05, atol 1e-05

    outputs:
      name    shape      dtype    max abs   max rel   verdict
      Y       (5, 2, 16) float32  1.19e-07  2.1e-06   ok
      Ho      (2, 16)    float32  1.04e-07  8.9e-07   ok

    per iteration (each body run by OpenVINO on loopdbg's body inputs):
      loop    kind  runs  iterations  tensors  max abs   max rel   verdict
      ti      TI    1     5           2        1.34e-07  2.3e-06   ok

    verdict: loopdbg and OpenVINO agree.
"""

from __future__ import annotations

import numpy as np

from loopdbg.check.checker import CheckReport, Divergence, KIND_SHORT
from loopdbg.check.compare import errors, fmt_err, fmt_shape
from loopdbg.text import safe

SIDE_BY_SIDE = 8          # values shown around the largest error


def format_report(r: CheckReport) -> str:
    lines = [_title(r), ""]
    lines += _outputs(r)
    if r.per_iteration:
        lines += [""] + _loops(r)
    if r.divergence is not None:
        lines += [""] + divergence_lines(r.divergence)
    if r.findings:
        lines += [""] + _findings(r)
    if r.notices:
        lines += ["", "loopdbg's reports (rules of docs/semantics.md marked \"report\"):"]
        lines += [f"  {text}" + (f" [rule {rule}]" if rule is not None else "")
                  for _, text, rule in r.notices]
    if r.notes:
        lines += ["", "notes:"] + [f"  {n}" for n in r.notes]
    lines += ["", "verdict: " + verdict(r)]
    return "\n".join(map(safe, lines))      # names from the model escaped, each line one line


def verdict(r: CheckReport) -> str:
    code = r.exit_code
    if code == 0:
        scope = " (outputs and every body iteration)" if r.per_iteration else " (outputs)"
        return f"loopdbg and OpenVINO agree{scope}."
    if code == 2 and r.openvino_error is not None and r.divergence is None:
        return (f"could not compare: {r.openvino_error}; loopdbg's own run finished (its "
                f"outputs are above).")
    if code == 2:
        return "the check could not compare everything (see the notes above)."
    if r.divergence is not None:
        d = r.divergence
        if d.inner is not None and r.findings:
            return (f"divergence in {d.where}, at the output of nested loop '{d.inner}', whose "
                    f"body agrees at every iteration: the difference lies in that loop's "
                    f"bookkeeping ({_aspects(r)}).")
        return f"divergence in {d.where}: {d.what}."
    if r.openvino_error is not None:
        return "OpenVINO failed to run the model where loopdbg did not."
    if r.confirmed and r.findings:
        return (f"the outputs differ but every body iteration agrees: the difference lies in "
                f"the loop's own bookkeeping ({_aspects(r)}).")
    if r.findings:
        return (f"the outputs differ; suspected: {_aspects(r)}. Run with --per-iteration to "
                f"check the bodies.")
    if r.per_iteration:
        return "the outputs differ, outside the loops' bodies."
    return "the outputs differ; run with --per-iteration to find where."


def _aspects(r: CheckReport) -> str:
    parts = []
    for f in r.findings:
        rule = f"rule {f.rule}" if f.rule is not None else "no rule"
        text = f"{f.aspect} of '{f.path}', {rule}"
        if text not in parts:
            parts.append(text)
    return "; ".join(parts)


def _title(r: CheckReport) -> str:
    src = f"trace {r.trace}" if r.trace else r.source
    mode = ""
    if r.per_iteration:
        mode = ", per iteration" + (" (all nodes)" if r.all_nodes else "")
    return (f"check: {r.model} on {src}, OpenVINO {_short_version(r.openvino)} {r.device} "
            f"(precision {r.precision}), rtol {r.rtol:g}, atol {r.atol:g}{mode}")


def _short_version(v: str) -> str:
    return v.split("-")[0] if v else "?"


def _outputs(r: CheckReport) -> list[str]:
    if r.openvino_error is not None:
        return ["outputs: not compared: " + r.openvino_error + "."] + _own_outputs(r)
    if not r.outputs:
        return ["outputs: not compared"] + _own_outputs(r)
    rows = [(c.name, fmt_shape(c.shape), c.dtype or "-", fmt_err(c.max_abs), fmt_err(c.max_rel),
             c.verdict) for c in r.outputs]
    return ["outputs:"] + table(("name", "shape", "dtype", "max abs", "max rel", "verdict"), rows)


def _own_outputs(r: CheckReport) -> list[str]:
    """loopdbg's outputs, when there is nothing to compare them with."""
    if not r.loopdbg_outputs:
        return []
    rows = []
    for name, value in r.loopdbg_outputs.items():
        a = np.asarray(value)
        rows.append((name, fmt_shape(a.shape), str(a.dtype), _range(a)))
    return ["loopdbg's own outputs:"] + table(("name", "shape", "dtype", "range"), rows)


def _range(a: np.ndarray) -> str:
    if a.size == 0:
        return "empty"
    if a.dtype.kind not in "biuf":
        return _few(a)
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        finite = a[np.isfinite(a)]
        nan = int(np.isnan(a).sum())
        inf = int(np.isinf(a).sum())
        head = f"{_num(finite.min())} .. {_num(finite.max())}" if finite.size else "no finite"
        return f"{head} ({nan} NaN, {inf} inf)"
    return f"{_num(a.min())} .. {_num(a.max())}"


def _loops(r: CheckReport) -> list[str]:
    head = "per iteration (each body run by OpenVINO on loopdbg's body inputs):"
    if not r.loops:
        return [head, "  no body iteration ran"]
    rows = []
    for lc in r.loops.values():
        if lc.error:
            v = "not checked: " + lc.error
        elif lc.divergence is not None:
            d = lc.divergence
            v = f"diverges at iteration {d.iteration}" + (f" (outer {d.outer})" if d.outer else "")
            if lc.skipped:
                v += f", {lc.skipped} later iteration{'s' if lc.skipped != 1 else ''} not compared"
        else:
            v = "ok"
        rows.append((lc.path, KIND_SHORT.get(lc.kind, lc.kind), str(lc.executions),
                     str(lc.iterations), str(lc.tensors), fmt_err(lc.max_abs),
                     fmt_err(lc.max_rel), v))
    return [head] + table(("loop", "kind", "runs", "iterations", "tensors", "max abs", "max rel",
                           "verdict"), rows)


def divergence_lines(d: Divergence) -> list[str]:
    lines = [f"first divergence: {d.where}: {d.what}"]
    if d.error is not None:
        lines.append(f"  OpenVINO: {d.error}")
        return lines
    c = d.comparison
    if c.max_abs is not None:
        lines.append(f"  {c.why}: max abs error {fmt_err(c.max_abs)}, max rel error "
                     f"{fmt_err(c.max_rel)}")
    else:
        lines.append(f"  {c.why}")
    lines += side_by_side(d.ours, d.theirs)
    if d.others:
        more = ", ".join(d.others[:6]) + (", ..." if len(d.others) > 6 else "")
        lines.append(f"  also different in this iteration: {more}")
    return lines


def side_by_side(ours, theirs) -> list[str]:
    """The values around the largest difference: index, loopdbg, OpenVINO, |difference|."""
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape or a.size == 0:
        return [f"  loopdbg:  {a.dtype} {fmt_shape(a.shape)} {_few(a)}",
                f"  OpenVINO: {b.dtype} {fmt_shape(b.shape)} {_few(b)}"]
    fa = a.astype(np.float64) if a.dtype.kind in "biu" else a
    fb = b.astype(np.float64) if b.dtype.kind in "biu" else b
    diff, _ = errors(fa, fb)
    flat = diff.reshape(-1)
    worst = int(np.argmax(flat))
    lo = max(0, min(worst - SIDE_BY_SIDE // 2, flat.size - SIDE_BY_SIDE))
    rows = []
    for k in range(lo, min(lo + SIDE_BY_SIDE, flat.size)):
        idx = np.unravel_index(k, a.shape) if a.ndim else ()
        mark = "  <- largest" if k == worst and flat[k] > 0 else ""
        rows.append(("[" + ", ".join(map(str, idx)) + "]", _num(a.reshape(-1)[k]),
                     _num(b.reshape(-1)[k]), fmt_err(float(flat[k])) + mark))
    return table(("index", "loopdbg", "OpenVINO", "|difference|"), rows, indent=4)


def _findings(r: CheckReport) -> list[str]:
    if r.openvino_error is not None and r.divergence is None:
        head = ("OpenVINO failed where loopdbg did not" + (" and every body iteration agrees"
                                                          if r.confirmed else "")
                + "; what in the loops' bookkeeping may explain it:")
    elif r.divergence is not None and r.divergence.inner is not None:
        head = (f"the value differs at the output of nested loop '{r.divergence.inner}', whose "
                f"body agrees at every iteration: the difference lies in its bookkeeping:")
    elif r.confirmed:
        head = ("the outputs differ but every body iteration agrees: the difference lies in the "
                "loop's own bookkeeping:")
    else:
        head = "what in the loops' bookkeeping may explain it (bodies not checked):"
    return [head] + [f"  {f.line()}" for f in r.findings]


def table(header, rows, indent: int = 2) -> list[str]:
    rows = [tuple(safe(x) for x in row) for row in rows]     # widths of the text shown
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    pad = " " * indent
    out = []
    for row in (header, *rows):
        cells = [str(x).ljust(w) for x, w in zip(row, widths)]
        out.append((pad + "  ".join(cells)).rstrip())
    return out


def _num(x) -> str:
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.9g}"
    if isinstance(x, (np.bool_, bool)):
        return "true" if x else "false"
    return str(x)


def _few(a: np.ndarray) -> str:
    if a.size == 0:
        return "empty"
    flat = a.reshape(-1)[:SIDE_BY_SIDE]
    text = ", ".join(_num(x) for x in flat)
    return f"[{text}{', ...' if a.size > SIDE_BY_SIDE else ''}]"
