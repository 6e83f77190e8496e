"""When the bodies agree but the outputs do not: which part of a loop's bookkeeping differs.

A Loop/TensorIterator is a body plus bookkeeping: how its inputs are sliced, how its outputs are
concatenated, what a loop that never ran gives, how many iterations it runs. ``loopdbg check
--per-iteration`` runs every body iteration in OpenVINO on loopdbg's own inputs; when all of them
agree and an output still differs, the difference must lie in that bookkeeping. This module names
the part, with the rule of docs/semantics.md where loopdbg and OpenVINO's
CPU plugin are known to part ways:

* rule 10 (rule 8 for a Loop): a sliced input whose ``start``/``end`` are not the two canonical
  forms; loopdbg slices as the specification says, OpenVINO starts at an end of the axis;
* rule 6: a loop that ran zero iterations (an empty concatenation, a last-value output the
  specification leaves undefined);
* rules 7 and 11: a concatenated output with a negative stride (reversed order);
* rule 12: a TensorIterator without a sliced input (iteration count from a concatenated output);
* rules 1, 3, 10, 12: a concatenated output whose length along its axis differs: the two ran a
  different number of iterations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from loopdbg.check.compare import Comparison
from loopdbg.engine.loopspec import LoopSpec, OutputForm
from loopdbg.ir import model as irm
from loopdbg.ir.model import Graph

SLICING = "slicing"
CONCATENATION = "concatenation"
ZERO_ITERATIONS = "zero-iteration outputs"
ITERATION_COUNT = "iteration count"
UNEXPLAINED = "bookkeeping"


@dataclass(frozen=True)
class Finding:
    """One part of a loop's bookkeeping that explains (or may explain) a difference."""

    path: str                   # the loop
    aspect: str                 # SLICING, CONCATENATION, ZERO_ITERATIONS, ITERATION_COUNT ...
    rule: int | None            # the docs/semantics.md rule, None when no rule explains it
    text: str
    outputs: tuple[str, ...] = field(default=(), compare=False)   # the outputs it affects

    def line(self) -> str:
        rule = (f"rule {self.rule} of docs/semantics.md" if self.rule is not None
                else "docs/semantics.md, ONNX" if self.aspect.startswith("a departure of")
                else "no rule of docs/semantics.md")
        affects = ""
        if self.outputs:
            affects = (f" [output{'s' if len(self.outputs) > 1 else ''} "
                       f"{', '.join(self.outputs)}]")
        return f"loop '{self.path}': {self.aspect} ({rule}): {self.text}{affects}"


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (loop, aspect, rule, text), with the outputs of all its copies."""
    merged: dict[Finding, Finding] = {}
    for f in findings:
        if f in merged:
            outs = merged[f].outputs + tuple(o for o in f.outputs if o not in merged[f].outputs)
            merged[f] = replace(merged[f], outputs=outs)
        else:
            merged[f] = f
    return list(merged.values())


@dataclass(frozen=True)
class LoopRun:
    """What one execution of a loop did, as loopdbg ran it (from the events or a trace)."""

    path: str
    iterations: int | None
    reason: str | None


def upstream_loops(graph: Graph, result_id: int, paths_by_layer: Mapping[int, str]
                   ) -> list[tuple[str, int | None]]:
    """The loops whose outputs reach top-level Result ``result_id``: (path, output index) pairs.

    The loop feeding the Result directly comes first (with the output index it feeds from); the
    others follow, nearest first, with ``None``.
    """
    found: list[tuple[str, int | None]] = []
    seen: set[int] = set()
    frontier = [(result_id, True)]
    while frontier:
        nxt = []
        for lid, direct in frontier:
            for k in range(max(graph.n_inputs(lid), len(graph.layers[lid].inputs))):
                src = graph.producer(lid, k)
                if src is None or src[0] in seen:
                    continue
                seen.add(src[0])
                producer = graph.layers.get(src[0])
                if producer is None:
                    continue
                if id(producer) in paths_by_layer:
                    found.append((paths_by_layer[id(producer)], src[1] if direct else None))
                nxt.append((src[0], False))
        frontier = nxt
    return found


def loop_findings(spec: LoopSpec, runs: Iterable[LoopRun], notices: Iterable[tuple],
                  output_index: int | None = None, comparison: Comparison | None = None,
                  output_name: str | None = None) -> list[Finding]:
    """What in ``spec``'s bookkeeping can differ from OpenVINO's CPU plugin, most telling first.

    ``notices`` are (path, message, rule) triples from the run; ``output_index`` and
    ``comparison`` narrow the findings to one output of the loop when it is known.
    """
    path = spec.path
    is_ti = spec.kind == "TensorIterator"
    form: OutputForm | None = None
    if output_index is not None and 0 <= output_index < len(spec.outputs):
        form = spec.outputs[output_index]
    out = (output_name,) if output_name else ()
    found: list[Finding] = []
    runs = [r for r in runs if r.path == path]
    mine = [(m, rule) for p, m, rule in notices if p == path]

    # Zero iterations (rule 6).
    if any(r.iterations == 0 for r in runs):
        if form is None or form.kind == irm.CONCAT:
            text = ("it ran zero iterations; loopdbg gives an empty concatenation (other dims "
                    "from the body Result's declared shape), OpenVINO's CPU plugin sizes it from "
                    "its static output shape or returns stale data")
        elif spec.merged_source(form.result_pos) is not None:
            text = ("it ran zero iterations; the output is the merged input's initial value in "
                    "loopdbg, as in OpenVINO's CPU plugin")
        else:
            text = ("it ran zero iterations; the specification leaves a last-value output not "
                    "fed by a back edge undefined: loopdbg gives zeros, OpenVINO whatever its "
                    "buffer held")
        found.append(Finding(path, ZERO_ITERATIONS, 6, text, out))

    # Slicing (rule 10; a Loop's sliced inputs follow the same rule, rule 8).
    for f in spec.sliced:
        if any(rule == 10 and f"'{f.name}'" in m for m, rule in mine):
            if is_ti:
                text = (f"sliced input '{f.name}' has start={f.start} end={f.end} "
                        f"stride={f.stride}; loopdbg slices as the specification says (from "
                        f"index {f.start} along axis {f.axis}), OpenVINO's CPU plugin does not "
                        f"honour start and slices from the "
                        f"{'first' if f.stride > 0 else 'last'} element of the axis")
                found.append(Finding(path, SLICING, 10, text, out))
            else:
                text = (f"sliced input '{f.name}' has start={f.start} end={f.end} "
                        f"stride={f.stride}; loopdbg slices as the TensorIterator rule (rule 10) "
                        f"says, "
                        f"OpenVINO ignores start and end on a Loop and feeds the whole axis, "
                        f"one element after the other")
                found.append(Finding(path, SLICING, 8, text, out))

    # Iteration count: a concatenation of another length along its axis.
    if form is not None and form.kind == irm.CONCAT and comparison is not None and \
            _differs_on_axis_only(comparison, form.axis):
        ours, theirs = comparison.shape, comparison.other_shape
        axis = form.axis + len(ours) if form.axis < 0 else form.axis
        if is_ti:
            rule = 10 if spec.sliced else 12
            why = ("the number of whole chunks of its sliced inputs" if spec.sliced else
                   "its first concatenated output's start/end")
        else:
            reasons = {r.reason for r in runs}
            rule = 3 if "condition" in reasons else 1
            why = {3: "the iteration whose body condition is false still counts",
                   1: "the trip count bounds it, a negative one means no limit"}[rule]
        text = (f"output '{form.name}' has {ours[axis]} along axis {axis} in loopdbg, "
                f"{theirs[axis]} in OpenVINO: they ran a different number of iterations "
                f"(loopdbg: {why})")
        found.append(Finding(path, ITERATION_COUNT, rule, text, out))
    elif is_ti and not spec.sliced:
        found.append(Finding(path, ITERATION_COUNT, 12,
                             "it has no sliced input, so its iteration count comes from its first "
                             "concatenated output (or is 1); OpenVINO's CPU plugin counts "
                             "differently for anything but start=0 end=-1", out))

    # Concatenation order (rules 7 and 11).
    concats = [form] if form is not None and form.kind == irm.CONCAT else (
        list(spec.concats) if form is None else [])
    for o in concats:
        if o.stride < 0:
            if is_ti:
                text = (f"concatenated output '{o.name}' has stride {o.stride}: iteration k goes "
                        f"to position N-1-k in loopdbg, as in OpenVINO")
                found.append(Finding(path, CONCATENATION, 11, text, out))
            else:
                text = (f"concatenated output '{o.name}' has stride {o.stride}; loopdbg reverses "
                        f"it as OpenVINO's CPU plugin does (its reference implementation and the "
                        f"Loop-5 text do not)")
                found.append(Finding(path, CONCATENATION, 7, text, out))
    return found


def unexplained(path: str, output: str | None, comparison: Comparison | None) -> Finding:
    what = f"output '{output}' differs ({comparison.verdict})" if comparison is not None and \
        output else "its outputs differ"
    return Finding(path, UNEXPLAINED, None,
                   f"{what} although every body iteration agrees, and no rule of docs/semantics.md "
                   f"explains it (last values, concatenation or iteration count)",
                   (output,) if output else ())


def _differs_on_axis_only(c: Comparison, axis: int | None) -> bool:
    a, b = c.shape, c.other_shape
    if a is None or b is None or axis is None or len(a) != len(b) or a == b or not a:
        return False
    ax = axis + len(a) if axis < 0 else axis
    return all(x == y for k, (x, y) in enumerate(zip(a, b)) if k != ax)

