"""Run a model in a runtime and in loopdbg and compare: outputs, then every body iteration.

    from loopdbg.check import check
    report = check(model, inputs, per_iteration=True, all_nodes=True)
    report.exit_code            # 0: agrees, 1: a divergence, 2: the check could not run
    print(format_report(report))

The runtime is OpenVINO for an IR, onnxruntime for an ONNX model (or OpenVINO, which reads
.onnx files too, with ``runtime="openvino"``); it runs in a child process of ``loopdbg.oracle``.

1. The whole model runs in loopdbg (a live run, or the outputs a trace recorded) and in the
   runtime (the model file itself; OpenVINO with precision hint f32); every output is compared
   (docs/semantics.md rule 14). When the runtime fails — an error, a crash of its plugin, a hang
   past the time limit, memory past ``max_memory`` — the report says so in one sentence and
   keeps loopdbg's own outputs (exit status 2: could not compare). When loopdbg's run stops at
   ``max_iterations``, its outputs are not the model's and are not compared.
2. With ``per_iteration``, every Loop/TensorIterator/Scan body (nested ones too; an If inside a
   body runs as part of it) is extracted as a standalone model in the model's own format
   (``extract``, ``extract_onnx``), compiled once per loop, and run in the runtime on the exact
   body inputs loopdbg computed, iteration by iteration; every body output is compared, and with
   ``all_nodes`` every node too. The first divergence is kept per loop; the report's first
   divergence is the one that happened first in the run.
3. When the outputs differ and every body iteration agrees, ``bookkeeping`` names the part of the
   loop (slicing, concatenation, zero-iteration outputs, iteration count) and its rule in
   docs/semantics.md (rules about OpenVINO: for onnxruntime only the iteration count and an
   unexplained difference are said). The same goes for an outer body whose divergence is the
   output of a nested loop whose own body agrees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from loopdbg.check import bookkeeping as bk
from loopdbg.check import from_trace
from loopdbg.check.compare import Comparison, compare, keep_largest
from loopdbg.check.extract import RESULT, Target, signature
from loopdbg.check.extract_onnx import is_batch_loop
from loopdbg.check.oracle import (CheckUnavailable, Oracle, OracleFailure, default_runtime,
                                  require_runtime)
from loopdbg.check.results import CheckReport, Divergence, LoopCheck
from loopdbg.check.runtime_departures import DEPARTS, onnxruntime_death, onnxruntime_departure
from loopdbg.engine import events as ev
from loopdbg.engine.inputs import match_inputs
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.ir.model import Model

def check(model: Model, inputs: Mapping[str, np.ndarray] | None = None, *, device: str = "CPU",
          rtol: float = 1e-5, atol: float = 1e-5, per_iteration: bool = False,
          all_nodes: bool = False, trace: str | Path | None = None, source: str = "inputs",
          max_memory: int | None = None, max_iterations: int | None = None,
          timeout: float | None = None, oracle: Oracle | None = None,
          runtime: str | None = None) -> CheckReport:
    """Compare ``model`` run by loopdbg with a runtime (see the module docstring).

    ``runtime`` is ``"openvino"`` or ``"onnxruntime"`` (default: the model format's own).
    ``inputs`` may be left out with ``trace``: the trace's recorded inputs are used.
    ``max_iterations`` caps every loop of loopdbg's run (the runtime's whole-model run is then
    skipped: its loops have no cap); ``max_memory`` bounds loopdbg's concatenations and the
    runtime's process; ``timeout`` bounds each compile or run, in seconds. Raises
    CheckUnavailable (exit code 2) when the runtime is missing or cannot read the model's format,
    and loopdbg's own errors when loopdbg cannot run the model; the runtime's failures are in the
    report.
    """
    own = oracle is None
    if oracle is None:
        runtime = runtime or default_runtime(model.format)
        require_runtime(runtime, model.format)
        oracle = Oracle(device, runtime=runtime, timeout=timeout, max_memory=max_memory)
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
        owners = {id(s.body.graph): s for s in self.engine.loops.values()}
        self.parents = {p: owners.get(id(getattr(s, "parent_graph", None)))
                        for p, s in self.engine.loops.items()}
        self.label = oracle.label
        self.loops: dict[str, LoopCheck] = {}
        self._bodies: dict[tuple, tuple | None] = {}

    # -- the whole run ------------------------------------------------------------------------
    def run(self, inputs, *, trace, source, max_memory, max_iterations=None) -> CheckReport:
        name = self.model.path or self.model.graph.name or "model"
        report = CheckReport(str(name), source, self.oracle.device, self.label,
                             str(self.oracle.version), self.oracle.precision, self.rtol,
                             self.atol, self.per_iteration, self.all_nodes,
                             trace=str(trace) if trace is not None else None)
        reader = None
        if trace is not None:
            from loopdbg.trace import TraceError, TraceReader
            try:
                reader = TraceReader(trace)
            except TraceError as exc:
                raise CheckUnavailable(str(exc)) from None
        try:
            if reader is not None:
                inputs = from_trace.trace_inputs(self.model, reader, inputs)
            if inputs is None:
                raise CheckUnavailable("no inputs: give an INPUTS file (or a trace that holds "
                                       "them).")
            values = match_inputs(self.model, inputs, source)
            if reader is not None:
                ours, runs, notices = from_trace.from_trace(self, reader, report)
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
                f"they were not compared with {self.label}, whose loops have no cap")
        else:
            theirs = self._runtime_outputs(values, report)
            report.precision = self.oracle.precision
        report.notices = notices
        report.loops = self.loops
        report.loopdbg_outputs = dict(ours or {})
        if theirs is not None:
            report.runtime_outputs = {n: v for n, v in zip(self.engine.output_names, theirs)
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

    def _runtime_outputs(self, values, report: CheckReport):
        try:
            compiled = self.oracle.compile_whole(self.model, "the model")
            outs = self.oracle.infer(compiled, self.oracle.feed(self.model, values), "the model")
        except OracleFailure as exc:
            report.runtime_error = str(exc)
            report.runtime_failure = exc.kind
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
            out.append(compare(name, value, other, self.rtol, self.atol, self.label))
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

    # -- one body iteration -------------------------------------------------------------------
    def check_iteration(self, spec: LoopSpec, outer: tuple, iteration: int, body_in: tuple,
                        body_out: tuple, nodes: Mapping | None) -> None:
        """Run one iteration of ``spec``'s body in the runtime on ``body_in``; compare."""
        path = spec.path
        lc = self.loops.get(path)
        if lc is None:
            lc = self.loops[path] = LoopCheck(path, spec.source_kind, spec.layer.name)
            if self.model.format == "onnx" and is_batch_loop(spec):
                lc.note = ("loopdbg's batch loop around a Scan-8, with no ONNX body of its own "
                           "(the Scan inside it is checked)")
        if outer not in lc.outers_seen:
            lc.outers_seen.add(outer)
            lc.executions += 1
        if lc.divergence is not None or lc.error is not None or lc.note is not None:
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
            if exc.kind == "error":     # the runtime refused what loopdbg ran: a divergence
                lc.divergence = Divergence(path, spec.source_kind, tuple(outer), iteration,
                                           error=str(exc), runtime=self.label)
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
            c = compare(t.name, ours, theirs[k] if k < len(theirs) else None, self.rtol,
                        self.atol, self.label)
            keep_largest(lc, c)
            if c.ok:
                continue
            if first is None:
                inner = self.paths_by_layer.get(id(t.layer)) if t.layer is not None else None
                first = Divergence(path, spec.source_kind, tuple(outer), iteration, t, c,
                                   np.asarray(ours), theirs[k] if k < len(theirs) else None,
                                   inner=inner, runtime=self.label)
            else:
                first.others.append(t.name)
        if first is not None:
            lc.divergence = first

    def _body(self, spec: LoopSpec, body_in: tuple, lc: LoopCheck):
        key = (spec.path, signature(body_in))
        if key in self._bodies:
            return self._bodies[key]
        try:
            compiled, targets = self.oracle.compile_body(
                self.model, spec, self.parents.get(spec.path), body_in, self.all_nodes,
                f"the body of loop '{spec.path}'")
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
                found = self._loop_findings(spec, runs, notices, d.target.port, d.comparison)
                findings += found or [bk.unexplained(d.inner, None, d.comparison)]
        failing = [(k, c) for k, c in enumerate(report.outputs) if not c.ok]
        if failing and report.divergence is None:
            graph = self.model.graph
            for k, c in failing:
                ups = bk.upstream_loops(graph, graph.results[k], self.paths_by_layer)
                departs = self._runtime_departure(report, runs, ups, c)
                if departs is not None:
                    findings.append(departs)
                    continue
                here: list[bk.Finding] = []
                for path, port in ups:
                    spec = self.engine.loops[path]
                    here += self._loop_findings(spec, runs, notices, port, c,
                                                c.name if port is not None else None)
                    for other, inner in self.engine.loops.items():
                        if other.startswith(path + "/"):
                            here += self._loop_findings(inner, runs, notices)
                if ups and not here:
                    here.append(bk.unexplained(ups[0][0], c.name, c))
                findings += here
        died = None
        if report.runtime_error is not None and report.divergence is None:
            for spec in self.engine.loops.values():
                findings += self._loop_findings(spec, runs, notices)
            if self.oracle.runtime == "onnxruntime" and report.runtime_failure == "crash":
                died = onnxruntime_death(self.engine.loops, runs)
                findings += [bk.Finding(path, DEPARTS, None, why) for path, why in died[:1]]
        report.findings = bk.merge(findings)
        report.runtime_wrong = bool(died) or (bool(failing) and report.divergence is None and all(
            any(f.aspect == DEPARTS and c.name in f.outputs for f in report.findings)
            for _, c in failing))
        report.confirmed = self.per_iteration and report.bodies_agree and \
            report.divergence is None

    def _runtime_departure(self, report: CheckReport, runs, ups, c) -> bk.Finding | None:
        """A difference in an output that one of onnxruntime's known departures from the
        ONNX text explains (``runtime_departures``), as a finding."""
        if self.oracle.runtime != "onnxruntime" or not ups or ups[0][1] is None:
            return None
        path, port = ups[0]
        why = onnxruntime_departure(self.engine.loops[path], self.engine.loops, runs, port,
                                    report.loopdbg_outputs.get(c.name),
                                    report.runtime_outputs.get(c.name))
        if why is None:
            return None
        return bk.Finding(path, DEPARTS, None, why, (c.name,))

    def _loop_findings(self, spec: LoopSpec, *args) -> list[bk.Finding]:
        """``bookkeeping``'s findings: rules about where loopdbg and OpenVINO part ways, so
        none for onnxruntime (an unexplained difference is said instead)."""
        if self.oracle.runtime != "openvino":
            return []
        return bk.loop_findings(spec, *args)


# ----------------------------------------------------------------------------------------------


def _align(names: list[str], ov_names: list[set], values: list) -> list:
    """The runtime's outputs in loopdbg's output order: by tensor name, else by position."""
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
