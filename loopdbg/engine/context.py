"""The state of one run that every loop of it shares: options, the outer-iteration stack, reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from loopdbg.engine.events import LoopFinished, Notice


@dataclass
class RunContext:
    """Options and bookkeeping of one run (an Engine may run many times, each with its own)."""

    max_iterations: int | None = None      # per loop execution; None: no cap
    max_memory: int | None = None          # bytes of concatenated pieces; None: no budget
    record_nodes: bool = False             # put every body node's value in IterationDone.nodes
    # The same for the iterations of loops nested fewer than ``keep_nodes`` deep (0: the
    # outermost ones), read before each iteration: a debugger sets it between two iterations
    # when the next one is where it will stop, so that stop's values need no second run.
    keep_nodes: int = 0
    outer: list[int] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    loops: list[LoopFinished] = field(default_factory=list)
    scan_bytes: int = 0
    variables: dict = field(default_factory=dict)   # variable id -> the value Assign last gave
    op_states: dict = field(default_factory=dict)   # a kernel -> its state in this run (RNGs)
    _said: set = field(default_factory=set)

    def notice(self, path: str, message: str, rule: int | None) -> tuple[Notice, ...]:
        """A report (docs/semantics.md rules marked "report"), said once per run."""
        key = (path, message)
        if key in self._said:
            return ()
        self._said.add(key)
        n = Notice(path, message, rule)
        self.notices.append(n)
        return (n,)
