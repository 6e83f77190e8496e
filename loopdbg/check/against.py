"""``loopdbg check MODEL --against REFERENCE``: where a converted model departs from its source.

    from loopdbg.check.against import check_against
    report = check_against(read_model("model.xml"), read_model("model.onnx"), inputs)
    report.exit_code        # 0: the same numbers, 1: MODEL departs, 2: nothing could be compared

Both models run in loopdbg, each with its own format's semantics (ONNX's for the .onnx, Loop-5's
for the IR), with every body node recorded. Their loops and tensors are paired (``pairing``) and
compared iteration by iteration, in the order MODEL runs, as the iterations come: the
reference's run is read just far enough ahead to give the matching iteration, so a long run is
never held in memory. Each loop pair keeps its first departure; the report's is the first in the
run. A loop that runs more or fewer iterations than its partner departs at the first iteration
one of them lacks. The outputs are compared at the end. With ``runtimes``, each model is also
checked against its own runtime (``checker``, per iteration), and ``agreement`` says who agrees
with whom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from loopdbg.check.compare import Comparison, compare, keep_largest
from loopdbg.check.pairing import LoopPair, pair_loops, pair_outputs
from loopdbg.check.results import where
from loopdbg.engine import events as ev
from loopdbg.engine.inputs import input_specs
from loopdbg.ir.model import Model

VALUE, COUNT = "value", "iteration count"


@dataclass
class Departure:
    """The first iteration of a loop pair where MODEL's value differs from REFERENCE's."""

    path: str                       # the model's loop
    reference: str                  # the reference's loop
    outer: tuple
    iteration: int
    kind: str = VALUE               # VALUE, or COUNT: one of them has no such iteration
    tensor: str | None = None       # the tensor name both sides carry
    value: str | None = None        # the model's value name (layer[:port]) and layer type
    layer_type: str | None = None
    reference_value: str | None = None
    comparison: Comparison | None = None
    ours: np.ndarray | None = None
    theirs: np.ndarray | None = None
    others: list[str] = field(default_factory=list)
    text: str = ""                  # for COUNT: which side ran how many

    @property
    def where(self) -> str:
        return where(self.path, self.outer, self.iteration)


@dataclass
class PairCheck:
    """One loop pair: what was compared, the largest errors, the first departure."""

    pair: LoopPair
    executions: int = 0
    iterations: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    departure: Departure | None = None
    skipped: int = 0
    outers_seen: set = field(default_factory=set, repr=False)


@dataclass
class AgainstReport:
    model: str
    reference: str
    source: str
    rtol: float
    atol: float
    loops: list[PairCheck] = field(default_factory=list)
    lone_model: list[str] = field(default_factory=list)       # loops without a partner
    lone_reference: list[str] = field(default_factory=list)
    outputs: list[Comparison] = field(default_factory=list)   # named as the model's
    output_pairs: list[tuple[str, str | None]] = field(default_factory=list)
    departure: Departure | None = None
    notes: list[str] = field(default_factory=list)
    capped: bool = False                                      # a loop stopped at the cap
    runtime_checks: dict = field(default_factory=dict)        # "model"/"reference" -> CheckReport
    agreement: list = field(default_factory=list)             # verdicts.OutputAgreement
    judgements: list = field(default_factory=list)            # verdicts.Judgement
    model_outputs: dict = field(default_factory=dict, repr=False)
    reference_outputs: dict = field(default_factory=dict, repr=False)   # by the model's names

    @property
    def conversion_ok(self) -> bool:
        return self.departure is None and all(c.ok for c in self.outputs)

    @property
    def exit_code(self) -> int:
        if not self.conversion_ok or any(j.wrong for j in self.judgements):
            return 1
        if self.capped or (not self.outputs and not any(p.iterations for p in self.loops)):
            return 2
        if any(r.exit_code == 2 for r in self.runtime_checks.values()):
            return 2
        return 0


def inputs_for(model: Model, given: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The given inputs this model takes (a converter may drop an input its model never reads)."""
    wanted = set()
    for spec in input_specs(model):
        wanted.add(spec.name)
        wanted.update(spec.names)
    return {k: v for k, v in given.items() if k in wanted}


def check_against(model: Model, reference: Model, inputs: Mapping[str, np.ndarray], *,
                  rtol: float = 1e-5, atol: float = 1e-5, source: str = "inputs",
                  max_memory: int | None = None, max_iterations: int | None = None
                  ) -> AgainstReport:
    """Run both models in loopdbg and compare them (see the module docstring)."""
    from loopdbg.engine import Engine

    ea, eb = Engine(model), Engine(reference)
    pairs, lone_a, lone_b = pair_loops(ea, eb)
    report = AgainstReport(str(model.path or model.graph.name), str(reference.path or
                           reference.graph.name), source, rtol, atol, lone_model=lone_a,
                           lone_reference=lone_b)
    report.loops = [PairCheck(p) for p in pairs]
    opts = dict(record_nodes=True, max_memory=max_memory, max_iterations=max_iterations)
    run_a = ea.run(inputs_for(model, inputs), source=source, **opts)
    run_b = eb.run(inputs_for(reference, inputs), source=source, **opts)
    _Lockstep(report, run_b, rtol, atol).follow(run_a)
    return report


class _Lockstep:
    """Reads the reference's events as far as the model's iterations need them."""

    def __init__(self, report: AgainstReport, run_b, rtol: float, atol: float):
        self.report = report
        self.run_b = run_b
        self.rtol, self.atol = rtol, atol
        self.by_model = {pc.pair.path: pc for pc in report.loops}
        self.by_reference = {pc.pair.reference: pc for pc in report.loops}
        self.pending: dict[tuple, dict] = {}         # the reference's iterations, not yet used
        self.counts_b: dict[tuple, int] = {}         # (reference path, outer) -> iterations
        self.final_b = None
        self.capped = False

    def follow(self, run_a) -> None:
        final_a = None
        counts_a: dict[tuple, int] = {}
        for e in run_a:
            t = type(e)
            if t is ev.IterationDone:
                pc = self.by_model.get(e.path)
                if pc is not None:
                    self._iteration(pc, e)
            elif t is ev.LoopFinished:
                counts_a[(e.path, e.outer)] = e.iterations
                self.capped |= e.reason == ev.STOP_CAP
            elif t is ev.RunFinished:
                final_a = e
        while self._advance():
            pass
        self._counts(counts_a)
        self._finish(final_a)

    # -- the reference's side -------------------------------------------------------------------
    def _advance(self) -> bool:
        """Read the reference's next event; False at its end."""
        if self.final_b is not None:
            return False
        e = next(self.run_b, None)
        if e is None:
            return False
        t = type(e)
        if t is ev.IterationDone:
            pc = self.by_reference.get(e.path)
            if pc is not None:
                wanted = {b for _, b, _ in pc.pair.values}
                nodes = e.nodes or {}
                values = {n: nodes[n] for n in wanted if n in nodes}
                self.pending[(e.path, e.outer, e.iteration)] = values
        elif t is ev.LoopFinished:
            self.counts_b[(e.path, e.outer)] = e.iterations
            self.capped |= e.reason == ev.STOP_CAP
        elif t is ev.RunFinished:
            self.final_b = e
        return True

    def _reference(self, key: tuple) -> dict | None:
        while key not in self.pending:
            if (key[0], key[1]) in self.counts_b or not self._advance():
                return None           # that execution of the loop ended before this iteration
        return self.pending.pop(key)

    # -- one iteration --------------------------------------------------------------------------
    def _iteration(self, pc: PairCheck, e) -> None:
        if e.outer not in pc.outers_seen:
            pc.outers_seen.add(e.outer)
            pc.executions += 1
        theirs = self._reference((pc.pair.reference, e.outer, e.iteration))
        if pc.departure is not None:
            pc.skipped += 1
            return
        if theirs is None:
            pc.departure = Departure(pc.pair.path, pc.pair.reference, e.outer, e.iteration, COUNT,
                                     text=f"the reference's loop '{pc.pair.reference}' has no "
                                          f"iteration {e.iteration}")
            self._first(pc.departure)
            return
        pc.iterations += 1
        nodes = e.nodes or {}
        first: Departure | None = None
        for a, b, tensor in pc.pair.values:
            if a not in nodes or b not in theirs:
                continue
            c = compare_values(tensor, nodes[a], theirs[b], self.rtol, self.atol)
            keep_largest(pc, c)
            if c.ok:
                continue
            if first is None:
                layer = _layer_type(e.spec, a)
                ours = np.asarray(nodes[a])
                first = Departure(pc.pair.path, pc.pair.reference, e.outer, e.iteration, VALUE,
                                  tensor, a, layer, b, c, ours,
                                  aligned(ours, np.asarray(theirs[b])))
            else:
                first.others.append(tensor)
        if first is not None:
            pc.departure = first
            self._first(first)

    def _first(self, d: Departure) -> None:
        if self.report.departure is None:
            self.report.departure = d

    def _counts(self, counts_a: dict) -> None:
        """A loop whose partner ran more iterations departs at the first one it lacks."""
        for (path, outer), n in counts_a.items():
            pc = self.by_model.get(path)
            if pc is None or pc.departure is not None:
                continue
            m = self.counts_b.get((pc.pair.reference, outer))
            if m is not None and m > n:
                pc.departure = Departure(path, pc.pair.reference, outer, n, COUNT,
                                         text=f"the model's loop ran {n} iteration"
                                              f"{'' if n == 1 else 's'}, the reference's {m}")
                self._first(pc.departure)

    def _finish(self, final_a) -> None:
        r = self.report
        if self.capped:
            r.capped = True
            r.notes.append("a loop stopped at the iteration cap (--max-iterations), so the "
                           "outputs were not compared")
            return
        if final_a is None or self.final_b is None:
            return
        names_a, names_b = list(final_a.outputs), list(self.final_b.outputs)
        r.model_outputs = dict(final_a.outputs)
        for k, j in pair_outputs(names_a, names_b):
            name = names_a[k]
            other = names_b[j] if j is not None else None
            r.output_pairs.append((name, other))
            theirs = self.final_b.outputs[other] if other is not None else None
            if theirs is not None:
                r.reference_outputs[name] = theirs
            r.outputs.append(compare_values(name, final_a.outputs[name], theirs, self.rtol,
                                            self.atol, "the reference"))


def compare_values(name: str, ours, theirs, rtol: float, atol: float,
                   other: str = "the reference") -> Comparison:
    """``compare``, except that shapes holding the same elements in other dims (``(1, 4)`` and
    ``(4,)``: a converter's added or dropped unit axis) are compared element by element."""
    if theirs is not None:
        a, b = np.asarray(ours), np.asarray(theirs)
        if a.shape != b.shape and aligned(a, b).shape == a.shape:
            c = compare(name, a, aligned(a, b), rtol, atol, other)
            c.other_shape = b.shape
            c.note = (c.note + "; " if c.note else "") + f"{other}'s shape is {b.shape}"
            return c
    return compare(name, ours, theirs, rtol, atol, other)


def aligned(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b`` in ``a``'s shape when the two differ only by unit axes, else ``b`` as it is."""
    if a.shape != b.shape and a.size == b.size and \
            tuple(d for d in a.shape if d != 1) == tuple(d for d in b.shape if d != 1):
        return b.reshape(a.shape)
    return b


def _layer_type(spec, value: str) -> str | None:
    for step in spec.body.steps:
        if value == step.layer.name or value.startswith(step.layer.name + ":"):
            return step.layer.type
    return None
