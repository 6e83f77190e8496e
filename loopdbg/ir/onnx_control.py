"""ONNX control flow read into loopdbg's Loop, TensorIterator and If layers.

Control flow is translated to the engine's Loop / TensorIterator / If layers, marked with
``data["onnx_semantics"] = "true"`` so the engine applies ONNX's rules where they differ from
OpenVINO's (loop_semantics.md §7): a negative M runs zero iterations, scan outputs are *stacked*
along a new axis, and Scan slices lose the scanned axis. The body keeps ONNX's names and order:

* Loop: body Parameters ``(iteration_num, cond_in, carried...)`` fed as the current iteration,
  the condition (port-map purpose ``condition``) and merged inputs with back edges from the
  carried outputs; body Results ``(cond_out, carried..., scan...)``; outputs ``carried finals,
  scans`` stacked on axis 0.
* Scan (opset 9+): a TensorIterator; state variables are merged inputs, scan inputs are sliced on
  ``scan_input_axes`` (backward for ``scan_input_directions`` 1), scan outputs stacked on
  ``scan_output_axes`` (reversed for ``scan_output_directions`` 1).
* Scan-8 (a batch axis 0 and the sequence on axis 1): an outer TensorIterator named
  ``<name>_batch`` over the batch, whose body holds the Scan as above. ``sequence_lens`` is not
  supported. The batch loop's Parameters show the Scan inputs' names, but its builder knows
  them by keys no ONNX name can be: ONNX graphs are lexically scoped, so a body reading one of
  those names reads the whole outer tensor, not its batch entry.
* If: an If layer whose branches read what they need through its inputs.

Values a body reads from an enclosing graph by name become explicit Parameters of the body (named
as the outer value), fed as invariant inputs of the control-flow layer, through every level.
A Loop's carried body inputs keep their kind (``onnx_names.VALUE_KIND``): an optional may be
empty. A Loop or Scan whose scan outputs have shapes the file leaves open keeps its body
(``BODY_PROTO``, ``OPEN_OUTPUTS``) for the element shapes of a run of zero iterations
(``onnx_infer``).
"""

from __future__ import annotations

from loopdbg.errors import ModelError
from loopdbg.ir.model import BackEdge, InputMapping, Layer, OutputMapping, SubGraph
from loopdbg.ir.onnx_builder import Builder
from loopdbg.ir.onnx_names import (BODY_PROTO, OPEN_OUTPUTS, OPSETS, OPTIONAL, OPTIONAL_SEQUENCE,
                                   SCAN8_STATES, SEQUENCE)
from loopdbg.ir.onnx_types import TensorType, shared_port, tensor_type, value_kind

ONNX_FLAG = "onnx_semantics"
CONTROL = ("Loop", "Scan", "If")


class ControlFlow:
    """The ONNX reader's converter's methods for Loop, Scan and If (a mixin: ``self`` has the
    converter's ``where``, ``opsets``, ``types``, ``builder``, ``control_name`` and ``_ttype``)."""

    def _sub_where(self, kind: str, name: str) -> str:
        return f"{self.where}in the body of {kind} '{name}', "

    def _attr_graph(self, b: Builder, node, name: str):
        for a in node.attribute:
            if a.name == name and a.type == a.GRAPH:
                return a.g
        raise ModelError(f"{b.where}{node.op_type} node '{node.name or node.output[0]}' has no "
                         f"'{name}' graph attribute.")

    def _attr_ints(self, node, name: str, default=None):
        for a in node.attribute:
            if a.name == name:
                return list(a.ints) if a.ints else ([a.i] if a.type == a.INT else [])
        return default

    def _control_layer(self, b: Builder, node, lname: str, type_: str, version: str,
                       in_names: list[str], out_names: list[str], subs: tuple[SubGraph, ...],
                       extra: dict | None = None) -> None:
        lid = b.new_id()
        n_in = len(in_names)
        ins = tuple(self._ttype(t).port(k, k) if t else shared_port("dynamic", None, k, k)
                    for k, t in enumerate(in_names))
        outs = tuple(self._ttype(t).port(j, n_in + j, (t,) if t else ())
                     for j, t in enumerate(out_names))
        data = {ONNX_FLAG: "true", "onnx_op": node.op_type}
        if node.name:
            data["onnx_name"] = node.name
        data.update(extra or {})
        b.connect(lid, in_names)
        b.add(Layer(lid, lname, type_, version, data=data, inputs=ins, outputs=outs,
                    subgraphs=subs, ir_type=node.op_type))
        for j, t in enumerate(out_names):
            if t:
                b.source[t] = (lid, j)
        # Layer ids of nested bodies are their own; we need the placeholder id for the subgraphs.
        return lid

    def _loop(self, b: Builder, node) -> None:
        lname = self.control_name(node)
        body = self._attr_graph(b, node, "body")
        where = self._sub_where("loop", lname)
        ins = list(node.input) + [""] * max(0, 2 - len(node.input))
        n_carried = len(ins) - 2
        if len(body.input) != 2 + n_carried:
            raise ModelError(f"{where}the body has {len(body.input)} inputs; a Loop with "
                             f"{n_carried} carried values needs {2 + n_carried} (iteration_num, "
                             f"cond_in, then one per carried value).")
        n_scan = len(body.output) - 1 - n_carried
        if n_scan < 0:
            raise ModelError(f"{where}the body has {len(body.output)} outputs; it needs at least "
                             f"{1 + n_carried} (cond_out, then one per carried value).")
        if len(node.output) != n_carried + n_scan:
            raise ModelError(f"{where}the Loop node has {len(node.output)} outputs, but its body "
                             f"gives {n_carried} carried values and {n_scan} scan outputs.")
        forced: list[tuple] = [
            (body.input[0].name, TensorType("i64", ())),
            (body.input[1].name, TensorType("boolean", ())),
        ] + [(vi.name, tensor_type(vi.type) or self.types.get(ins[2 + k]), _kind(vi))
             for k, vi in enumerate(body.input[2:])]
        bb = self.builder(body, f"{lname}/body", top=False, where=where, inputs=forced)
        results = [bb.result(o.name, o.name) for o in body.output]
        graph = bb.graph()
        p = graph.parameters
        all_in = ins + bb.captures
        n_all = len(all_in)
        inputs = [InputMapping(-1, p[0], purpose="current_iteration"),
                  InputMapping(1, p[1], purpose="condition")]
        back = []
        for k in range(n_carried):
            inputs.append(InputMapping(2 + k, p[2 + k]))
            back.append(BackEdge(results[1 + k], p[2 + k]))
        for c in range(len(bb.captures)):
            inputs.append(InputMapping(len(ins) + c, p[2 + n_carried + c]))
        outputs = [OutputMapping(-1, results[0], purpose="execution_condition")]
        for k in range(n_carried):
            outputs.append(OutputMapping(n_all + k, results[1 + k]))
        for j in range(n_scan):
            outputs.append(OutputMapping(n_all + n_carried + j, results[1 + n_carried + j], axis=0))
        sub = SubGraph("body", graph, tuple(inputs), tuple(outputs), tuple(back))
        self._control_layer(b, node, lname, "Loop", "opset5", all_in, list(node.output), (sub,),
                            self._open_scans(body, 1 + n_carried))

    def _scan(self, b: Builder, node) -> None:
        lname = self.control_name(node)
        body = self._attr_graph(b, node, "body")
        opset = self.opsets.get("ai.onnx", 21)
        m = (self._attr_ints(node, "num_scan_inputs") or [None])[0]
        if m is None:
            raise ModelError(f"{b.where}Scan node '{lname}' has no num_scan_inputs attribute.")
        n_scan_max = len(node.input) - (1 if opset < 9 else 0)
        if not 1 <= m <= n_scan_max:
            raise ModelError(f"{b.where}Scan node '{lname}' has num_scan_inputs={m}, but "
                             f"it has {n_scan_max} input{'s' if n_scan_max != 1 else ''} to scan.")
        if opset < 9:
            self._scan8(b, node, lname, body, m)
            return
        ins = list(node.input)
        n_state = len(ins) - m
        k_out = len(node.output) - n_state
        in_axes = self._attr_ints(node, "scan_input_axes") or [0] * m
        in_dirs = self._attr_ints(node, "scan_input_directions") or [0] * m
        out_axes = self._attr_ints(node, "scan_output_axes") or [0] * k_out
        out_dirs = self._attr_ints(node, "scan_output_directions") or [0] * k_out
        sub, captures = self._scan_body(b, lname, body, n_state, m, in_axes, in_dirs, out_axes,
                                        out_dirs, len(ins), ins)
        self._control_layer(b, node, lname, "TensorIterator", "opset1", ins + captures,
                            list(node.output), (sub,), self._open_scans(body, n_state))

    def _open_scans(self, body, first: int) -> dict:
        """The body (``onnx_infer.BODY_PROTO``) of a Loop/Scan whose scan outputs (body outputs
        ``first`` on) have shapes the file leaves open, for the element shapes of a run of zero
        iterations (``onnx_infer``); nothing when every one is known."""
        open_ = []
        for j, out in enumerate(body.output[first:], first):
            t = self.types.get(out.name)
            if t is None or t.dims is None or any(d < 0 for d in t.dims):
                open_.append(j)
        if not open_:
            return {}
        return {BODY_PROTO: body.SerializeToString(), OPEN_OUTPUTS: tuple(open_),
                OPSETS: dict(self.opsets)}

    def _scan_body(self, b: Builder, lname: str, body, n_state: int, m: int, in_axes, in_dirs,
                   out_axes, out_dirs, n_ins: int, outer_ins: list[str]):
        """The TensorIterator body of a Scan; returns it with the names it captures."""
        where = self._sub_where("scan", lname)
        if len(body.input) != n_state + m:
            raise ModelError(f"{where}the body has {len(body.input)} inputs, but the Scan gives "
                             f"{n_state} state variables and {m} scan inputs.")
        k_out = len(body.output) - n_state
        if k_out < 0:
            raise ModelError(f"{where}the body has {len(body.output)} outputs, fewer than the "
                             f"{n_state} state variables.")
        for what, vals, n in (("scan_input_axes", in_axes, m), ("scan_input_directions", in_dirs, m),
                              ("scan_output_axes", out_axes, k_out),
                              ("scan_output_directions", out_dirs, k_out)):
            if len(vals) != n:
                raise ModelError(f"{where}{what} has {len(vals)} entries; it needs {n}.")
        forced = [(vi.name, tensor_type(vi.type)) for vi in body.input]
        bb = self.builder(body, f"{lname}/body", top=False, where=where, inputs=forced)
        results = [bb.result(o.name, o.name) for o in body.output]
        graph = bb.graph()
        p = graph.parameters
        n_all = n_ins + len(bb.captures)
        inputs, back, outputs = [], [], []
        for k in range(n_state):
            inputs.append(InputMapping(k, p[k]))
            back.append(BackEdge(results[k], p[k]))
        for j in range(m):
            fwd = in_dirs[j] == 0
            inputs.append(InputMapping(n_state + j, p[n_state + j], axis=in_axes[j],
                                       start=0 if fwd else -1, end=-1 if fwd else 0,
                                       stride=1 if fwd else -1, part_size=1))
        for c in range(len(bb.captures)):
            inputs.append(InputMapping(n_ins + c, p[n_state + m + c]))
        for k in range(n_state):
            outputs.append(OutputMapping(n_all + k, results[k]))
        for j in range(k_out):
            fwd = out_dirs[j] == 0
            outputs.append(OutputMapping(n_all + n_state + j, results[n_state + j],
                                         axis=out_axes[j], start=0 if fwd else -1,
                                         end=-1 if fwd else 0, stride=1 if fwd else -1))
        sub = SubGraph("body", graph, tuple(inputs), tuple(outputs), tuple(back))
        return sub, list(bb.captures)

    def _scan8(self, b: Builder, node, lname: str, body, m: int) -> None:
        """Scan-8: an outer TensorIterator over the batch (axis 0) around the Scan proper."""
        ins = list(node.input)
        if ins and ins[0]:
            raise ModelError(f"{b.where}Scan-8 node '{lname}' has a sequence_lens input; loopdbg "
                             f"supports Scan-8 only without it (every sequence at full length).")
        ins = ins[1:]
        n_state = len(ins) - m
        k_out = len(node.output) - n_state
        dirs = self._attr_ints(node, "directions") or [0] * m
        outer_name = f"{lname}_batch"
        ob = Builder(f"{outer_name}/body", False, self, self._sub_where("scan", outer_name))
        per_batch = []
        used: set[str] = set()
        for k, t in enumerate(ins):
            name = t if t not in used else f"{t}#{len(used)}"
            used.add(name)
            tt = self.types.get(t)
            if tt is not None and tt.dims:
                tt = TensorType(tt.element_type, tt.dims[1:])
            ob.parameter(name, tt)
            # The Parameter shows the input's name, but the body's names are the outer graph's
            # (ONNX scoping): a body reading ``t`` by name reads the whole outer tensor, not this
            # batch's slice of it, so the slice is known here by a name no ONNX graph can hold.
            key = f"\0{lname}:batch:{k}"
            ob.source[key] = ob.source.pop(name)
            if tt is not None:
                self.types[key] = tt
            per_batch.append(key)
        sub, captures = self._scan_body(ob, lname, body, n_state, m, [0] * m, dirs, [0] * k_out,
                                        [0] * k_out, len(per_batch), per_batch)
        for c in captures:               # the inner body's outer values come through the batch loop
            ob.lookup(c)
        inner_outs = [f"{lname}:{j}" for j in range(len(node.output))]
        for j, t in enumerate(node.output):
            tt = self.types.get(t)
            if tt is not None and tt.dims:
                self.types[inner_outs[j]] = TensorType(tt.element_type, tt.dims[1:])
        fake = _NodeView(node.op_type, node.name)
        self._control_layer(ob, fake, lname, "TensorIterator", "opset1", per_batch + captures,
                            inner_outs, (sub,), self._open_scans(body, n_state))
        results = [ob.result(t or f"output_{j}", inner_outs[j]) for j, t in enumerate(node.output)]
        graph = ob.graph()
        p = graph.parameters
        outer_ins = ins + list(ob.captures)
        n_all = len(outer_ins)
        inputs = [InputMapping(k, p[k], axis=0) for k in range(len(ins))]
        inputs += [InputMapping(len(ins) + c, p[len(ins) + c]) for c in range(len(ob.captures))]
        outputs = [OutputMapping(n_all + j, r, axis=0) for j, r in enumerate(results)]
        osub = SubGraph("body", graph, tuple(inputs), tuple(outputs), ())
        extra = {"onnx_scan8_batch": "true"}
        open_ = [j for j, t in enumerate(node.output)
                 if (tt := self.types.get(t)) is None or tt.dims is None or -1 in tt.dims]
        if open_:           # a batch of 0: the element shapes come from the inner body's
            extra.update({BODY_PROTO: body.SerializeToString(), OPEN_OUTPUTS: tuple(open_),
                          OPSETS: dict(self.opsets), SCAN8_STATES: n_state})
        self._control_layer(b, node, outer_name, "TensorIterator", "opset1", outer_ins,
                            list(node.output), (osub,), extra)

    def _if(self, b: Builder, node) -> None:
        lname = self.control_name(node)
        branches = []
        for attr, role in (("then_branch", "then_body"), ("else_branch", "else_body")):
            g = self._attr_graph(b, node, attr)
            where = f"{self.where}in the {attr} of if '{lname}', "
            if len(g.output) != len(node.output):
                raise ModelError(f"{where}the branch has {len(g.output)} outputs, the If node "
                                 f"{len(node.output)}.")
            bb = self.builder(g, f"{lname}/{role}", top=False, where=where, inputs=[])
            results = [bb.result(o.name, o.name) for o in g.output]
            branches.append((role, bb, results))
        captures: list[str] = []
        for _, bb, _ in branches:
            for c in bb.captures:
                if c not in captures:
                    captures.append(c)
        subs = []
        for role, bb, results in branches:
            graph = bb.graph()
            inputs = tuple(InputMapping(1 + captures.index(c), pid)
                           for c, pid in zip(bb.captures, graph.parameters))
            outputs = tuple(OutputMapping(j, r) for j, r in enumerate(results))
            subs.append(SubGraph(role, graph, inputs, outputs))
        self._control_layer(b, node, lname, "If", "opset8", [node.input[0]] + captures,
                            list(node.output), tuple(subs))


def _kind(vi) -> str | None:
    """A body input's kind when it is a sequence or an optional (``onnx_names.VALUE_KIND``)."""
    kind = value_kind(vi.type)[0] if vi.HasField("type") else None
    return kind if kind in (SEQUENCE, OPTIONAL, OPTIONAL_SEQUENCE) else None


class _NodeView:
    """The op type and name of a node (what ``_control_layer`` reads of one)."""

    __slots__ = ("op_type", "name")

    def __init__(self, op_type: str, name: str):
        self.op_type = op_type
        self.name = name
