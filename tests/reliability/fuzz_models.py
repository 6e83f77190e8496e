"""Random Loop / TensorIterator models for the differential fuzzer (test_fuzz_differential.py).

A ``Case`` is drawn by hypothesis as plain data, then built with loopdbg's ``GraphBuilder``: the
same data always gives the same model and inputs, so a failing example shrinks and replays.
Everything drawn here stays inside the configurations where OpenVINO's CPU plugin follows the
specification; the restriction is written out in test_fuzz_differential.py's docstring and every
clause of it is enforced by a comment-marked line below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from loopdbg.builder import GraphBuilder

F32 = np.float32
UNARY = ("Tanh", "Sigmoid", "Negative", "Abs", "none")
BINARY = ("Add", "Subtract", "Maximum", "Minimum", "Multiply")


@dataclass
class Slice:
    layout: str            # "rows": [N*p, F] sliced on axis 0; "cols": [F, N*p] on axis 1;
                           # "mid": [1, N*p, F] on axis 1
    part: int              # part_size (== |stride|)
    backward: bool         # start=-1, end=0, stride=-p (the only backward form CPU shares)

    @property
    def axis(self) -> int:
        return 0 if self.layout == "rows" else 1


@dataclass
class Inner:
    kind: str              # "Loop" or "TensorIterator" (never a TI directly inside a TI)
    trip: int              # Loop: constant trip count 0..3 (TI: iterations over a [trip, F] tile)
    scan: bool             # also concatenate the inner state (and sum it back)
    until: int | None = None   # Loop: trip -1 and a body condition iter < until instead


@dataclass
class Case:
    kind: str                      # "Loop" or "TensorIterator"
    width: int                     # F, the feature width of every state
    iterations: int                # slices per sliced input (N); Loop: an upper bound of the run
    slices: list[Slice]
    states: list[tuple[str, str, float]]   # per merged f32 state: (binary op, unary op, decay)
    invariant: bool
    trip: int                      # Loop: -1 (no limit) or 0..N
    trip_param: str | None         # Loop: trip count fed as a model input ("i32"/"i64"), or a Const
    exec_cond: bool                # Loop: the execution condition's value
    exec_param: tuple | None       # Loop: ... fed as a model input of this shape ([] or [1]);
                                   # None: a Const true (a Const false is excluded)
    cond: str                      # Loop: "none", "iter", "counter_i", "counter_f"
    limit: int                     # Loop: the bound the condition compares with
    cur: tuple[str, tuple] | None  # Loop: current_iteration (i32/i64, [] or [1]), or none
    outputs: list[tuple]           # ("last", k) | ("scan", k, axis, reverse)
                                   # | ("slice", j, reverse) | ("derived",)
    inner: Inner | None
    seed: int = 0
    zero_possible: bool = field(default=False)


@st.composite
def cases(draw, max_depth: int = 1) -> Case:
    kind = draw(st.sampled_from(["Loop", "TensorIterator"]))
    width = draw(st.integers(1, 3))
    n = draw(st.integers(1, 4))
    n_slices = draw(st.integers(1 if kind == "TensorIterator" else 0, 2))
    slices = [Slice(draw(st.sampled_from(["rows", "cols", "mid"])),
                    draw(st.sampled_from([1, 1, 2])), draw(st.booleans()))
              for _ in range(n_slices)]
    states = [(draw(st.sampled_from(BINARY)), draw(st.sampled_from(UNARY)),
               draw(st.sampled_from([0.5, 1.0, -0.5, 0.0])))
              for _ in range(draw(st.integers(1, 2)))]
    invariant = draw(st.booleans())
    trip, trip_param, exec_cond, exec_param = -1, None, True, None
    cond, limit, cur = "none", 0, None
    if kind == "Loop":
        cond = draw(st.sampled_from(["none", "iter", "counter_i", "counter_f"]))
        bound = n if slices else 6            # never more iterations than slices
        if cond == "none":
            trip = draw(st.integers(0, bound))      # a for-loop: bounded by its trip count
        else:
            trip = draw(st.sampled_from([-1, draw(st.integers(0, bound))]))
            # iter: iterations 0..limit run (the false one counts) -> limit+1 <= bound
            # counters start at 0 and count c+1 < limit -> max(limit, 1) iterations <= bound
            limit = draw(st.integers(0, bound - 1)) if cond == "iter" else \
                draw(st.integers(1, bound))
        trip_param = draw(st.sampled_from([None, "i64", "i32"]))
        exec_param = draw(st.sampled_from([None, (), (1,)]))
        exec_cond = draw(st.booleans()) if exec_param is not None else True   # Const false: no
        if cond == "iter" or draw(st.booleans()):
            cur = (draw(st.sampled_from(["i32", "i64"])), draw(st.sampled_from([(), (1,)])))
    zero = kind == "Loop" and (trip == 0 or not exec_cond)
    outputs: list[tuple] = [("last", k) for k in range(len(states))
                            if draw(st.booleans()) or k == 0]
    for k in range(len(states)):
        if draw(st.booleans()):
            outputs.append(("scan", k, draw(st.sampled_from([0, 1])),
                            kind == "TensorIterator" and draw(st.booleans())))
    for j, s in enumerate(slices):
        if draw(st.booleans()) and (kind == "TensorIterator" or s.part == 1):
            outputs.append(("slice", j, kind == "TensorIterator" and draw(st.booleans())))
    if not zero and draw(st.booleans()):
        outputs.append(("derived",))          # a last value no back edge feeds: never zero-trip
    if (kind == "Loop" and not exec_cond and trip > 0 and trip_param is None and cond == "none"
            and any(o[0] != "last" for o in outputs)):
        # CPU sizes a concatenation from a trip count it can fold (Const trip, constant body
        # condition) and keeps that size when a false execution condition runs nothing
        trip_param = "i64"
    inner = None
    if max_depth > 0 and draw(st.booleans()):
        inner_kind = "Loop" if kind == "TensorIterator" else draw(
            st.sampled_from(["Loop", "TensorIterator"]))
        inner = Inner(inner_kind, draw(st.integers(0 if inner_kind == "Loop" else 1, 3)),
                      draw(st.booleans()))
        if inner_kind == "Loop" and draw(st.booleans()):
            inner.until = draw(st.integers(0, 2))
    seed = draw(st.integers(0, 2**16))
    return Case(kind, width, n, slices, states, invariant, trip, trip_param, exec_cond,
                exec_param, cond, limit, cur, outputs, inner, seed, zero)


def build(case: Case):
    """The model and its inputs (a dict by input name) for ``case``."""
    rng = np.random.default_rng(case.seed)
    F, N = case.width, case.iterations
    b = GraphBuilder("fuzz")
    inputs: dict[str, np.ndarray] = {}

    def param(name, value):
        inputs[name] = value
        return b.parameter(name, _et(value), list(value.shape))

    xs = []
    for j, s in enumerate(case.slices):
        length = N * s.part
        shape = {"rows": (length, F), "cols": (F, length), "mid": (1, length, F)}[s.layout]
        xs.append(param(f"x{j}", rng.uniform(-2, 2, shape).astype(F32)))
    h0 = [param(f"h{k}", rng.uniform(-1, 1, (1, F)).astype(F32)) for k in range(len(case.states))]
    w = param("w", rng.uniform(-1, 1, (1, F)).astype(F32)) if case.invariant else None

    if case.kind == "Loop":
        trip = (param("trip", np.array(case.trip, _np(case.trip_param)))
                if case.trip_param else case.trip)
        cond = (param("exec", np.full(case.exec_param, case.exec_cond))
                if case.exec_param is not None else case.exec_cond)
        loop = b.loop("loop", trip=trip, cond=cond)
    else:
        loop = b.tensor_iterator("loop")
    body = loop.body

    pieces = []
    for j, (s, x) in enumerate(zip(case.slices, xs)):
        axis = s.axis
        if s.backward:
            piece = loop.sliced_input(x, f"x{j}_t", axis=axis, start=-1, end=0, stride=-s.part,
                                      part_size=s.part)
        else:
            piece = loop.sliced_input(x, f"x{j}_t", axis=axis, start=0, end=-1, stride=s.part,
                                      part_size=s.part)
        pieces.append(piece)
    hs = [loop.merged_input(h, f"h{k}_t") for k, h in enumerate(h0)]
    w_t = loop.invariant_input(w, "w_t") if w is not None else None
    it = None
    if case.cur is not None:
        it = loop.current_iteration("iter", case.cur[0], case.cur[1])

    # the per-iteration drive: the slices folded to [1, F]
    drive = None
    for j, (s, p) in enumerate(zip(case.slices, pieces)):
        axis = s.axis
        red = body.op("ReduceSum", [p, np.array([axis], np.int64)], keep_dims=True)
        flat = body.op("Reshape", [red, np.array([1, F], np.int64)], special_zero=False)
        drive = flat if drive is None else body.op("Add", [drive, flat])
    if it is not None:
        itf = body.op("Convert", [it], destination_type="f32")
        itf = body.op("Reshape", [itf, np.array([1, 1], np.int64)], special_zero=False)
        step = body.op("Multiply", [itf, np.full((1, F), 0.25, F32)])
        drive = step if drive is None else body.op("Add", [drive, step])
    if w_t is not None:
        drive = w_t if drive is None else body.op("Multiply", [drive, w_t])

    news = []
    for k, ((binop, unop, decay), h) in enumerate(zip(case.states, hs)):
        v = body.op("Multiply", [h, np.full((1, F), decay, F32)])
        if drive is not None:
            v = body.op(binop, [v, drive])
        if unop != "none":
            v = body.op(unop, [v])
        news.append(v)

    if case.inner is not None:
        news[0] = _inner(body, case.inner, news[0], F)
    for h, v in zip(hs, news):
        loop.back_edge(v, h)

    if case.kind == "Loop":
        if case.cond == "iter":
            lim = np.array(case.limit, _np(case.cur[0])).reshape(case.cur[1])
            loop.condition(body.op("Less", [it, lim]))
        elif case.cond in ("counter_i", "counter_f"):
            dt = np.int32 if case.cond == "counter_i" else F32
            c0 = param("c0", np.zeros((1,), dt))
            c = loop.merged_input(c0, "c")
            c1 = body.op("Add", [c, np.ones((1,), dt)])
            loop.back_edge(c1, c)
            loop.condition(body.op("Less", [c1, np.array([case.limit], dt)]))

    for n, out in enumerate(case.outputs):
        name = f"out{n}"
        if out[0] == "last":
            b.result(loop.output_last(news[out[1]], name=name), name)
        elif out[0] == "scan":
            _, k, axis, reverse = out
            v = news[k] if axis == 0 else body.op("Reshape", [news[k], np.array([F, 1], np.int64)],
                                                  special_zero=False)
            kw = dict(start=-1, end=0, stride=-1) if reverse else {}
            b.result(loop.output_concat(v, axis=axis, name=name, **kw), name)
        elif out[0] == "slice":
            _, j, reverse = out
            s = case.slices[j]
            axis = s.axis
            v = body.op("Multiply", [pieces[j], np.float32(2.0)])
            kw = dict(start=-1, end=0, stride=-s.part) if reverse else dict(stride=s.part)
            b.result(loop.output_concat(v, axis=axis, name=name, part_size=s.part, **kw), name)
        else:
            d = body.op("Add", [news[0], np.full((1, F), 1.5, F32)])
            b.result(loop.output_last(d, name=name), name)
    return b.build(), inputs


def _inner(body: GraphBuilder, inner: Inner, v, F: int):
    """A nested loop over the outer body's value ``v``; returns the value fed on."""
    if inner.kind == "Loop":
        loop = body.loop("inner", trip=-1 if inner.until is not None else inner.trip, cond=True)
        g = loop.merged_input(v, "g")
        g1 = loop.body.op("Add", [loop.body.op("Multiply", [g, np.full((1, F), 0.5, F32)]),
                                  np.full((1, F), 0.125, F32)])
        loop.back_edge(g1, g)
        if inner.until is not None:
            k = loop.current_iteration("k", "i64", ())
            loop.condition(loop.body.op("Less", [k, np.int64(inner.until)]))
    else:
        tile = body.op("Tile", [v, np.array([inner.trip, 1], np.int64)])
        loop = body.tensor_iterator("inner")
        piece = loop.sliced_input(tile, "t", axis=0)
        g = loop.merged_input(v, "g")
        g1 = loop.body.op("Add", [loop.body.op("Multiply", [g, np.full((1, F), 0.5, F32)]),
                                  piece])
        loop.back_edge(g1, g)
    out = loop.output_last(g1)
    if inner.scan:
        seq = loop.output_concat(g1, axis=0)
        out = body.op("Add", [out, body.op("ReduceSum", [seq, np.array([0], np.int64)],
                                           keep_dims=True)])
    return out


def _et(value: np.ndarray) -> str:
    return {"float32": "f32", "int64": "i64", "int32": "i32", "bool": "boolean"}[str(value.dtype)]


def _np(et: str):
    return {"i32": np.int32, "i64": np.int64}[et]
