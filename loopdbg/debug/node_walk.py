"""One iteration run again node by node: what ``Session.step_node`` steps through.

Kernels are pure, so running an iteration's body again from its inputs gives the values it gave;
each step is a ``NodeStep`` with every value computed so far.
"""

from __future__ import annotations

from loopdbg.debug.stop import NodeStep
from loopdbg.engine import events as ev
from loopdbg.engine.recompute import node_steps


class NodeWalk:
    """The body nodes of one iteration (``event``), executed one at a time."""

    def __init__(self, event: ev.IterationDone):
        self.event = event
        self.steps = node_steps(event)
        self.last: NodeStep | None = None      # the node executed last (None: none yet)

    def next(self) -> NodeStep | None:
        """Execute the next node; None when every node has run."""
        target, last = self.event, self.last
        try:
            layer, outs = next(self.steps)
        except StopIteration:
            return None
        values = dict(last.values) if last else dict(zip(target.spec.param_names, target.body_in))
        for j, value in enumerate(outs):
            values[layer.name if j == 0 else f"{layer.name}:{j}"] = value
        total = len(target.spec.body.steps)
        index = last.index + 1 if last else 0
        self.last = NodeStep(event=target, index=index, total=total, layer=layer, values=values)
        return self.last
