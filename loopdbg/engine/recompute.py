"""Recomputing one body iteration from its recorded inputs: every node's value, or node by node.

The engine does not keep intermediate body values (that would slow every iteration down) unless
asked: a run that records every node, or the iteration a debugger's step stops at
(``RunContext.keep_nodes``), carries them on its event. For any other iteration a debugger that
wants them re-runs the iteration's compiled body on the same inputs, which gives the same values
because kernels are pure functions of their inputs, given BLAS's thread count (a product's last
bits depend on it): the re-run has the count the iteration ran with (``LoopRun.threads_at``).
"""

from __future__ import annotations

from typing import Iterator

from loopdbg.engine.context import RunContext
from loopdbg.engine.events import IterationDone
from loopdbg.engine.if_op import choices_kept
from loopdbg.engine.plan import drain
from loopdbg.ir.model import Layer
from loopdbg.ops.threads import pinned


def node_values(event: IterationDone) -> dict:
    """Every value of the iteration by name: Parameters, then each layer's outputs (``name:k``)."""
    if event.nodes is not None:
        return dict(event.nodes)
    body = event.spec.body
    with choices_kept(body), pinned(event.run.threads_at(event.iteration)):
        _, every = drain(body.run_all(RunContext(), *event.body_in))   # (Ifs: as they chose)
    return body.result_values(every)


def node_steps(event: IterationDone) -> Iterator[tuple[Layer, tuple]]:
    """Re-run the iteration one layer at a time: ``(layer, outputs)`` after each (each layer
    with the BLAS thread count the iteration ran with, and BLAS's own between two)."""
    steps = event.spec.body.interpret(RunContext(), event.body_in)
    count = event.run.threads_at(event.iteration)
    try:
        while True:
            with pinned(count):
                step = next(steps, None)
            if step is None:
                return
            yield step
    finally:
        steps.close()
