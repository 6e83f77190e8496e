"""What a Loop or TensorIterator layer means, worked out once from its port map and back edges.

A ``LoopSpec`` answers, for the runner, where each body Parameter gets its value (a sliced input,
a merged input with its back edge, an invariant, the current iteration), which Result is the
condition, and how each output is formed (last value, or a concatenation on an axis). It also
names things for the debugger: Parameters, Results, back edges and scan outputs by their names.
"""

from __future__ import annotations

import numpy as np

from loopdbg.errors import ModelError, RunError
from loopdbg.ir import model as irm
from loopdbg.ir.model import Layer, SubGraph
from loopdbg.ir.onnx_names import OPTIONAL, OPTIONAL_SEQUENCE, VALUE_KIND
from loopdbg.ir.record import Record, set_field as _set
from loopdbg.engine.plan import GraphPlan


class SlicedFeed(Record):
    """An input the loop slices (a port_map input with an axis: TensorIterator's, or ONNX
    Scan's scan inputs): the body Parameter it feeds and how it is cut."""

    __slots__ = ("pos", "ext", "axis", "start", "end", "stride", "part_size", "name")
    pos: int                # body Parameter position
    ext: int                # external input index
    axis: int
    start: int
    end: int
    stride: int
    part_size: int
    name: str

    def __init__(self, pos: int, ext: int, axis: int, start: int, end: int, stride: int,
                 part_size: int, name: str):
        _set(self, "pos", pos)
        _set(self, "ext", ext)
        _set(self, "axis", axis)
        _set(self, "start", start)
        _set(self, "end", end)
        _set(self, "stride", stride)
        _set(self, "part_size", part_size)
        _set(self, "name", name)


class OutputForm(Record):
    """How one output of the loop is formed from its body Result: the last value, or the
    iterations' values concatenated along ``axis``."""

    __slots__ = ("index", "kind", "result_pos", "axis", "stride", "start", "end", "name",
                 "concat_k")
    index: int              # output index of the loop layer
    kind: str               # irm.CONCAT or irm.LAST_VALUE
    result_pos: int
    axis: int | None
    stride: int
    start: int
    end: int
    name: str               # body Result name (unique within the loop)
    concat_k: int           # index among the concatenated outputs

    def __init__(self, index: int, kind: str, result_pos: int, axis: int | None = None,
                 stride: int = 1, start: int = 0, end: int = -1, name: str = "",
                 concat_k: int = -1):
        _set(self, "index", index)
        _set(self, "kind", kind)
        _set(self, "result_pos", result_pos)
        _set(self, "axis", axis)
        _set(self, "stride", stride)
        _set(self, "start", start)
        _set(self, "end", end)
        _set(self, "name", name)
        _set(self, "concat_k", concat_k)


class LoopSpec:
    """The static meaning of one Loop/TensorIterator layer (see module docstring)."""

    def __init__(self, layer: Layer, path: str, body: GraphPlan, where: str):
        self.layer = layer
        self.path = path
        self.kind = layer.type
        self.body = body
        self.where = where
        self._param_positions: dict[int, int] = {}  # body Parameter id -> its position (the
        for k, pid in enumerate(body.param_ids):    # first): a decoder's body has hundreds
            self._param_positions.setdefault(pid, k)
        sub = layer.body
        if sub is None:
            raise ModelError(f"{where}{layer.describe()} has no <body>.")
        self.sub = sub
        # ONNX Loop/Scan read from .onnx (loop_semantics.md §7): a negative trip count runs zero
        # iterations, sliced inputs lose the sliced axis and scan outputs are stacked on a new one.
        self.onnx = str(layer.data.get("onnx_semantics", "")).lower() == "true"
        self.param_names = body.param_names
        self.result_names = body.result_names
        self.param_index = {n: k for k, n in enumerate(self.param_names)}
        self.result_index = {n: k for k, n in enumerate(self.result_names)}
        self._classify_inputs(sub)
        self._classify_outputs(sub)
        self.back_edge_view = tuple((self.param_names[p], r) for p, r in self.back_edges)
        self.concat_view = tuple((o.name, o.result_pos) for o in self.concats)
        self.sliced_view = tuple((f.name, f.pos) for f in self.sliced)
        self._concat_by_name = {o.name: o.concat_k for o in self.concats}

    # -- inputs -------------------------------------------------------------------------------
    @property
    def source_kind(self) -> str:
        """The loop's type in its model's own words: ``Scan`` for an ONNX Scan (which loopdbg
        runs as a TensorIterator), else ``kind``."""
        op = self.layer.data.get("onnx_op") if self.onnx else None
        return op if op in ("Loop", "Scan") else self.kind

    def _param_pos(self, layer_id: int, what: str) -> int:
        pos = self._param_positions.get(layer_id)
        if pos is not None:
            return pos
        raise ModelError(f"{self.where}{self.layer.describe()}: the port_map {what} names body "
                         f"layer {layer_id}, which is not a body Parameter.")

    def _result_pos(self, layer_id: int, what: str) -> int:
        try:
            return self.body.result_ids.index(layer_id)
        except ValueError:
            raise ModelError(f"{self.where}{self.layer.describe()}: the {what} names body "
                             f"layer {layer_id}, which is not a body Result.") from None

    def _classify_inputs(self, sub: SubGraph) -> None:
        self.sliced: list[SlicedFeed] = []
        self.merged: list[tuple[int, int]] = []        # (param pos, external index)
        self.invariant: list[tuple[int, int]] = []
        self.current_iteration: int | None = None
        self.cur_dtype = np.dtype(np.int64)
        self.cur_shape: tuple[int, ...] = ()
        self.condition_param: int | None = None
        fed: dict[int, str] = {}
        self.duplicates: list[str] = []
        for role, m in irm.classify_inputs(sub):
            pos = self._param_pos(m.internal_layer_id, f"input {m.external_port_id}")
            pname = self.param_names[pos]
            if pos in fed:
                self.duplicates.append(f"body Parameter '{pname}' is fed twice by the port map; "
                                       f"the first entry ({fed[pos]}) is used")
                continue
            fed[pos] = role
            if role == irm.SLICED:
                axis = m.axis
                self.sliced.append(SlicedFeed(pos, m.external_port_id, axis, m.start, m.end,
                                              m.stride, m.part_size, pname))
            elif role == irm.MERGED:
                self.merged.append((pos, m.external_port_id))
            elif role == irm.INVARIANT:
                self.invariant.append((pos, m.external_port_id))
            elif role == irm.CURRENT_ITERATION:
                self.current_iteration = pos
                self._current_iteration_type(pos)
            elif role == irm.CONDITION:
                self.condition_param = pos
            else:
                raise ModelError(f"{self.where}{self.layer.describe()}: body Parameter '{pname}' "
                                 f"has a port_map entry with external_port_id "
                                 f"{m.external_port_id} and no purpose, so nothing feeds it.")
        for pos, name in enumerate(self.param_names):
            if pos not in fed:
                raise ModelError(f"{self.where}{self.layer.describe()}: body Parameter '{name}' has "
                                 f"no port_map input entry, so nothing feeds it.")
        self.roles = fed
        # Back edges that target a described Parameter (the reader ignores the others).
        self.back_edges: list[tuple[int, int]] = []
        merged_pos = {p for p, _ in self.merged}
        for be in sub.back_edges:
            r = self._result_pos(be.from_layer, "back edge")
            p = self._param_pos(be.to_layer, "back edge")
            if p in merged_pos or p == self.current_iteration or p == self.condition_param:
                self.back_edges.append((p, r))
        self.cur_fed_back = any(p == self.current_iteration for p, _ in self.back_edges)
        self.may_be_empty = self._may_be_empty()

    def _may_be_empty(self) -> frozenset[int]:
        """ONNX: the body Parameters that may hold an empty optional (None). A carried value
        whose body input is an optional (or has no declared type) may start empty and be made
        empty (Loop-16); a value read from an enclosing graph (an invariant input) is whatever
        that graph holds, an empty optional too."""
        if not self.onnx:
            return frozenset()
        empty = {pos for pos, _ in self.invariant}
        for pos, _ in self.merged:
            data = self.body.graph.layers[self.body.param_ids[pos]].data
            if data.get(VALUE_KIND) in (OPTIONAL, OPTIONAL_SEQUENCE) or \
                    (data.get("element_type") == "dynamic" and data.get("shape") == "..."):
                empty.add(pos)
        return frozenset(empty)

    def _current_iteration_type(self, pos: int) -> None:
        from loopdbg.ir.elements import numpy_dtype
        from loopdbg.ir.shapes import parse_shape

        layer = self.body.graph.layers[self.body.param_ids[pos]]
        et = layer.data.get("element_type", "i64")
        dt = np.dtype(numpy_dtype(et))
        if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise ModelError(f"{self.where}{layer.describe()} is the current_iteration input but "
                             f"has element type {et}; it must be i32 or i64.")
        shape = parse_shape(layer.data.get("shape", ""))
        rank = len(shape) if shape is not None else 1
        if rank > 1:
            raise ModelError(f"{self.where}{layer.describe()} is the current_iteration input but "
                             f"has rank {rank}; it must be 0 or 1.")
        self.cur_dtype = dt
        self.cur_shape = () if rank == 0 else (1,)

    # -- outputs ------------------------------------------------------------------------------
    def _classify_outputs(self, sub: SubGraph) -> None:
        self.cond_result: int | None = None
        forms: list[OutputForm] = []
        concats: list[OutputForm] = []
        used_names: set[str] = set()
        for role, m in irm.classify_outputs(sub):
            r = self._result_pos(m.internal_layer_id, f"port_map output {m.external_port_id}")
            if role == irm.EXECUTION_CONDITION:
                self.cond_result = r
                continue
            name = self._output_name(len(forms), r)
            if name in used_names:
                name = f"{name}#{len(forms)}"
            used_names.add(name)
            if role == irm.CONCAT:
                form = OutputForm(len(forms), irm.CONCAT, r, m.axis, m.stride, m.start, m.end,
                                  name, len(concats))
                concats.append(form)
            else:
                form = OutputForm(len(forms), irm.LAST_VALUE, r, name=name)
            forms.append(form)
        if self.kind == "Loop" and self.cond_result is None:
            raise ModelError(f"{self.where}{self.layer.describe()} has no port_map output with "
                             f"purpose=\"execution_condition\"; a Loop needs its body condition.")
        n_out = len(self.layer.outputs)
        if n_out and n_out != len(forms):
            raise ModelError(f"{self.where}{self.layer.describe()} declares {n_out} outputs but its "
                             f"port_map describes {len(forms)}.")
        if self.kind == "TensorIterator":
            for o in concats:
                if (o.start, o.end) not in ((0, -1), (-1, 0)):
                    raise ModelError(
                        f"{self.where}{self.layer.describe()}: concatenated output '{o.name}' has "
                        f"start={o.start} end={o.end}; only (0, -1) and (-1, 0) are supported.")
        self.outputs = forms
        self.concats = concats

    def _output_name(self, index: int, result_pos: int) -> str:
        """An output is named by the loop's output tensor name, else by its body Result."""
        if index < len(self.layer.outputs) and self.layer.outputs[index].names:
            return self.layer.outputs[index].names[0]
        return self.result_names[result_pos]

    # -- helpers for the runner and the debugger ------------------------------------------------
    def concat_index(self, name: str) -> int:
        return self._concat_by_name[name]

    def join_concat(self, k: int, pieces) -> np.ndarray:
        """Concatenate the pieces of concat output ``k`` (reversed when its stride is negative)."""
        form = self.concats[k]
        if not pieces:
            return self.empty_concat(form)
        if form.stride < 0:
            pieces = pieces[::-1]
        if self.onnx:
            return self._stack(form, pieces)
        first = np.asarray(pieces[0])
        if first.ndim == 0:
            return np.stack(pieces)
        axis = form.axis + first.ndim if form.axis < 0 else form.axis
        if not 0 <= axis < first.ndim:
            raise RunError(f"{self.where}{self.layer.describe()}: concatenated output '{form.name}' "
                           f"has axis {form.axis}, out of range for values of rank {first.ndim}.",
                           loop_path=self.path)
        return np.concatenate(pieces, axis=axis)

    def _stack(self, form: OutputForm, pieces) -> np.ndarray:
        """ONNX scan outputs: the per-iteration values stacked along a new axis ``form.axis``."""
        rank = np.ndim(pieces[0])
        if not -(rank + 1) <= form.axis <= rank:
            raise RunError(f"{self.where}{self.layer.describe()}: scan output '{form.name}' has "
                           f"axis {form.axis}, out of range for values of rank {rank}.",
                           loop_path=self.path)
        return np.stack(pieces, axis=form.axis)

    def declared(self, result_pos: int) -> tuple[tuple[int, ...], np.dtype]:
        """The declared shape (dynamic dims as 0) and dtype of a body Result's input."""
        from loopdbg.ir.elements import numpy_dtype

        layer = self.body.graph.layers[self.body.result_ids[result_pos]]
        port = layer.inputs[0] if layer.inputs else None
        dims = tuple(max(d, 0) for d in port.dims) if port else ()
        dtype = None
        try:
            dt = numpy_dtype(port.precision) if port and port.precision else None
            dtype = np.dtype(dt) if dt is not None else None
        except (ValueError, TypeError):
            pass
        return dims, dtype or np.dtype(np.float32)

    def empty_concat(self, form: OutputForm) -> np.ndarray:
        dims, dtype = self.declared(form.result_pos)
        if self.onnx:                 # stacked: a new axis of length 0
            axis = form.axis + len(dims) + 1 if form.axis < 0 else form.axis
            return np.zeros(dims[:axis] + (0,) + dims[axis:], dtype)
        if not dims:
            return np.zeros((0,), dtype)
        axis = form.axis + len(dims) if form.axis < 0 else form.axis
        shape = list(dims)
        if 0 <= axis < len(shape):
            shape[axis] = 0
        return np.zeros(tuple(shape), dtype)

    def merged_source(self, result_pos: int) -> int | None:
        """External index of the merged input whose back edge starts at ``result_pos``."""
        for p, r in self.back_edges:
            if r == result_pos:
                for mp, ext in self.merged:
                    if mp == p:
                        return ext
        return None
