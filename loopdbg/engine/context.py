"""The state of one run that every loop of it shares: options, the outer-iteration stack, reports."""

from __future__ import annotations

from loopdbg.engine.events import LoopFinished, Notice


class RunContext:
    """Options and bookkeeping of one run (an Engine may run many times, each with its own).
    (A plain class: a dataclass costs ~1 ms of every start to define, ``ir.record``.)"""

    def __init__(self, max_iterations: int | None = None, max_memory: int | None = None,
                 record_nodes: bool = False, keep_nodes: int = 0):
        self.max_iterations = max_iterations    # per loop execution; None: no cap
        self.max_memory = max_memory            # bytes of concatenated pieces; None: no budget
        self.record_nodes = record_nodes        # every body node's value in IterationDone.nodes
        # The same for the iterations of loops nested fewer than ``keep_nodes`` deep (0: the
        # outermost ones), read before each iteration: a debugger sets it between two
        # iterations when the next one is where it will stop, so that stop's values need no
        # second run.
        self.keep_nodes = keep_nodes
        self.outer: list[int] = []
        self.notices: list[Notice] = []
        self.loops: list[LoopFinished] = []
        self.scan_bytes = 0
        self.variables: dict = {}       # variable id -> the value Assign last gave
        self.op_states: dict = {}       # a kernel -> its state in this run (RNGs)
        self._said: set = set()

    def notice(self, path: str, message: str, rule: int | None) -> tuple[Notice, ...]:
        """A report (docs/semantics.md rules marked "report"), said once per run."""
        key = (path, message)
        if key in self._said:
            return ()
        self._said.add(key)
        n = Notice(path, message, rule)
        self.notices.append(n)
        return (n,)
