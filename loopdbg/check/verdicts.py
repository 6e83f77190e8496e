"""Who agrees with whom: loopdbg on both models, and each model's own runtime.

``check MODEL --against REFERENCE --runtimes`` runs, besides loopdbg on both, MODEL in its
runtime and REFERENCE in its own (OpenVINO for an IR, onnxruntime for an ONNX model), each
checked per iteration against loopdbg (``checker``). Then, per output, the four results are
compared two by two (``OutputAgreement``), and each runtime gets a ``Judgement``:

* it agrees with loopdbg on its model: nothing to say;
* it differs, while loopdbg gives the same numbers on both models and the other runtime agrees
  with loopdbg (or could not say): the runtime looks wrong, from the iteration where its check
  found the first divergence (or, when every body iteration agrees, in the loop's bookkeeping);
* it differs and the models differ in loopdbg too: nothing plain can be said of the runtime;
* its own check found one of onnxruntime's known departures from the ONNX text
  (``runtime_departures``): it looks wrong, whatever the other model does.

And when the models differ in loopdbg while each runtime agrees with loopdbg on its own model,
the conversion itself changed what the model computes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loopdbg.check.against import AgainstReport, compare_values
from loopdbg.check.checker import check
from loopdbg.check.oracle import default_runtime

MODEL, REFERENCE = "model", "reference"


@dataclass
class OutputAgreement:
    """One output (named as MODEL names it): its sources and which pairs of them agree."""

    name: str
    sources: list[str]                                    # "loopdbg on model.xml", ...
    agree: dict[tuple[int, int], bool] = field(default_factory=dict)   # by source indices

    def groups(self) -> list[list[int]]:
        """The sources in groups that agree with the first of their group."""
        out: list[list[int]] = []
        for k in range(len(self.sources)):
            for g in out:
                if self.agree.get((g[0], k)):
                    g.append(k)
                    break
            else:
                out.append([k])
        return out


@dataclass
class Judgement:
    """What the comparison says of one runtime (or, ``runtime`` None, of the conversion)."""

    runtime: str | None
    model: str
    wrong: bool
    text: str
    loop: str | None = None
    iteration: int | None = None
    outer: tuple = ()
    tensor: str | None = None


def add_runtime_checks(report: AgainstReport, model, reference, inputs, *, rtol: float,
                       atol: float, device: str = "CPU", timeout: float | None = None,
                       max_memory: int | None = None, all_nodes: bool = True) -> None:
    """Check each model against its runtime, then fill ``agreement`` and ``judgements``."""
    from loopdbg.check.against import inputs_for

    for side, m in ((MODEL, model), (REFERENCE, reference)):
        report.runtime_checks[side] = check(
            m, inputs_for(m, inputs), device=device, rtol=rtol, atol=atol, per_iteration=True,
            all_nodes=all_nodes, source=report.source, max_memory=max_memory, timeout=timeout,
            runtime=default_runtime(m.format))
    report.agreement = agreement(report)
    report.judgements = judge(report)


def _name(path: str) -> str:
    return Path(path).name or path


def agreement(r: AgainstReport) -> list[OutputAgreement]:
    ra, rb = r.runtime_checks.get(MODEL), r.runtime_checks.get(REFERENCE)
    out = []
    for name, other in r.output_pairs:
        sources = [f"loopdbg on {_name(r.model)}", f"loopdbg on {_name(r.reference)}"]
        values = [r.model_outputs.get(name), r.reference_outputs.get(name)]
        if ra is not None:
            sources.append(f"{ra.runtime} on {_name(r.model)}")
            values.append(ra.runtime_outputs.get(name))
        if rb is not None and other is not None:
            sources.append(f"{rb.runtime} on {_name(r.reference)}")
            values.append(rb.runtime_outputs.get(other))
        oa = OutputAgreement(name, sources)
        for i in range(len(values)):
            for j in range(i + 1, len(values)):
                if values[i] is not None and values[j] is not None:
                    ok = compare_values(name, values[i], values[j], r.rtol, r.atol).ok
                    oa.agree[(i, j)] = oa.agree[(j, i)] = ok
        out.append(oa)
    return out


def judge(r: AgainstReport) -> list[Judgement]:
    out = []
    ra, rb = r.runtime_checks.get(MODEL), r.runtime_checks.get(REFERENCE)
    same = r.conversion_ok
    for mine, other, path in ((ra, rb, r.model), (rb, ra, r.reference)):
        if mine is not None and mine.runtime_wrong:     # a known departure from the ONNX text
            said = "; ".join(dict.fromkeys(f.text for f in mine.findings if f.rule is None))
            out.append(Judgement(mine.runtime, path, True,
                                 f"{mine.runtime} looks wrong on {_name(path)}: it departs from "
                                 f"the ONNX text in a known way ({said}; see docs/semantics.md)."))
            continue
        if mine is None or mine.runtime_error is not None:
            continue
        if mine.outputs_agree and mine.divergence is None:
            continue
        other_ok = other is None or other.runtime_error is not None or \
            (other.outputs_agree and other.divergence is None)
        if not (same and other_ok):
            continue
        who = "loopdbg runs both models alike"
        if other is not None and other.runtime_error is None:
            who += f" and {other.runtime} agrees with it"
        d = mine.divergence
        j = Judgement(mine.runtime, path, True, "")
        if d is not None:
            j.loop, j.iteration, j.outer = d.path, d.iteration, tuple(d.outer)
            j.tensor = d.target.name if d.target is not None else None
            outer = f" (outer {', '.join(map(str, d.outer))})" if d.outer else ""
            where = f"from iteration {d.iteration} of loop '{d.path}'{outer} on, first at {d.what}"
        elif mine.confirmed:
            where = "in its outputs, though every body iteration agrees (the loop's bookkeeping)"
        else:
            where = "in its outputs"
        j.text = f"{mine.runtime} looks wrong on {_name(path)}: {who}, but {mine.runtime} " \
                 f"departs {where}."
        out.append(j)
    if not same and ra is not None and rb is not None and ra.exit_code == 0 and \
            rb.exit_code == 0:
        out.append(Judgement(None, r.model, False,
                             f"{ra.runtime} and {rb.runtime} each agree with loopdbg on their own "
                             f"model, so the conversion itself changed what the model computes."))
    return out
