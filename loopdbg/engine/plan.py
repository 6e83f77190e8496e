"""Execution plans: a graph turned, once, into a Python function that only calls kernels.

Walking a graph node by node on every iteration costs more than the numpy work of a small loop
body, so each graph is compiled: the topological order, the kernels (with their attributes parsed)
and the value slots are resolved once, and a function is generated whose body is one line per
step (a layer that is not a Parameter, Result or Constant)::

    def run(ctx, p0, p1):
        v0_0 = k0(p0, c0)  # Add 'x_plus_1'
        v1_0, v1_1 = k1(v0_0)  # Split 'halves'
        v2_0, = (yield from k2(ctx, v1_0))  # Loop 'inner'   (its events pass)
        v3_0 = k3(ctx, v2_0)  # Assign 'state'               (a kernel of run state)
        return (v0_0, v1_1, )

Every name in the generated source is made from a position (parameter ``k``, constant ``k``,
step ``k``), never from the model file, so no id or name in a file can change the code; each
step's line ends with a comment naming its layer, the name through ``repr``. Every source is
compiled under a file name of its own registered with ``linecache`` (``engine.codegen``) and kept
in ``GraphPlan.generated``: tracebacks show its lines and ``loopdbg explain --code`` prints it. One
template makes all three functions of a plan: ``run`` (the Result values), ``run_all`` (those and
every value, for --trace-all and the node view) and ``run_events`` (the whole event stream of a
top graph). A graph that holds a loop compiles to generator functions, so the events of nested
loops flow up to the consumer; ``drain`` runs one to its end when the events are not wanted.
A kernel marked ``needs_context`` (ReadValue, Assign: the run's variables live in the
``RunContext``) is called with the context first; Assign layers run although no Result reads
them. When a kernel raises, ``locate`` maps the traceback line back to the layer.
``interpret`` runs the same plan one layer at a time, for stepping node by node.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import cached_property
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from loopdbg.engine import hoist
from loopdbg.engine.codegen import compile_source, layer_kind
from loopdbg.engine.elide import MIN_BYTES, candidates
from loopdbg.engine.graph_order import edges_to, structure, topological_order  # noqa: F401
from loopdbg.engine.interp import COMPILE_LIMIT, interpreted, step_of, stepwise
from loopdbg.engine.interp import drain  # noqa: F401 - plan.drain, as its callers know it
from loopdbg.errors import LoopdbgError, ModelError, ResourceLimitError, RunError
from loopdbg.ir.model import Graph, Layer
from loopdbg.ops.budget import BudgetExceeded, out_of_memory
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.sizes import CHECKED_ELEMENTS, broadcast_check, broadcast_tail

CONTROL_FLOW = ("Loop", "TensorIterator", "If")
_IDENTITY = frozenset({"Identity", "onnx.Identity"})      # kernels that give their input itself


# The one template of the generated functions, by name: (parameters after ctx, lines before the
# steps, indent of the steps, lines after them); {results} and {values} are tuples of locals.
_TEMPLATE = {
    "run": ("", (), "    ", ("    return ({results})",)),
    "run_all": ("", (), "    ", ("    return ({results}), ({values})",)),
    # The top graph as the whole event stream: the notices said before the run, the run, and
    # finish(outputs) last, in one generator. A consumer's next then resumes this frame and the
    # loop's only, not a wrapper generator around run as well (one frame less per event).
    "run_events": (", finish, fail", ("    yield from ctx.notices", "    try:"), "        ",
                   ("    except LoopdbgError:", "        raise",
                    "    except Exception as exc:", "        raise fail(exc) from None",
                    "    yield finish(({results}))")),
}


class Step:
    """One layer of the plan: ``outs = fn(*ins)``; ``nested`` marks a control-flow layer. Not
    changed once made (nothing assigns its fields)."""

    # slots, set in __init__ as plain attributes: a body has thousands of steps, and a frozen
    # dataclass's instance dict costs twice as much to make
    __slots__ = ("layer", "fn", "ins", "outs", "nested", "with_ctx")

    layer: Layer
    fn: Callable
    ins: tuple[str | None, ...]     # local names of the inputs (None: unconnected optional input)
    outs: tuple[str, ...]
    nested: bool
    with_ctx: bool                  # a kernel of run state (Assign): called as fn(ctx, *ins)

    def __init__(self, layer: Layer, fn: Callable, ins: tuple[str | None, ...],
                 outs: tuple[str, ...], nested: bool, with_ctx: bool = False):
        self.layer = layer
        self.fn = fn
        self.ins = ins
        self.outs = outs
        self.nested = nested
        self.with_ctx = with_ctx

    def __repr__(self) -> str:
        return f"Step({self.layer.describe()}, ins={self.ins}, outs={self.outs})"


class GraphPlan:
    """A compiled graph. ``run(ctx, *parameter_values)`` returns the Result values in Result order.

    ``run`` is a plain function, or a generator function (``is_generator``) when the graph holds
    a Loop, TensorIterator or If; then drive it with ``yield from`` (or ``drain`` it).
    """

    def __init__(self, graph: Graph, path: str, where: str,
                 nested_factory: Callable[..., Callable] | None = None,
                 kernel_factory: Callable[..., tuple[Callable, int]] = make_kernel,
                 outer: Mapping[int, np.ndarray] | None = None):
        self.graph = graph
        self.kernel_factory = kernel_factory
        self.path = path
        self.where = where
        self.param_ids = graph.parameters
        self.result_ids = graph.results
        self.param_names = tuple(graph.layers[i].name for i in graph.parameters)
        self.result_names = tuple(graph.layers[i].name for i in graph.results)
        self.consts: dict[str, np.ndarray] = {}
        # values known now that are not this plan's constants: outputs of Identity steps of
        # known values (the top graph folds nothing; an exporter reads weights through them)
        self.aliases: dict[str, np.ndarray] = {}
        self.outer = outer or {}            # Parameter id -> the outer constant that feeds it
        self.steps: list[Step] = []
        self.notices: list[str] = []        # what kernels say of themselves (``kernel.notice``)
        self.folded_bytes = 0               # of the values folded at plan time (``hoist``)
        self._build(nested_factory)
        self.is_generator = any(s.nested for s in self.steps)
        self._line_maps: dict[str, dict[int, int]] = {}     # file name -> {line: step index}
        self.generated: dict[str, str] = {}   # file name -> the source compiled under it
        self._ns: dict[str, Any] = dict(self.consts)
        self._ns["LoopdbgError"] = LoopdbgError
        self._ns["_S_broadcast_check"] = broadcast_check
        self._ns["_S_CHECKED"] = CHECKED_ELEMENTS
        self._ns.update(zip([f"k{k}" for k in range(len(self.steps))],
                            [step.fn for step in self.steps]))
        self._functions: dict[str, Callable] = {}

    # -- building -----------------------------------------------------------------------------
    def _build(self, nested_factory) -> None:
        g = self.graph
        local: dict[tuple[int, int], str] = {}
        # layer id -> the edges that end there; the layers in run order (once per graph)
        incoming, order, sources = structure(g, self.where)
        for k, pid in enumerate(self.param_ids):
            value = self.outer.get(pid)
            if value is None:
                local[(pid, 0)] = f"p{k}"
            else:                       # fed by an outer constant: read as one (see ``known``)
                local[(pid, 0)] = name = f"c{len(self.consts)}"
                self.consts[name] = value
        # a loop body's decompressions of weights are folded into one buffer (``_fold``)
        self._weights, self._layout = None, (order, sources)
        try:
            with hoist.quiet() if self.path else nullcontext():  # (once: ``_fold``'s kernels)
                self._add_steps(order, local, incoming, sources, nested_factory)
        finally:
            del self._weights, self._layout
        self.result_locals = []
        for rid in self.result_ids:
            src = None                  # (as ``Graph.producer``: the last edge to port 0)
            for e in incoming.get(rid, ()):
                if e.to_port == 0:
                    src = (e.from_layer, e.from_port)
            if src is None or src not in local:
                raise ModelError(f"{self.where}{g.layers[rid].describe()} has no input.")
            self.result_locals.append(local[src])

    def _add_steps(self, order, local, incoming, sources, nested_factory) -> None:
        """The constants and steps of the layers ``order`` lists (``local``: the local name of
        each (layer id, port) made so far; ``incoming``, ``sources``: ``graph_order.structure``)."""
        layers, consts, steps, where = self.graph.layers, self.consts, self.steps, self.where
        const_of, make, input_names = consts.get, self.kernel_factory, self._input_names
        local_get = local.get
        body = bool(self.path)              # (only a loop body's steps are folded)
        for lid in order:
            layer = layers[lid]
            kind = layer.type
            if kind == "Constant":
                if layer.value is None:
                    raise ModelError(f"{where}{layer.describe()} has no value.")
                value = np.asarray(layer.value)
                value.setflags(write=False)      # (half the time of flags.writeable)
                name = f"c{len(consts)}"
                consts[name] = value
                local[(lid, 0)] = name
                continue
            if kind == "Parameter" or kind == "Result":
                continue
            srcs = sources.get(lid, ())
            if srcs:                    # an edge to each port, in port order (most layers)
                ins = tuple(map(local_get, srcs))
                if None in ins:         # (a producer's output that does not exist: it says so)
                    ins = input_names(layer, local, incoming[lid])
            elif srcs is None:
                ins = input_names(layer, local, incoming[lid])
            else:
                ins = ()
            if kind in CONTROL_FLOW:
                if nested_factory is None:
                    raise ModelError(f"{where}{layer.describe()} cannot be nested here.")
                fn = nested_factory(layer, self.path, self.graph, tuple(map(self.known, ins)))
                n_out = len(layer.outputs)
                nested = True
            else:
                values = tuple(map(const_of, ins))        # (None: None)
                fn, n_out = make(layer, where, values)
                nested = False
                said = getattr(fn, "notice", None)
                if said:                    # e.g. a random op: how loopdbg seeds it
                    self.notices.append(f"{where}{layer.describe()}: {said}")
                if body:
                    for a, v in zip(ins, values):   # every input a constant (or unconnected)
                        if v is None and a is not None:
                            break
                    else:
                        fn = self._fold(lid, fn, values, n_out, local)
            k = len(steps)
            outs = (f"v{k}_0",) if n_out <= 1 else tuple([f"v{k}_{j}" for j in range(n_out)])
            for j, name in enumerate(outs):
                local.setdefault((lid, j), name)
            if kind in _IDENTITY and len(ins) == 1 and not nested:
                value = self.known(ins[0])
                if value is not None:
                    self.aliases[outs[0]] = value
            steps.append(Step(layer, fn, ins, outs, nested,
                              bool(getattr(fn, "needs_context", False))))

    def known(self, name: str | None) -> np.ndarray | None:
        """The value of local ``name`` if it is known at plan time: a constant (of the file, an
        outer constant feeding a Parameter, a folded value) or an Identity of one. A Loop, Scan
        or If reading such values gets them (``nested_factory``'s last argument), and its body
        reads the Parameters they feed as constants (``outer``): an ONNX exporter's weights are
        initializers of the main graph, behind Identity nodes, read by the loop body from the
        outer scope. Kernels are then chosen for the constant (MatMul's for a weight) and steps
        on constants alone folded (``engine.hoist``); the values are the same, since what feeds
        such a Parameter at run time is that constant (read-only), whatever the iteration."""
        value = self.consts.get(name)
        return self.aliases.get(name) if value is None else value

    def _fold(self, lid: int, fn, values: tuple, n_out: int, local) -> Callable:
        """A loop body's step on constants alone (``values``), computed now (``engine.hoist``):
        its outputs become constants (``local`` names them so), its kernel a ``hoist.Folded``;
        ``fn`` itself when it is not folded. The body's big weight decompressions are written
        into one buffer (``hoist.weight_buffer``), made at the first one folded for it and the
        others after it, its bytes counted as folded from then on."""
        if self._weights is None and values and type(values[0]) is np.ndarray and \
                values[0].size >= hoist.POOLED_FROM and self.graph.layers[lid].type == "Convert":
            order, sources = self._layout
            self._weights = hoist.weight_buffer(self.graph.layers, order, sources,
                                                hoist.bound() - self.folded_bytes)
            self.folded_bytes += sum([w.nbytes for w in self._weights.values()])
        out = self._weights.get(lid) if self._weights else None
        folded = hoist.fold_into(fn, values, out) if out is not None else None   # (counted)
        if folded is None:
            room = hoist.bound() - self.folded_bytes
            folded = hoist.fold(fn, values, n_out, room, quieted=True)
            if folded is None:
                return fn
            self.folded_bytes += sum([v.nbytes for v in folded])
        for j, value in enumerate(folded):  # its value now; a constant for the steps after
            local[(lid, j)] = name = f"c{len(self.consts)}"
            self.consts[name] = value
        return hoist.Folded(folded[0] if n_out <= 1 else folded)

    def _input_names(self, layer: Layer, local, edges) -> tuple[str | None, ...]:
        if not edges:
            return ()
        names: list[str | None] = []
        for j, e in enumerate(edges):   # (most layers: an edge to each port, in port order)
            name = local.get((e.from_layer, e.from_port)) if e.to_port == j else None
            if name is None:
                break
            names.append(name)
        else:
            return tuple(names)
        names = [None] * (max([e.to_port for e in edges]) + 1)
        for e in edges:
            name = names[e.to_port] = local.get((e.from_layer, e.from_port))
            if name is None:
                src = self.graph.layers.get(e.from_layer)
                what = src.describe() if src else f"layer {e.from_layer}"
                raise ModelError(f"{self.where}{layer.describe()} reads output {e.from_port} "
                                 f"of {what}, which does not exist.")
        return tuple(names)

    # -- compiling ----------------------------------------------------------------------------
    @property
    def run(self) -> Callable:
        """``run(ctx, *parameter_values)``: the Result values (see the class docstring)."""
        return self._functions.get("run") or self._make("run")

    @property
    def run_all(self) -> Callable:
        """``run_all(ctx, *parameter_values)``: (Result values, every value)."""
        return self._functions.get("run_all") or self._make("run_all")

    @property
    def run_events(self) -> Callable:
        """``run_events(ctx, finish, fail, *parameter_values)``: the event stream of a run of
        this graph as the top one."""
        return self._functions.get("run_events") or self._make("run_events")

    def _make(self, kind: str) -> Callable:
        """Compile ``kind`` on first use (a loop's body is inlined into its loop's code, the top
        graph needs only run_events); a big graph is interpreted (``interp``)."""
        if len(self.steps) > COMPILE_LIMIT:
            fn = interpreted(self, kind)
        else:
            fn, = self._compile((kind,))
        self._functions[kind] = fn
        return fn

    def source(self, kind: str) -> tuple[str, dict[int, int]]:
        """The generated source of ``kind`` (run, run_all, run_events) and its lines' steps."""
        extra, before, indent, after = _TEMPLATE[kind]
        params = "".join(f", p{k}" for k in range(len(self.param_ids)))
        lines = [f"def {kind}(ctx{extra}{params}):", *before]
        line_to_step: dict[int, int] = {}
        for line, k in self.step_lines(indent):
            line_to_step[len(lines) + 1] = k
            lines.append(line)
        if not self.steps:
            lines.append(f"{indent}pass")
        values = [f"p{k}" for k in range(len(self.param_ids))]
        values += [o for s in self.steps for o in s.outs]
        fill = {"results": "".join(f"{r}, " for r in self.result_locals),
                "values": "".join(f"{v}, " for v in values)}
        lines += [line.format(**fill) for line in after]
        return "\n".join(lines) + "\n", line_to_step

    def step_lines(self, indent: str, elide: bool = False, guard: bool = True,
                   once: frozenset[int] = frozenset(), once_if: str | None = None,
                   folded: bool = True, memo: dict | None = None) -> list[tuple[str, int]]:
        """One line per step, ``outs = kK(ins)``, with its step index (``loopcode`` inlines a
        body's lines into the code of its loop; the names are this plan's). With ``elide``, a
        step that may write into a big temporary input does so when ``_E_fits`` (see
        ``engine.elide``) says it computes the same. With ``guard``, a numpy ufunc of two or more
        inputs is preceded by the budget's check of its broadcast output when their shapes
        differ and the product of their sizes could reach the budget's SMALL
        (``ops.sizes.broadcast_check``; a comparison of shapes, and of sizes, otherwise: with a
        constant, of the other input's last dimensions with the constant's shape, less its
        leading 1s (``sizes.broadcast_tail``); of two
        values, whether one ends in the other's shape: the check would pass both at once); a
        steady loop, whose shapes repeat, leaves it out of the iterations after the first.
        The steps ``once`` names (``hoist.invariant_steps``) run only when the expression
        ``once_if`` holds, and are left out when it is None; nothing writes into their values.
        Without ``folded``, the steps folded at plan time (``hoist.Folded``) get no line: their
        readers and the Results read the constants they became, so only ``run_all``'s every
        value names their outputs. The steps ``memo`` names (``engine.memo``) give their memo's
        value while their inputs repeat, and nothing writes into their values."""
        memo = memo or {}
        into = candidates(self.steps, self.result_locals, once | memo.keys()) if elide else {}
        out = []
        consts = self.consts
        ufunc, folded_type = np.ufunc, hoist.Folded
        kinds: dict[str, str] = {}          # layer type -> as the comments write it
        for k, step in enumerate(self.steps):
            fn, ins = step.fn, step.ins
            if not folded and type(fn) is folded_type:
                continue
            when = run = ""
            if k in once:
                if once_if is None:
                    continue
                when, run = f"{once_if} and ", f"if {once_if}: "
            unconnected = None in ins
            args = ", ".join([a if a is not None else "None" for a in ins]) if unconnected \
                else ", ".join(ins)
            if guard and type(fn) is ufunc and fn.nin >= 2 and not unconnected:
                # a constant of one element never makes a broadcast bigger than its other inputs
                grow = [a for a in dict.fromkeys(ins) if not (a in consts and consts[a].size <= 1)]
                if len(grow) > 1:
                    out.append((f"{indent}if {when}{_broadcast_guard(grow, consts, self._ns)}: "
                                f"_S_broadcast_check({args})", k))
            if step.nested:
                target, call = ", ".join(step.outs) + ",", f"(yield from k{k}(ctx, {args}))"
            else:
                outs = step.outs
                target = outs[0] if len(outs) == 1 else ", ".join(outs) + ","
                if k in memo:                   # (never a kernel of run state: ``memo``)
                    call = memo[k].expression(k, args)
                else:
                    call = f"k{k}(ctx, {args})" if step.with_ctx else f"k{k}({args})"
                if k in into:
                    t = ins[into[k]]
                    others = "".join([f", {a}" for a in ins if a != t])
                    call = (f"k{k}({args}, out={t}) if {t}.nbytes >= {MIN_BYTES} and "
                            f"_E_fits(k{k}, {t}{others}) else {call}")
            layer = step.layer
            kind = kinds.get(layer.type)
            if kind is None:
                kind = kinds[layer.type] = layer_kind(layer.type)
            out.append((f"{indent}{run}{target} = {call}  # {kind} {layer.name!r}", k))
        return out

    def compile_with(self, source: str, line_map: dict[int, int], names: dict,
                     function: str) -> Callable:
        """Compile ``source`` (which uses this plan's names: its steps' lines) in this plan's
        namespace plus ``names``, under a file name of its own whose lines map to steps as
        ``line_map`` says (so ``locate`` finds a failing layer there too); return ``function``."""
        code, filename = compile_source(source, "loop code", self)
        ns = dict(self._ns)
        ns.update(names)
        self._line_maps[filename] = line_map
        self.generated[filename] = source
        exec(code, ns)  # noqa: S102 - names by position
        return ns.pop(function)     # (not left in its own globals: no cycle, see ``_compile``)

    def _compile(self, kinds: tuple[str, ...]) -> list[Callable]:
        """Compile the functions ``kinds`` into one code object with its own file name."""
        line_map: dict[int, int] = {}
        parts: list[str] = []
        offset = 0
        for kind in kinds:
            src, lines = self.source(kind)
            line_map.update((offset + line, k) for line, k in lines.items())
            parts.append(src)
            offset += src.count("\n")
        source = "".join(parts)
        code, filename = compile_source(source, "plan", self)
        self._line_maps[filename] = line_map
        self.generated[filename] = source
        exec(code, self._ns)  # noqa: S102 - names by position
        # taken out of the namespace they were defined in, which is their globals: a function
        # left there would make a reference cycle of it, and the whole engine (its plans,
        # kernels, folded weights) would wait for the garbage collector's next full pass when
        # dropped, which then walks all of it (~10 ms for a decoder's), instead of going at once
        return [self._ns.pop(kind) for kind in kinds]

    @cached_property
    def all_value_names(self) -> list[str]:
        """Names of what ``run_all`` returns: Parameters, then each layer's outputs (made when
        first asked: a run that records no node never needs them)."""
        names = list(self.param_names)
        for s in self.steps:
            for j in range(len(s.outs)):
                names.append(s.layer.name if j == 0 else f"{s.layer.name}:{j}")
        return names

    # -- errors and stepping ----------------------------------------------------------------
    def locate(self, exc: BaseException) -> Layer | None:
        """The layer whose kernel raised ``exc`` (innermost frame of this plan's code)."""
        tb = exc.__traceback__
        found = None
        while tb is not None:
            lines = self._line_maps.get(tb.tb_frame.f_code.co_filename)
            k = lines.get(tb.tb_lineno) if lines is not None else step_of(self, tb.tb_frame)
            if k is not None:
                found = self.steps[k].layer
            tb = tb.tb_next
        return found

    def failure(self, exc: BaseException, prefix: str, whole: str, **where) -> RunError:
        """The one-sentence error for a kernel that raised ``exc`` while this plan ran."""
        layer = self.locate(exc)
        at = layer.describe() if layer is not None else whole
        text = str(exc).strip()
        reason = text.splitlines()[0].rstrip(".") if text else type(exc).__name__
        kind = ResourceLimitError if isinstance(exc, MemoryError) else RunError
        if isinstance(exc, MemoryError) and not isinstance(exc, BudgetExceeded):
            reason = out_of_memory(reason)
        return kind(f"{prefix}{at} failed: {reason}.", layer=layer.name if layer else None,
                    **where)

    def interpret(self, ctx, param_values) -> Iterator[tuple[Layer, tuple]]:
        """Run the plan one layer at a time, yielding ``(layer, outputs)`` after each.

        Nested loops are run to their end inside one step (their events are dropped here).
        The steps are the interpreter's (``interp.stepwise``): the kernels and checks a run has.
        """
        return stepwise(self, ctx, param_values)

    def result_values(self, env_all: tuple) -> dict[str, Any]:
        return dict(zip(self.all_value_names, env_all))


def _broadcast_guard(grow: list[str], consts, ns: dict) -> str:
    """The condition under which ``step_lines`` checks a ufunc's broadcast output with the
    budget, for its inputs ``grow`` (two or more, none a constant of one element); the names
    it uses are put in the plan's namespace ``ns``."""
    if len(grow) == 2:                  # (the usual: the same text, without two joins)
        a, b = grow
        differ, product = f"{b}.shape != {a}.shape", f"{a}.size * {b}.size"
    else:                               # (the output has at most the product of the sizes)
        first, *others = grow
        differ = " or ".join([f"{a}.shape != {first}.shape" for a in others])
        product = " * ".join([f"{a}.size" for a in grow])
    fixed = [a for a in grow if a in consts]
    if len(grow) == 2 and len(fixed) == 1:      # x and a constant (a bias, a scale): no bigger
        c = fixed[0]                            # than x when x ends in the constant's shape
        x = grow[1] if c == grow[0] else grow[0]
        differ = f"{x}.shape[-{c}.ndim:] != {c}.shape"
        tail = broadcast_tail(consts[c].shape)  # (or in it less its leading 1s, a converter's
        if tail is not None:                    # (1, 1, N) bias: names, the code holds no
            t = f"_S_tail_{c}"                  # numbers)
            ns[t], ns[t + "_cut"] = tail, slice(-len(tail), None)
            differ = f"{x}.shape[{t}_cut] != {t}"
    big = f"{product} > _S_CHECKED"
    if len(grow) == 2 and not fixed:    # two values: one ending in the other's shape (a bias,
        a, b = grow                     # a mask) passes the check at once
        big += f" and {a}.shape[-{b}.ndim:] != {b}.shape and {b}.shape[-{a}.ndim:] != {a}.shape"
    return f"({differ}) and {big}"
