"""The text of ``check MODEL --against REFERENCE``: outputs, loop pairs, the first departure, and
with ``--runtimes`` who agrees with whom.

    check: model.xml against model.onnx (each run by loopdbg with its own format's semantics) ...

    outputs (model.xml vs model.onnx):
      name     shape   dtype    max abs  max rel  verdict
      v_final  (2,)    float32  16       0.5      values differ

    loops (paired tensors compared at every iteration):
      loop   reference  paired by     tensors  runs  iterations  max abs  verdict
      v_all  doubling   output names  5        1     5           1        departs at iteration 4

    first departure: loop 'v_all', iteration 4 (reference loop 'doubling'): tensor 'keep_going'
    ...
    verdict: model.xml departs from model.onnx in loop 'v_all', iteration 4: tensor 'keep_going'.
"""

from __future__ import annotations

from pathlib import Path

from loopdbg.check.against import COUNT, AgainstReport, Departure
from loopdbg.check.compare import fmt_err, fmt_shape
from loopdbg.check.report import divergence_lines
from loopdbg.check.text import difference_lines, lines, plural, table


def _short(path: str) -> str:
    return Path(path).name or path


def format_against(r: AgainstReport) -> str:
    a, b = _short(r.model), _short(r.reference)
    out = [f"check: {r.model} against {r.reference} (each run by loopdbg with its own format's "
           f"semantics) on {r.source}, rtol {r.rtol:g}, atol {r.atol:g}", ""]
    if r.outputs:
        rows = [(c.name, fmt_shape(c.shape), c.dtype or "-", fmt_err(c.max_abs),
                 fmt_err(c.max_rel), c.verdict) for c in r.outputs]
        out += [f"outputs ({a} vs {b}):"]
        out += table(("name", "shape", "dtype", "max abs", "max rel", "verdict"), rows)
    else:
        out += ["outputs: not compared"]
    out += [""] + _loops(r)
    if r.lone_model or r.lone_reference:
        out += ["", "loops without a partner:"]
        out += [f"  in {a}: '{p}'" for p in r.lone_model]
        out += [f"  in {b}: '{p}'" for p in r.lone_reference]
    if r.departure is not None:
        out += [""] + departure_lines(r.departure, a, b)
    if r.runtime_checks:
        out += [""] + _runtimes(r)
    if r.notes:
        out += ["", "notes:"] + [f"  {n}" for n in r.notes]
    out += ["", "verdict: " + verdict(r)]
    return lines(out)


def _loops(r: AgainstReport) -> list[str]:
    head = "loops (paired tensors compared at every iteration):"
    if not r.loops:
        return [head, "  no loop of the model has a partner in the reference"]
    rows = []
    for pc in r.loops:
        d = pc.departure
        if d is None:
            v = "ok" if pc.iterations else "no iteration ran"
        else:
            v = f"departs at iteration {d.iteration}" + (f" (outer {d.outer})" if d.outer else "")
            if pc.skipped:
                v += f", {plural(pc.skipped, 'later iteration')} not compared"
        rows.append((pc.pair.path, pc.pair.reference, pc.pair.how, str(len(pc.pair.values)),
                     str(pc.executions), str(pc.iterations), fmt_err(pc.max_abs),
                     fmt_err(pc.max_rel), v))
    return [head] + table(("loop", "reference", "paired by", "tensors", "runs", "iterations",
                           "max abs", "max rel", "verdict"), rows)


def departure_lines(d: Departure, a: str, b: str) -> list[str]:
    head = f"first departure: {d.where} (reference loop '{d.reference}'): "
    if d.kind == COUNT:
        return [head + d.text]
    layer = f", {d.layer_type}" if d.layer_type else ""
    out = [head + f"tensor '{d.tensor}' (the model's '{d.value}'{layer}; the reference's "
                  f"'{d.reference_value}')"]
    return out + difference_lines(d.comparison, d.ours, d.theirs, a,
                                  b if b != a else "the reference", d.others)


def _runtimes(r: AgainstReport) -> list[str]:
    out = ["runtimes (each model in its own, checked per iteration against loopdbg):"]
    for side, rep in r.runtime_checks.items():
        name = _short(r.model if side == "model" else r.reference)
        if rep.runtime_error is not None:
            state = f"could not run: {rep.runtime_error}"
        elif rep.exit_code == 0:
            state = "agrees with loopdbg (outputs and every body iteration)"
        elif rep.divergence is not None:
            state = f"diverges from loopdbg in {rep.divergence.where}: {rep.divergence.what}"
        elif not rep.outputs_agree:
            state = "its outputs differ from loopdbg's"
        else:
            state = "could not compare everything"
        out.append(f"  {rep.runtime} on {name}: {state}")
        if rep.divergence is not None:
            out += ["    " + x for x in divergence_lines(rep.divergence)]
    if r.agreement:
        out += ["", "who agrees with whom, per output:"]
        for oa in r.agreement:
            groups = [" = ".join(oa.sources[k] for k in g) for g in oa.groups()]
            out.append(f"  {oa.name}: " + "; ".join(groups))
    if r.judgements:
        out += [""] + [j.text for j in r.judgements]
    return out


def verdict(r: AgainstReport) -> str:
    a, b = _short(r.model), _short(r.reference)
    wrong = [j for j in r.judgements if j.wrong]
    if wrong:
        return wrong[0].text
    d = r.departure
    if d is not None:
        what = d.text if d.kind == COUNT else f"tensor '{d.tensor}'"
        return f"{a} departs from {b} in {d.where}: {what}."
    if not r.conversion_ok:
        return (f"the outputs of {a} and {b} differ, though every paired tensor of every "
                f"iteration agrees: the difference lies outside the paired loops' bodies.")
    code = r.exit_code
    if code == 2:
        if r.capped:
            return (f"{a} agrees with {b} as far as both ran, but a loop stopped at the "
                    f"iteration cap, so the outputs were not compared.")
        if r.runtime_checks and (r.outputs or any(p.iterations for p in r.loops)):
            return (f"{a} agrees with {b} in loopdbg, but a runtime could not be compared "
                    f"(see above).")
        return f"nothing could be compared: no output and no loop of {a} has a partner in {b}."
    tensors = sum(len(p.pair.values) for p in r.loops)
    also = ", and each runtime agrees with loopdbg" if r.runtime_checks else ""
    return (f"{a} agrees with {b} (outputs, and {plural(tensors, 'paired tensor')} at every "
            f"iteration){also}.")
