"""The events the engine yields while it runs a model.

The stream for a model is::

    LoopStarted, IterationDone*, LoopFinished     (for every loop execution, nested ones inside)
    Notice*                                      (whenever a docs/semantics.md rule marked "report" fires)
    RunFinished                                  (last, with the model's outputs)

``IterationDone`` is created after every body iteration of every loop and is cheap to create: it
keeps references to the iteration's body inputs and outputs and builds the named views (back edges,
scan slices, sliced inputs) only when they are read. All arrays it refers to are never written
again by the engine, so an event stays valid after the run has moved on.
"""

from __future__ import annotations

import sys
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from loopdbg.ir.record import Record, set_field as _set

if TYPE_CHECKING:
    from loopdbg.engine.loopspec import LoopSpec

# Why a loop stopped.
STOP_TRIP_COUNT = "trip_count"          # ran the number of iterations the trip count allowed
STOP_CONDITION = "condition"            # the body condition became false
STOP_NOT_STARTED = "execution_condition"  # the execution condition was false: zero iterations
STOP_ZERO_TRIP = "zero_trip_count"      # the trip count was 0: zero iterations
STOP_SLICES = "slices_exhausted"        # TensorIterator: every slice was used
STOP_CAP = "iteration_cap"              # --max-iterations reached
STOP_ERROR = "error"                    # a kernel or a semantic check failed

STOP_TEXT = {
    STOP_TRIP_COUNT: "the trip count was reached",
    STOP_CONDITION: "the body condition became false",
    STOP_NOT_STARTED: "the execution condition was false, so the body never ran",
    STOP_ZERO_TRIP: "the trip count was 0, so the body never ran",
    STOP_SLICES: "every slice of the sliced inputs was used",
    STOP_CAP: "the iteration cap (--max-iterations) was reached",
    STOP_ERROR: "an error stopped it",
}


class LoopStarted(Record):
    """A loop's execution begins."""

    __slots__ = ("path", "layer_id", "layer_name", "kind", "trip_count", "execution_condition",
                 "outer", "spec")
    _hidden = ("spec",)
    path: str
    layer_id: int
    layer_name: str
    kind: str                       # "Loop" or "TensorIterator"
    trip_count: int | None          # None: no limit (Loop with a negative or absent trip count)
    execution_condition: bool
    outer: tuple[int, ...]          # iterations of the enclosing loops, outermost first
    spec: "LoopSpec | None"

    def __init__(self, path: str, layer_id: int, layer_name: str, kind: str,
                 trip_count: int | None, execution_condition: bool, outer: tuple[int, ...] = (),
                 spec: "LoopSpec | None" = None):
        _set(self, "path", path)
        _set(self, "layer_id", layer_id)
        _set(self, "layer_name", layer_name)
        _set(self, "kind", kind)
        _set(self, "trip_count", trip_count)
        _set(self, "execution_condition", execution_condition)
        _set(self, "outer", outer)
        _set(self, "spec", spec)


class LoopRun:
    """One execution of one loop: what all of its IterationDone events share (made once per
    execution, so an event carries one reference for these five fields).

    ``steady_from``: the engine sets it when it has proved that every iteration from that one
    on computes values of the same shapes and dtypes (``engine.loopcode.steady_kind``); a
    consumer may then stop checking them (the trace writer does).

    ``blas_threads``: ``(first iteration, count)`` of each BLAS thread count the execution's
    iterations ran with (``loopdbg.ops.threads``; a product's last bits depend on it): the
    count at its start, then each one a look between iterations moved to. Recomputing an
    iteration (``engine.recompute``) runs with its count (``threads_at``)."""

    __slots__ = ("path", "trip_count", "spec", "collected", "outer", "steady_from",
                 "blas_threads")

    def __init__(self, path: str, trip_count: int | None, spec: "LoopSpec | None",
                 collected: tuple = (), outer: tuple[int, ...] = (),
                 blas_threads: int | None = None):
        self.path, self.trip_count, self.spec = path, trip_count, spec
        self.collected, self.outer = collected, outer
        self.steady_from = sys.maxsize
        self.blas_threads = [(0, blas_threads)]

    def threads_at(self, iteration: int) -> int | None:
        """The BLAS thread count iteration ``iteration`` ran with (None: not known)."""
        count = None
        for first, n in self.blas_threads:
            if first > iteration:
                break
            count = n
        return count

    def __repr__(self) -> str:
        return f"LoopRun(path={self.path!r}, trip_count={self.trip_count}, outer={self.outer})"


_FIELDS = ("run", "iteration", "cond", "continues", "body_in", "body_out", "nodes", "stop_reason")


class IterationDone(tuple):
    """One body iteration has finished.

    ``iteration`` is the 0-based index of the iteration that just ran; ``cond`` is the body
    condition it produced (always True for a TensorIterator); ``continues`` says whether another
    iteration follows, and ``stop_reason`` why not. ``body_in``/``body_out`` are the body
    Parameter/Result values in plan order; ``run`` is the loop execution (``LoopRun``) whose
    ``path``, ``trip_count``, ``spec``, ``collected`` (the append-only piece lists of the
    concatenated outputs) and ``outer`` (the iterations of the enclosing loops, outermost
    first) are attributes of the event too.

    One is made per iteration, so it is a tuple underneath, made by the engine with one C call,
    ``IterationDone((run, iteration, cond, continues, body_in, body_out, nodes, stop_reason))``;
    ``IterationDone.make`` takes the fields by name. The fields are read-only attributes; events
    compare and hash by identity, as any object (never by their arrays).
    """

    __slots__ = ()

    @classmethod
    def make(cls, path: str, iteration: int, trip_count: int | None, cond: bool,
             continues: bool, spec: "LoopSpec", body_in: tuple, body_out: tuple,
             collected: tuple = (), outer: tuple[int, ...] = (),
             nodes: Mapping[str, Any] | None = None,
             stop_reason: str | None = None) -> "IterationDone":
        run = LoopRun(path, trip_count, spec, collected, outer)
        return cls((run, iteration, cond, continues, body_in, body_out, nodes, stop_reason))

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    @property
    def path(self) -> str:
        return self[0].path

    @property
    def trip_count(self) -> int | None:
        return self[0].trip_count

    @property
    def spec(self) -> "LoopSpec":
        return self[0].spec

    @property
    def collected(self) -> tuple:
        return self[0].collected

    @property
    def outer(self) -> tuple[int, ...]:
        return self[0].outer

    def __repr__(self) -> str:
        return (f"IterationDone(path={self.path!r}, iteration={self.iteration}, "
                f"trip_count={self.trip_count}, cond={self.cond}, continues={self.continues}, "
                f"outer={self.outer})")

    @property
    def back_edges(self) -> dict[str, np.ndarray]:
        """Values that feed the next iteration, named by the body Parameter they feed."""
        return {p: self.body_out[r] for p, r in self.spec.back_edge_view}

    @property
    def inputs(self) -> dict[str, np.ndarray]:
        """Every body Parameter's value in this iteration, by Parameter name."""
        return dict(zip(self.spec.param_names, self.body_in))

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """Every body Result's value in this iteration, by Result name."""
        return dict(zip(self.spec.result_names, self.body_out))

    @property
    def scan_slices(self) -> dict[str, np.ndarray]:
        """What this iteration contributed to each concatenated output, by output name."""
        return {name: self.body_out[r] for name, r in self.spec.concat_view}

    @property
    def sliced_inputs(self) -> dict[str, np.ndarray]:
        """The slice each sliced input fed to this iteration, by body Parameter name."""
        return {name: self.body_in[p] for name, p in self.spec.sliced_view}

    def partial(self, name: str) -> np.ndarray:
        """The concatenated output ``name`` as it stands after this iteration."""
        k = self.spec.concat_index(name)
        return self.spec.join_concat(k, self.collected[k][: self.iteration + 1])

    @property
    def partials(self) -> dict[str, np.ndarray]:
        return {name: self.partial(name) for name, _ in self.spec.concat_view}

    def value(self, name: str) -> np.ndarray:
        """Any named value of this iteration: a body Parameter, Result or (if recorded) node."""
        spec = self.spec
        if name in spec.param_index:
            return self.body_in[spec.param_index[name]]
        if name in spec.result_index:
            return self.body_out[spec.result_index[name]]
        if self.nodes is not None and name in self.nodes:
            return self.nodes[name]
        raise KeyError(name)


for _k, _name in enumerate(_FIELDS):
    setattr(IterationDone, _name, property(itemgetter(_k), doc=f"field {_k} of the event"))


class LoopFinished(Record):
    """A loop's execution ended: how many iterations ran, why it stopped, its outputs."""

    __slots__ = ("path", "iterations", "reason", "outputs", "outer", "error")
    _hidden = ("outputs",)
    path: str
    iterations: int
    reason: str
    outputs: Mapping[str, np.ndarray]
    outer: tuple[int, ...]
    error: str | None

    def __init__(self, path: str, iterations: int, reason: str,
                 outputs: Mapping[str, np.ndarray] | None = None, outer: tuple[int, ...] = (),
                 error: str | None = None):
        _set(self, "path", path)
        _set(self, "iterations", iterations)
        _set(self, "reason", reason)
        _set(self, "outputs", {} if outputs is None else outputs)
        _set(self, "outer", outer)
        _set(self, "error", error)

    @property
    def reason_text(self) -> str:
        return STOP_TEXT.get(self.reason, self.reason)


class Notice(Record):
    """A rule of docs/semantics.md marked "report" fired: loopdbg chose a behaviour OpenVINO may not share."""

    __slots__ = ("path", "message", "rule")
    path: str
    message: str
    rule: int | None

    def __init__(self, path: str, message: str, rule: int | None = None):
        _set(self, "path", path)
        _set(self, "message", message)
        _set(self, "rule", rule)


class RunFinished(Record):
    """The run ended: the model's outputs, every loop's LoopFinished and every Notice."""

    __slots__ = ("outputs", "loops", "notices", "interrupted")
    outputs: Mapping[str, np.ndarray]
    loops: tuple[LoopFinished, ...]
    notices: tuple[Notice, ...]
    interrupted: bool

    def __init__(self, outputs: Mapping[str, np.ndarray], loops: tuple[LoopFinished, ...] = (),
                 notices: tuple[Notice, ...] = (), interrupted: bool = False):
        _set(self, "outputs", outputs)
        _set(self, "loops", loops)
        _set(self, "notices", notices)
        _set(self, "interrupted", interrupted)


Event = LoopStarted | IterationDone | LoopFinished | Notice | RunFinished
