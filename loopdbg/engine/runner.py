"""The Engine: a model compiled once, run as many times as wanted, each run an event generator.

    engine = Engine(read_model("model.xml"))
    for event in engine.run({"x": x}):
        if isinstance(event, IterationDone) and event.iteration == 3:
            print(event.back_edges)

Every face of loopdbg (the CLI, the debugging session, the trace recorder, the UI) is a consumer of
``Engine.run``. A consumer may stop iterating at any time; the generator holds all run state, so
dropping it leaks nothing. ``Engine(model, require_kernels=False)`` also opens a model with
operations loopdbg cannot run (see ``engine.kernels``), for the faces that only read its
structure (``explain``, ``graph``).
"""

from __future__ import annotations

from typing import Iterator, Mapping

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.if_op import IfSpec
from loopdbg.engine.inputs import match_inputs, output_names
from loopdbg.engine.kernels import KernelMaker
from loopdbg.engine.loopcode import runner
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.paths import loop_path
from loopdbg.engine.hoist import outer_constants
from loopdbg.engine.plan import GraphPlan
from loopdbg.errors import ModelError, UnsupportedOperation
from loopdbg.ir.bulk import paused
from loopdbg.ir.model import Layer, Model
from loopdbg.ops import budget, threads
from loopdbg.ops.registry import check_supported


class Engine:
    """A model turned into execution plans (once); ``run`` yields the events of one run."""

    def __init__(self, model: Model, *, require_kernels: bool = True):
        self.model = model
        self.file = model.path or model.graph.name or "model"
        self.loops: dict[str, LoopSpec] = {}          # by loop path, in the order they were found
        self.ifs: dict[tuple, IfSpec] = {}           # (loop path, layer id, order): one per If
        self.kernels = KernelMaker(require_kernels)
        self.unsupported: str | None = None           # why the model cannot run (if it cannot)
        try:
            check_supported(model.graph, self.file)   # every missing op in one sentence
        except UnsupportedOperation as exc:
            if require_kernels:
                raise
            self.unsupported = str(exc)
        self.plans: list[GraphPlan] = []              # every graph's plan, nested ones first
        with paused():                          # many objects, no garbage (ir.bulk)
            self.plan = GraphPlan(model.graph, "", f"{self.file}: ", self._nested, self.kernels.make)
        self.plans.append(self.plan)
        self.unsupported = self.unsupported or self.kernels.missing
        self.output_names = output_names(model)

    def _nested(self, layer: Layer, parent: str, graph=None, known: tuple = ()):
        """Compile a control-flow layer found in a graph; return the callable the plan invokes.
        ``known``: the value of each input known at plan time (``GraphPlan.known``), else None."""
        if layer.type == "If":
            where = f"{self.file}: " + (f"in loop '{parent}', " if parent else "")
            branches = {sub.role: GraphPlan(sub.graph, parent, where, self._nested, self.kernels.make,
                                            outer_constants(sub, known, loop=False))
                        for sub in layer.subgraphs}
            self.plans.extend(branches.values())
            spec = IfSpec(layer, branches, where)
            spec.parent = parent
            self.ifs[(parent, layer.id, len(self.ifs))] = spec
            return spec.run
        path = loop_path(parent, layer.name, layer.id, self.loops)
        body = layer.body
        if body is None:
            raise ModelError(f"{self.file}: {layer.describe()} has no <body>.")
        where = f"{self.file}: in the body of loop '{path}', "
        plan = GraphPlan(body.graph, path, where, self._nested, self.kernels.make,
                         outer_constants(body, known, loop=True))
        self.plans.append(plan)
        spec = LoopSpec(layer, path, plan, f"{self.file}: ")
        spec.parent_graph = graph
        self.loops[path] = spec
        return runner(spec)

    def run(self, inputs: Mapping[str, np.ndarray], *, max_iterations: int | None = None,
            max_memory: int | None = None, record_nodes: bool = False,
            source: str = "inputs") -> Iterator[ev.Event]:
        """Check ``inputs`` now (raising InputError), then return the event generator of the run."""
        return self.start(inputs, max_iterations=max_iterations, max_memory=max_memory,
                          record_nodes=record_nodes, source=source)[1]

    def start(self, inputs: Mapping[str, np.ndarray], *, max_iterations: int | None = None,
              max_memory: int | None = None, record_nodes: bool = False,
              source: str = "inputs") -> tuple[RunContext, Iterator[ev.Event]]:
        """``run``, and the run's context with it: a debugger sets its ``keep_nodes`` between
        two iterations to have the next one's every value on its event."""
        values = match_inputs(self.model, inputs, source)
        # BLAS's threads first: the budget's start makes BLAS's buffers with a matrix product
        # (ops.budget._warm_blas), which on a busy machine waits ~10-30 ms for a descheduled
        # second thread; and what setting the threads maps is then in the baseline, not the run
        threads.settle()                        # BLAS threads for the cores free now (ops.threads)
        budget.start(max_memory)                # what the run may add to the process (ops.budget)
        ctx = RunContext(max_iterations=max_iterations, max_memory=max_memory,
                         record_nodes=record_nodes)
        for spec in self.ifs.values():          # what the Ifs chose is told per run
            spec.reset()
        for text in self.model.warnings:
            ctx.notice("", text, None)
        for p in self.plans:
            for text in p.notices:
                ctx.notice(p.path, text, None)
        plan = self.plan
        return ctx, plan.run_events(ctx, lambda outs: self._finished(ctx, outs),
                                    lambda exc: plan.failure(exc, f"{self.file}: ", "the model"),
                                    *values)

    def _finished(self, ctx: RunContext, outs) -> ev.RunFinished:
        outputs = {name: v if v is None or isinstance(v, list) else np.asarray(v)
                   for name, v in zip(self.output_names, outs)}     # ONNX: sequences, optionals
        return ev.RunFinished(outputs, tuple(ctx.loops), tuple(ctx.notices))

    def generated_code(self) -> list[tuple[str, str, str | None]]:
        """(what, file name, source) of the Python each graph runs as: the top graph's event
        stream, each loop's iteration code with its body inlined (by loop path) and each If
        branch. A graph too big to compile (``interp.COMPILE_LIMIT``) has no source: (what,
        "interpreted", None). Compiles what was not compiled yet."""
        out: list[tuple[str, str, str | None]] = []
        bodies = {id(spec.body): path for path, spec in self.loops.items()}
        top = self.plan
        for plan in [top] + [p for p in self.plans if p is not top]:
            if plan is top:
                what, make = "the model's graph", "run_events"
            elif id(plan) in bodies:
                what, make = f"loop '{bodies[id(plan)]}'", None      # compiled with its loop
            else:
                what, make = "a branch of an If" + (f" in loop '{plan.path}'" if plan.path
                                                    else ""), "run"
            if make is not None:
                getattr(plan, make)
            if not plan.generated:
                out.append((what, "interpreted", None))
            out += [(what, filename, source) for filename, source in plan.generated.items()]
        return out

    def run_to_end(self, inputs: Mapping[str, np.ndarray], **options) -> ev.RunFinished:
        """Run without looking at the events; return the final event (outputs and loop summary)."""
        last = None
        for last in self.run(inputs, **options):
            pass
        return last
