"""What a check found: per loop (``LoopCheck``), the first divergence (``Divergence``), the whole
report (``CheckReport``) with its exit status. Plain data: ``checker`` fills it, ``report`` and
``json_report`` show it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from loopdbg.check import bookkeeping as bk
from loopdbg.check.compare import Comparison
from loopdbg.check.extract import NODE, Target

KIND_SHORT = {"Loop": "Loop", "TensorIterator": "TI", "Scan": "Scan"}   # in the model's words


def where(path: str, outer: tuple, iteration: int) -> str:
    """How a report names one iteration: ``loop 'p' (outer iteration 1), iteration 2``."""
    at = (f" (outer iteration{'s' if len(outer) > 1 else ''} "
          f"{', '.join(map(str, outer))})") if outer else ""
    return f"loop '{path}'{at}, iteration {iteration}"


@dataclass
class Divergence:
    """The first body iteration of a loop where the runtime and loopdbg disagree."""

    path: str
    kind: str
    outer: tuple
    iteration: int
    target: Target | None = None          # what differs (None: the runtime failed to run it)
    comparison: Comparison | None = None
    ours: np.ndarray | None = None
    theirs: np.ndarray | None = None
    others: list[str] = field(default_factory=list)   # other tensors differing in that iteration
    error: str | None = None              # the runtime could not run the iteration
    inner: str | None = None              # the nested loop that computes the differing value
    runtime: str = "OpenVINO"             # who loopdbg was compared with

    @property
    def where(self) -> str:
        return where(self.path, self.outer, self.iteration)

    @property
    def what(self) -> str:
        t = self.target
        if t is None:
            return f"{self.runtime} could not run the body"
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
    failure: str | None = None        # the runtime's failure kind then (loopdbg.oracle's kinds)
    compiled: int = 0                 # standalone models compiled (one per rank signature)
    note: str | None = None           # why the loop is not checked, when that is no failure
    outers_seen: set = field(default_factory=set, repr=False)

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.error is None


@dataclass
class CheckReport:
    model: str
    source: str
    device: str
    runtime: str                          # "OpenVINO" or "onnxruntime"
    version: str
    precision: str
    rtol: float
    atol: float
    per_iteration: bool
    all_nodes: bool
    outputs: list[Comparison] = field(default_factory=list)
    runtime_error: str | None = None      # the runtime failed to run the whole model: why
    runtime_failure: str | None = None    # its kind: error, crash, hang, memory (loopdbg.oracle)
    loops: dict[str, LoopCheck] = field(default_factory=dict)
    divergence: Divergence | None = None
    findings: list[bk.Finding] = field(default_factory=list)
    confirmed: bool = False               # the findings follow from bodies that all agree
    runtime_wrong: bool = False           # every differing output is a known runtime departure
    notices: list[tuple] = field(default_factory=list)    # loopdbg's reports: (path, text, rule)
    notes: list[str] = field(default_factory=list)
    capped: bool = False                  # loopdbg stopped a loop at max_iterations
    trace: str | None = None
    loopdbg_outputs: dict = field(default_factory=dict, repr=False)   # by output name
    runtime_outputs: dict = field(default_factory=dict, repr=False)   # by loopdbg's output name

    @property
    def outputs_agree(self) -> bool:
        return self.runtime_error is None and all(c.ok for c in self.outputs)

    @property
    def bodies_agree(self) -> bool:
        return all(lc.ok for lc in self.loops.values())

    @property
    def incomplete(self) -> bool:
        """Something could not be compared (a body that did not compile, missing outputs)."""
        return (any(lc.error for lc in self.loops.values()) or self.capped
                or (self.runtime_error is None and not self.outputs and self.trace is not None))

    @property
    def exit_code(self) -> int:
        if self.divergence is not None:
            return 1
        if self.runtime_error is not None:
            return 2                      # nothing to compare the outputs with
        if not self.outputs_agree:
            return 1
        return 2 if self.incomplete else 0


