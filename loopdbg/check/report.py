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

An ONNX model compared with onnxruntime reads the same, with onnxruntime's name and version and
no precision. Every line goes through ``text.lines``: names from files come out escaped.
"""

from __future__ import annotations

import numpy as np

from loopdbg.check.compare import fmt_err, fmt_shape
from loopdbg.check.results import KIND_SHORT, CheckReport, Divergence
from loopdbg.check.text import difference_lines, lines, short_version, table, value_range


def format_report(r: CheckReport) -> str:
    return lines(report_lines(r))


def report_lines(r: CheckReport) -> list[str]:
    out = [_title(r), ""]
    out += _outputs(r)
    if r.per_iteration:
        out += [""] + _loops(r)
    if r.divergence is not None:
        out += [""] + divergence_lines(r.divergence)
    if r.findings:
        out += [""] + _findings(r)
    if r.notices:
        out += ["", "loopdbg's reports (rules of docs/semantics.md marked \"report\"):"]
        out += [f"  {text}" + (f" [rule {rule}]" if rule is not None else "")
                for _, text, rule in r.notices]
    if r.notes:
        out += ["", "notes:"] + [f"  {n}" for n in r.notes]
    out += ["", "verdict: " + verdict(r)]
    return out


def verdict(r: CheckReport) -> str:
    code = r.exit_code
    if code == 0:
        scope = " (outputs and every body iteration)" if r.per_iteration else " (outputs)"
        return f"loopdbg and {r.runtime} agree{scope}."
    if code == 2 and r.runtime_error is not None and r.divergence is None:
        if r.runtime_wrong:
            said = "; ".join(dict.fromkeys(f.text for f in r.findings if f.rule is None))
            return (f"{r.runtime} looks wrong: {r.runtime_error}, where it is known to fail "
                    f"({said}; see docs/semantics.md); loopdbg's own run finished (its outputs "
                    f"are above).")
        return (f"could not compare: {r.runtime_error}; loopdbg's own run finished (its "
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
    if r.runtime_error is not None:
        return f"{r.runtime} failed to run the model where loopdbg did not."
    if r.runtime_wrong:
        said = "; ".join(dict.fromkeys(f.text for f in r.findings))
        return (f"{r.runtime} looks wrong: it departs from the ONNX text in a known way "
                f"({said}; see docs/semantics.md), and loopdbg follows the text.")
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
    precision = f" (precision {r.precision})" if r.runtime == "OpenVINO" else ""
    return (f"check: {r.model} on {src}, {r.runtime} {short_version(r.version)} {r.device}"
            f"{precision}, rtol {r.rtol:g}, atol {r.atol:g}{mode}")


def _outputs(r: CheckReport) -> list[str]:
    if r.runtime_error is not None:
        return ["outputs: not compared: " + r.runtime_error + "."] + _own_outputs(r)
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
        rows.append((name, fmt_shape(a.shape), str(a.dtype), value_range(a)))
    return ["loopdbg's own outputs:"] + table(("name", "shape", "dtype", "range"), rows)


def _loops(r: CheckReport) -> list[str]:
    head = f"per iteration (each body run by {r.runtime} on loopdbg's body inputs):"
    if not r.loops:
        return [head, "  no body iteration ran"]
    rows = []
    for lc in r.loops.values():
        if lc.error:
            v = "not checked: " + lc.error
        elif lc.note:
            v = "not checked: " + lc.note
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
    out = [f"first divergence: {d.where}: {d.what}"]
    if d.error is not None:
        out.append(f"  {d.runtime}: {d.error}")
        return out
    return out + difference_lines(d.comparison, d.ours, d.theirs, "loopdbg", d.runtime,
                                  d.others)


def _findings(r: CheckReport) -> list[str]:
    if r.runtime_error is not None and r.divergence is None and r.runtime_wrong:
        head = f"{r.runtime} failed where loopdbg did not, as it is known to:"
    elif r.runtime_error is not None and r.divergence is None:
        head = (f"{r.runtime} failed where loopdbg did not" + (" and every body iteration agrees"
                                                          if r.confirmed else "")
                + "; what in the loops' bookkeeping may explain it:")
    elif r.divergence is not None and r.divergence.inner is not None:
        head = (f"the value differs at the output of nested loop '{r.divergence.inner}', whose "
                f"body agrees at every iteration: the difference lies in its bookkeeping:")
    elif r.runtime_wrong:
        head = f"the outputs differ where {r.runtime} departs from the ONNX text:"
    elif r.confirmed:
        head = ("the outputs differ but every body iteration agrees: the difference lies in the "
                "loop's own bookkeeping:")
    else:
        head = "what in the loops' bookkeeping may explain it (bodies not checked):"
    return [head] + [f"  {f.line()}" for f in r.findings]
