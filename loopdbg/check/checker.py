"""Run a model in OpenVINO and in loopdbg and compare: outputs, then every body iteration.

    from loopdbg.check import check
    report = check(model, inputs, per_iteration=True, all_nodes=True)
    report.exit_code            # 0: agrees, 1: a divergence, 2: the check could not run
    print(format_report(report))

1. The whole model runs in loopdbg (a live run, or the outputs a trace recorded) and in OpenVINO
   (the model file itself, precision hint f32, in the child process of ``loopdbg.oracle``); every
   output is compared (docs/semantics.md rule 14). When OpenVINO fails — an error, a crash of its
   plugin, a hang past the time limit, memory past ``max_memory`` — the report says so in one
   sentence and keeps loopdbg's own outputs (exit status 2: could not compare). When loopdbg's run
   stops at ``max_iterations``, its outputs are not the model's and are not compared.
2. With ``per_iteration``, every Loop/TensorIterator body (nested ones too) is extracted as a
   standalone model through loopdbg's IR writer (``extract``), compiled once per loop, and run
   in OpenVINO on the exact body inputs loopdbg computed, iteration by iteration; every body
   Result is compared, and with ``all_nodes`` every node too. The first divergence is kept per
   loop; the report's first divergence is the one that happened first in the run.
3. When the outputs differ and every body iteration agrees, ``bookkeeping`` names the part of the
   loop (slicing, concatenation, zero-iteration outputs, iteration count) and its rule in
   docs/semantics.md. The same goes for an outer body whose divergence is the output of a nested loop whose
   own body agrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

from loopdbg.check import bookkeeping as bk
from loopdbg.check.compare import Comparison, compare
from loopdbg.check.extract import NODE, RESULT, Target, signature, standalone_body
from loopdbg.check.oracle import CheckUnavailable, Oracle, OracleFailure
from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.inputs import match_inputs
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.plan import drain
from loopdbg.ir.model import Model

KIND_SHORT = {"Loop": "Loop", "TensorIterator": "TI"}


@dataclass
class Divergence:
    """The first body iteration of a loop where OpenVINO and loopdbg disagree."""

    path: str
    kind: str
    outer: tuple
    iteration: int
    target: Target | None = None          # what differs (None: OpenVINO failed to run it)
    comparison: Comparison | None = None
    ours: np.ndarray | None = None
    theirs: np.ndarray | None = None
    others: list[str] = field(default_factory=list)   # other tensors differing in that iteration
    error: str | None = None              # OpenVINO could not run the iteration
    inner: str | None = None              # the nested loop that computes the differing value

    @property
    def where(self) -> str:
        at = (f" (outer iteration{'s' if len(self.outer) > 1 else ''} "
              f"{', '.join(map(str, self.outer))})") if self.outer else ""
        return f"loop '{self.path}'{at}, iteration {self.iteration}"

    @property
    def what(self) -> str:
        t = self.target
        if t is None:
            return "OpenVINO could not run the body"
        if t.kind == NODE:
            return f"node '{t.name}'" + (f" ({t.layer.type})" if t.layer is not None else "")
        src = f" (computed by '{t.layer.name}', {t.layer.type})" if t.layer is not None else ""
        return f"body Result '{t.name}'{src}"

    def order_key(self, depth: int) -> tuple:
        """When it happened in the run: inner iterations come before the outer one holding them."""
        key = tuple(self.outer) + (self.iteration,)
        return key + (math.inf,) * (depth - len(key))


@dataclass
class LoopCheck:
    """Per loop (by path): what was checked, the largest errors, the first divergence."""

    path: str
    kind: str
    layer_name: str
    executions: int = 0
    iterations: int = 0               # iterations compared
    tensors: int = 0                  # tensors compared per iteration
    max_abs: float = 0.0
    max_rel: float = 0.0
    divergence: Divergence | None = None
    skipped: int = 0                  # iterations after the first divergence (not compared)
    error: str | None = None          # the body could not be compiled or run: why
    failure: str | None = None        # OpenVINO's failure kind then (loopdbg.oracle's kinds)
    compiled: int = 0                 # standalone models compiled (one per rank signature)
    _outers: set = field(default_factory=set, repr=False)

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.error is None


@dataclass
class CheckReport:
    model: str
    source: str
    device: str
    openvino: str
    precision: str
    rtol: float
    atol: float
    per_iteration: bool
    all_nodes: bool
    outputs: list[Comparison] = field(default_factory=list)
    openvino_error: str | None = None     # OpenVINO failed to run the whole model: why
    openvino_failure: str | None = None   # its kind: error, crash, hang, memory (loopdbg.oracle)
    loops: dict[str, LoopCheck] = field(default_factory=dict)
    divergence: Divergence | None = None
    findings: list[bk.Finding] = field(default_factory=list)
    confirmed: bool = False               # the findings follow from bodies that all agree
    notices: list[tuple] = field(default_factory=list)    # loopdbg's reports: (path, text, rule)
    notes: list[str] = field(default_factory=list)
    capped: bool = False                  # loopdbg stopped a loop at max_iterations
    trace: str | None = None
    loopdbg_outputs: dict = field(default_factory=dict, repr=False)   # by output name
    openvino_outputs: dict = field(default_factory=dict, repr=False)  # by loopdbg's output name

    @property
    def outputs_agree(self) -> bool:
        return self.openvino_error is None and all(c.ok for c in self.outputs)

    @property
    def bodies_agree(self) -> bool:
        return all(lc.ok for lc in self.loops.values())

    @property
    def incomplete(self) -> bool:
        """Something could not be compared (a body that did not compile, missing outputs)."""
        return (any(lc.error for lc in self.loops.values()) or self.capped
                or (self.openvino_error is None and not self.outputs and self.trace is not None))

    @property
    def exit_code(self) -> int:
        if self.divergence is not None:
            return 1
        if self.openvino_error is not None:
            return 2                      # nothing to compare the outputs with
        if not self.outputs_agree:
            return 1
        return 2 if self.incomplete else 0


# ----------------------------------------------------------------------------------------------


def check(model: Model, inputs: Mapping[str, np.ndarray] | None = None, *, device: str = "CPU",
          rtol: float = 1e-5, atol: float = 1e-5, per_iteration: bool = False,
          all_nodes: bool = False, trace: str | Path | None = None, source: str = "inputs",
          max_memory: int | None = None, max_iterations: int | None = None,
          timeout: float | None = None, oracle: Oracle | None = None) -> CheckReport:
    """Compare ``model`` run by loopdbg with OpenVINO (see the module docstring).

    ``inputs`` may be left out with ``trace``: the trace's recorded inputs are used.
    ``max_iterations`` caps every loop of loopdbg's run (OpenVINO's whole-model run is then
    skipped: its loops have no cap); ``max_memory`` bounds loopdbg's concatenations and
    OpenVINO's process; ``timeout`` bounds each OpenVINO compile or run, in seconds. Raises
    CheckUnavailable (exit code 2) when OpenVINO is missing, and loopdbg's own errors when
    loopdbg cannot run the model; OpenVINO's failures are in the report.
    """
    own = oracle is None
    oracle = oracle or Oracle(device, timeout=timeout, max_memory=max_memory)
    try:
        return _Check(model, oracle, rtol, atol, per_iteration, all_nodes).run(
            inputs, trace=trace, source=source, max_memory=max_memory,
            max_iterations=max_iterations)
    finally:
        if own:
            oracle.close()


class _Check:
    def __init__(self, model: Model, oracle: Oracle, rtol: float, atol: float,
                 per_iteration: bool, all_nodes: bool):
        from loopdbg.engine import Engine

        self.model = model
        self.oracle = oracle
        self.rtol, self.atol = rtol, atol
        self.per_iteration = per_iteration
        self.all_nodes = all_nodes and per_iteration
        self.engine = Engine(model)
        self.paths_by_layer = {id(s.layer): p for p, s in self.engine.loops.items()}
        self.loops: dict[str, LoopCheck] = {}
        self._bodies: dict[tuple, tuple | None] = {}

    # -- the whole run ------------------------------------------------------------------------
    def run(self, inputs, *, trace, source, max_memory, max_iterations=None) -> CheckReport:
        name = self.model.path or self.model.graph.name or "model"
        report = CheckReport(str(name), source, self.oracle.device, str(self.oracle.version),
                             self.oracle.precision, self.rtol, self.atol, self.per_iteration,
                             self.all_nodes, trace=str(trace) if trace is not None else None)
        reader = None
        if trace is not None:
            from loopdbg.trace import TraceError, TraceReader
            try:
                reader = TraceReader(trace)
            except TraceError as exc:
                raise CheckUnavailable(str(exc)) from None
        try:
            if reader is not None:
                inputs = self._trace_inputs(reader, inputs, report)
            if inputs is None:
                raise CheckUnavailable("no inputs: give an INPUTS file (or a trace that holds "
                                       "them).")
            values = match_inputs(self.model, inputs, source)
            if reader is not None:
                ours, runs, notices = self._from_trace(reader, report)
            else:
                ours, runs, notices = self._live(inputs, source, max_memory, max_iterations)
        finally:
            if reader is not None:
                reader.close()
        capped = [r for r in runs if r.reason == ev.STOP_CAP]
        theirs = None
        if capped:
            report.capped = True
            report.notes.append(
                f"loopdbg stopped loop '{capped[0].path}' at the iteration cap "
                f"(--max-iterations {max_iterations}), so its outputs are not the model's; "
                f"they were not compared with OpenVINO, whose loops have no cap")
        else:
            theirs = self._openvino_outputs(values, report)
            report.precision = self.oracle.precision
        report.notices = notices
        report.loops = self.loops
        report.loopdbg_outputs = dict(ours or {})
        if theirs is not None:
            report.openvino_outputs = {n: v for n, v in zip(self.engine.output_names, theirs)
                                       if v is not None}
        if ours is not None and theirs is not None:
            report.outputs = self._compare_outputs(ours, theirs)
        elif ours is None and not capped:
            report.notes.append("the trace holds no model outputs (the run it recorded did not "
                                "finish); only the body iterations were compared")
        if self.per_iteration:
            firsts = [lc.divergence for lc in self.loops.values() if lc.divergence is not None]
            if firsts:
                depth = max(len(d.outer) + 1 for d in firsts)
                report.divergence = min(firsts, key=lambda d: d.order_key(depth))
            for lc in self.loops.values():
                if lc.error:
                    report.notes.append(f"loop '{lc.path}' was not checked per iteration: "
                                        f"{lc.error}")
            if not self.loops and self.engine.loops:
                report.notes.append("no loop body ran, so there was no iteration to compare")
        self._diagnose(report, runs, notices)
        return report

    def _openvino_outputs(self, values, report: CheckReport):
        path = self.model.path
        try:
            if path and Path(path).exists():
                compiled = self.oracle.compile_file(path, "the model")
            else:
                compiled = self.oracle.compile_ir(self.model, "the model")
            outs = self.oracle.infer(compiled, values, "the model")
        except OracleFailure as exc:
            report.openvino_error = str(exc)
            report.openvino_failure = exc.kind
            return None
        names = self.oracle.output_names(compiled)
        return _align(self.engine.output_names, names, outs)

    def _compare_outputs(self, ours: Mapping, theirs: list) -> list[Comparison]:
        out = []
        for k, name in enumerate(self.engine.output_names):
            value = ours.get(name)
            other = theirs[k] if k < len(theirs) else None
            if value is None:
                out.append(Comparison(name, None, None, ok=False, why="loopdbg gave no value"))
                continue
            out.append(compare(name, value, other, self.rtol, self.atol))
        return out

    # -- loopdbg's side: live -------------------------------------------------------------------
    def _live(self, inputs, source, max_memory, max_iterations):
        events = self.engine.run(inputs, record_nodes=self.all_nodes, max_memory=max_memory,
                                 max_iterations=max_iterations, source=source)
        runs: list[bk.LoopRun] = []
        final = None
        check_it = self.per_iteration
        for e in events:
            t = type(e)
            if t is ev.IterationDone:
                if check_it:
                    self.check_iteration(e.spec, e.outer, e.iteration, e.body_in, e.body_out,
                                         e.nodes)
            elif t is ev.LoopFinished:
                runs.append(bk.LoopRun(e.path, e.iterations, e.reason))
            elif t is ev.RunFinished:
                final = e
        notices = [(n.path, n.message, n.rule) for n in final.notices]
        return dict(final.outputs), runs, notices

    # -- loopdbg's side: a trace ------------------------------------------------------------------
    def _trace_inputs(self, reader, inputs, report):
        from loopdbg.trace.record import file_sha256, inputs_sha256

        header = reader.header
        recorded = header.get("model", {}).get("xml_sha256")
        if self.model.path and recorded and Path(self.model.path).suffix.lower() == ".xml":
            if file_sha256(self.model.path) != recorded:
                raise CheckUnavailable(f"{reader.path} was recorded from another model than "
                                       f"{self.model.path} (their sha256 differ).")
        saved = reader.model_inputs()
        if inputs is None:
            if saved is None:
                raise CheckUnavailable(f"{reader.path} holds no model inputs; give the INPUTS "
                                       f"file it was recorded with.")
            return saved
        want = header.get("inputs", {}).get("sha256")
        if want and inputs_sha256({k: np.asarray(v) for k, v in inputs.items()}) != want:
            raise CheckUnavailable(f"{reader.path} was recorded with other inputs than the ones "
                                   f"given.")
        return inputs

    def _from_trace(self, reader, report: CheckReport):
        from loopdbg.trace import TraceError

        if reader.truncated:
            report.notes.append(f"the trace is truncated; only the iterations it holds were "
                                f"compared")
        if (reader.header.get("options") or {}).get("max_iterations"):
            report.notes.append("the trace was recorded with --max-iterations, so its loops may "
                                "have stopped early where OpenVINO's did not")
        records = reader.loops()
        runs = [bk.LoopRun(r.path, r.iterations, r.reason) for r in records]
        notices = [(n.get("path", ""), n.get("message", ""), n.get("rule"))
                   for n in reader.notices()]
        if self.per_iteration:
            try:
                for rec in records:
                    spec = self.engine.loops.get(rec.path)
                    if spec is None:
                        raise CheckUnavailable(f"{reader.path} has a loop '{rec.path}' that the "
                                               f"model does not have.")
                    for k in range(rec.recorded):
                        body_in = self._trace_body_inputs(reader, spec, k, rec.outer)
                        body_out, nodes = _recompute(spec, body_in, self.all_nodes)
                        self.check_iteration(spec, rec.outer, k, body_in, body_out, nodes)
            except TraceError as exc:
                raise CheckUnavailable(str(exc)) from None
        return reader.outputs(), runs, notices

    @staticmethod
    def _trace_body_inputs(reader, spec: LoopSpec, k: int, outer: tuple) -> tuple:
        values = reader.body_inputs(spec.path, k, outer)
        missing = [n for n in spec.param_names if n not in values]
        if missing:
            raise CheckUnavailable(f"{reader.path} does not hold the input(s) "
                                   f"{', '.join(missing)} of loop '{spec.path}' at iteration {k}.")
        return tuple(values[n] for n in spec.param_names)

    # -- one body iteration -------------------------------------------------------------------
    def check_iteration(self, spec: LoopSpec, outer: tuple, iteration: int, body_in: tuple,
                        body_out: tuple, nodes: Mapping | None) -> None:
        """Run one iteration of ``spec``'s body in OpenVINO on ``body_in``; compare."""
        path = spec.path
        lc = self.loops.get(path)
        if lc is None:
            lc = self.loops[path] = LoopCheck(path, spec.kind, spec.layer.name)
        if outer not in lc._outers:
            lc._outers.add(outer)
            lc.executions += 1
        if lc.divergence is not None or lc.error is not None:
            lc.skipped += 1
            return
        body = self._body(spec, body_in, lc)
        if body is None:
            lc.skipped += 1
            return
        compiled, targets, ordered = body
        try:
            theirs = self.oracle.infer(compiled, body_in, f"the body of loop '{path}'")
        except OracleFailure as exc:
            if exc.kind == "error":     # OpenVINO refused what loopdbg ran: a divergence
                lc.divergence = Divergence(path, spec.kind, tuple(outer), iteration,
                                           error=str(exc))
            else:                       # it crashed, hung or outgrew its budget: not compared
                lc.error, lc.failure = f"at iteration {iteration}: {exc}", exc.kind
                lc.skipped += 1
            return
        lc.iterations += 1
        lc.tensors = len(targets)
        first: Divergence | None = None
        for k in ordered:
            t = targets[k]
            ours = body_out[t.index] if t.kind == RESULT else _node(nodes, t)
            c = compare(t.name, ours, theirs[k], self.rtol, self.atol)
            if c.max_abs is not None and math.isfinite(c.max_abs):
                lc.max_abs = max(lc.max_abs, c.max_abs)
            if c.max_rel is not None and math.isfinite(c.max_rel):
                lc.max_rel = max(lc.max_rel, c.max_rel)
            if c.ok:
                continue
            if first is None:
                inner = self.paths_by_layer.get(id(t.layer)) if t.layer is not None else None
                first = Divergence(path, spec.kind, tuple(outer), iteration, t, c,
                                   np.asarray(ours), theirs[k], inner=inner)
            else:
                first.others.append(t.name)
        if first is not None:
            lc.divergence = first

    def _body(self, spec: LoopSpec, body_in: tuple, lc: LoopCheck):
        key = (spec.path, signature(body_in))
        if key in self._bodies:
            return self._bodies[key]
        model, targets = standalone_body(spec.body, body_in, all_nodes=self.all_nodes,
                                         name=f"{spec.path} body")
        try:
            compiled = self.oracle.compile_ir(model, f"the body of loop '{spec.path}'")
        except OracleFailure as exc:
            lc.error, lc.failure = str(exc), exc.kind
            self._bodies[key] = None
            return None
        lc.compiled += 1
        # Compare in execution order (nodes before the Results they feed): the first value that
        # differs is the nearest to the cause.
        ordered = sorted(range(len(targets)),
                         key=lambda k: (targets[k].order, targets[k].kind == RESULT, k))
        entry = (compiled, targets, ordered)
        self._bodies[key] = entry
        return entry

    # -- diagnosis ----------------------------------------------------------------------------
    def _diagnose(self, report: CheckReport, runs, notices) -> None:
        findings: list[bk.Finding] = []
        d = report.divergence
        if d is not None and d.inner is not None and d.target is not None:
            inner = self.loops.get(d.inner)
            if inner is not None and inner.ok:
                spec = self.engine.loops[d.inner]
                found = bk.loop_findings(spec, runs, notices, d.target.port, d.comparison)
                findings += found or [bk.unexplained(d.inner, None, d.comparison)]
        failing = [(k, c) for k, c in enumerate(report.outputs) if not c.ok]
        if failing and report.divergence is None:
            graph = self.model.graph
            for k, c in failing:
                ups = bk.upstream_loops(graph, graph.results[k], self.paths_by_layer)
                here: list[bk.Finding] = []
                for path, port in ups:
                    spec = self.engine.loops[path]
                    here += bk.loop_findings(spec, runs, notices, port, c, c.name if port is not
                                             None else None)
                    for other, inner in self.engine.loops.items():
                        if other.startswith(path + "/"):
                            here += bk.loop_findings(inner, runs, notices)
                if ups and not here:
                    here.append(bk.unexplained(ups[0][0], c.name, c))
                findings += here
        if report.openvino_error is not None and report.divergence is None:
            for spec in self.engine.loops.values():
                findings += bk.loop_findings(spec, runs, notices)
        report.findings = bk.merge(findings)
        report.confirmed = self.per_iteration and report.bodies_agree and \
            report.divergence is None


# ----------------------------------------------------------------------------------------------


def _align(names: list[str], ov_names: list[set], values: list) -> list:
    """OpenVINO's outputs in loopdbg's output order: by tensor name, else by position."""
    taken: dict[int, int] = {}
    for k, name in enumerate(names):
        hits = [j for j, s in enumerate(ov_names) if name in s]
        if len(hits) == 1 and hits[0] not in taken.values():
            taken[k] = hits[0]
    out = []
    used = set(taken.values())
    for k in range(len(names)):
        if k in taken:
            out.append(values[taken[k]])
        elif k < len(values) and k not in used:
            out.append(values[k])
        else:
            out.append(None)
    return out


def _node(nodes: Mapping | None, t: Target):
    if nodes is None or t.name not in nodes:
        raise CheckUnavailable(f"loopdbg did not record node '{t.name}'.")
    return nodes[t.name]


def _recompute(spec: LoopSpec, body_in: tuple, all_nodes: bool):
    """loopdbg's body outputs (and every node) for recorded inputs; nested events are dropped."""
    body = spec.body
    ctx = RunContext()
    result = drain(body.run_all(ctx, *body_in) if all_nodes else body.run(ctx, *body_in))
    if all_nodes:
        outs, every = result
        return outs, body.result_values(every)
    return result, None
