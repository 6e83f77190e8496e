"""Random VALID ONNX models of Loop, Scan and If, for the semantic fuzzer
(test_fuzz_onnx_semantics.py).

``generate(seed)`` builds one model and its inputs from ``random.Random(seed)``, so a case is
named by its seed alone. What is drawn:

* Loop (opset 13 or 17): ``M`` present or absent (values -2..5, zero and negative ones too),
  ``cond`` present or absent (true or false), a body condition that is ``cond_in``, ``i < K`` or
  a constant true (only with ``M``, so every loop ends); carried tensors of six dtypes (f32,
  f64, f16, i32, i64, u32) and boolean flags, some that grow every iteration (a Concat: the
  carried shape changes); scan outputs of 0-d values, of the carried values, of
  ``iteration_num`` (passed straight through, or cast), of values read from the outer graph by
  name; a nested Loop reading the outer body's values by name; an If on the
  iteration's parity whose branches read outer values; a carried sequence (SequenceInsert) and a
  carried optional (opset 17: starts empty or not, the body keeps it, fills it or empties it).
* Scan (opset 9, 11 or 16): one or two scan inputs of rank 1-3 scanned on random axes (negative
  ones from opset 11) and directions, with lengths 0-4; state variables; scan outputs stacked on
  random axes and directions (a scanned element passed straight through, a product, a 0-d sum,
  the state, an If whose branches read the element by name, a Loop adding it by name); bodies
  that read an outer initializer or a scanned input (the whole tensor) by name. A Loop body may
  hold a Scan over an outer tensor whose body reads a value of the Loop body by name.
* Scan-8 (opset 8): a batch axis 0 (a batch of 0 too) and sequences on axis 1 (length 0 too),
  directions, states, a body that reads a Scan input by name (ONNX scoping: the whole tensor).

Body inputs and outputs declare their shapes fully, partly (``?`` dims) or not at all. Model
outputs are tensors only (a sequence is given as its length and its stacked tensors, an optional
as whether it holds a value), so every runtime's answer can be compared as arrays.

``Case.features`` records what the comparison's departure predicates ask about a model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto, helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
DTYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
          np.float16: TensorProto.FLOAT16, np.int32: TensorProto.INT32,
          np.int64: TensorProto.INT64, np.uint32: TensorProto.UINT32, np.bool_: B}
FLOATS = (np.float32, np.float64, np.float16)
NUMERIC = [t for t in DTYPES if t is not np.bool_]


@dataclass
class Case:
    seed: int
    kind: str
    model: object
    feeds: dict
    features: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return f"seed {self.seed} ({self.kind}: {', '.join(sorted(self.features))})"


class _Names:
    def __init__(self):
        self.n = 0

    def __call__(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"


def _vi(r: random.Random, name: str, elem: int, shape, *, open_ok: bool = True):
    """A value_info of ``shape`` declared fully, with ``?`` dims, or without a shape."""
    how = r.random() if open_ok else 0.0
    if how < 0.5 or shape is None:
        dims = shape
    elif how < 0.8:
        dims = [d if r.random() < 0.5 else f"d{k}" for k, d in enumerate(shape)]
    else:
        dims = None
    return helper.make_tensor_value_info(name, elem, dims)


def _const(name: str, value) -> object:
    value = np.asarray(value)
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_value", B if value.dtype == bool else DTYPES[value.dtype.type], value.shape,
        value.reshape(-1).tolist()))


def _array(r: random.Random, dtype, shape) -> np.ndarray:
    if dtype is np.bool_:
        return np.asarray(np.arange(int(np.prod(shape))).reshape(shape) % 2 == r.randint(0, 1))
    if dtype in FLOATS:
        return np.asarray(r.choice([-1.5, -0.5, 0.25, 1.0, 2.0]) +
                          np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 0.5,
                          dtype)
    return np.asarray((np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 5 + 1),
                      dtype)


def _sum(r: random.Random, nodes: list, names: _Names, value: str, dtype) -> str:
    """A node summing ``value`` to a 0-d value; mostly cast first where onnxruntime's CPU
    ReduceSum lacks the type (u32, f16), so that it answers."""
    if dtype in (np.uint32, np.float16) and r.random() < 0.8:
        cast = names("rc")
        nodes.append(helper.make_node("Cast", [value], [cast],
                                      to=I64 if dtype == np.uint32 else F))
        value = cast
    out = names("tot")
    nodes.append(helper.make_node("ReduceSum", [value], [out], keepdims=0))
    return out


def _update(r: random.Random, nodes: list, names: _Names, value: str, dtype, extra: str | None):
    """A node computing a value of ``value``'s shape and dtype from it (and ``extra``, a value
    of the same dtype that broadcasts onto it)."""
    k = names("k")
    nodes.append(_const(k, np.asarray(r.choice([1, 2, 3]), dtype)))
    out = names("u")
    op = r.choice(["Add", "Mul"] + (["Sub", "Max"] if dtype in FLOATS else []))
    nodes.append(helper.make_node(op, [value, k], [out]))
    if extra is not None:
        out2 = names("u")
        nodes.append(helper.make_node("Add", [out, extra], [out2]))
        out = out2
    return out


def generate(seed: int) -> Case:
    r = random.Random(seed)
    kind = r.choice(["loop", "loop", "loop", "scan", "scan", "scan8"])
    if kind == "loop":
        return _loop_case(r, seed)
    if kind == "scan":
        return _scan_case(r, seed)
    return _scan8_case(r, seed)


# -- Loop ----------------------------------------------------------------------------------------
def _loop_body(r: random.Random, names: _Names, feats: dict, *, opset: int, depth: int,
               has_m: bool, outer: list[tuple[str, object, tuple]], carried: list):
    """A Loop body: (graph, scan output (elem, shape or None) list). ``carried`` lists
    (dtype, shape or None when it grows, kind) per carried value; ``outer`` the tensors the
    body may read by name (name, dtype, shape)."""
    nodes, b_in, b_out, scans = [], [], [], []
    it, c_in = names("iter"), names("cond_in")
    b_in += [helper.make_tensor_value_info(it, I64, []), helper.make_tensor_value_info(c_in, B, [])]
    # the body condition: every loop without M must end
    how = r.choice(["cond_in", "less", "true"] if has_m else ["less", "less", "cond_in"])
    if how == "cond_in" and not has_m:
        how = "less"
    c_out = names("cond_out")
    if how == "cond_in":
        nodes.append(helper.make_node("Identity", [c_in], [c_out]))
    elif how == "less":
        k = names("K")
        nodes.append(_const(k, np.int64(r.randint(0, 4))))
        nodes.append(helper.make_node("Less", [it, k], [c_out]))
    else:
        nodes.append(_const(c_out, np.bool_(True)))
    feats["body_cond"] = how
    b_out.append(helper.make_tensor_value_info(c_out, B, []))
    carried_out, new_outer = [], []
    for dtype, shape, ckind in carried:
        v_in, v_out = names("v_in"), names("v_out")
        elem = DTYPES[dtype]
        if ckind == "tensor":
            b_in.append(_vi(r, v_in, elem, shape))
            same = [x for n, dt, s in outer if dt is dtype and s == shape for x in [n]]
            extra = r.choice(same) if same and r.random() < 0.5 else None
            if extra is not None:
                feats["outer_read"] = True
            u = _update(r, nodes, names, v_in, dtype, extra)
            nodes.append(helper.make_node("Identity", [u], [v_out]))
            b_out.append(_vi(r, v_out, elem, shape))
            new_outer.append((v_in, dtype, shape))
        elif ckind == "bool":                          # a flag flipped while i is odd
            b_in.append(_vi(r, v_in, B, shape))
            one, two, par, odd = names("one"), names("two"), names("par"), names("odd")
            nodes += [_const(one, np.int64(1)), _const(two, np.int64(2)),
                      helper.make_node("Mod", [it, two], [par]),
                      helper.make_node("Equal", [par, one], [odd]),
                      helper.make_node("Xor", [v_in, odd], [v_out])]
            b_out.append(_vi(r, v_out, B, shape))
            feats["carried_bool"] = True
        elif ckind == "grow":                          # the carried shape changes: [n] -> [n+1]
            b_in.append(helper.make_tensor_value_info(v_in, elem, [r.choice(["n", None])]))
            one = names("one")
            nodes.append(_const(one, np.asarray([1], dtype)))
            nodes.append(helper.make_node("Concat", [v_in, one], [v_out], axis=0))
            b_out.append(helper.make_tensor_value_info(v_out, elem, None))
            feats["shape_changes"] = True
        elif ckind == "sequence":
            tt = helper.make_tensor_type_proto(elem, list(shape))
            b_in.append(helper.make_value_info(v_in, helper.make_sequence_type_proto(tt)))
            val = names("sv")
            nodes.append(helper.make_node("Cast", [it], [names("ic")], to=elem))
            nodes.append(helper.make_node("Expand", [nodes[-1].output[0], _shape_const(
                nodes, names, shape)], [val]))
            nodes.append(helper.make_node("SequenceInsert", [v_in, val], [v_out]))
            b_out.append(helper.make_value_info(v_out, helper.make_sequence_type_proto(tt)))
            feats["carried_sequence"] = True
        else:                                          # an optional
            tt = helper.make_tensor_type_proto(elem, list(shape))
            b_in.append(helper.make_value_info(v_in, helper.make_optional_type_proto(tt)))
            what = r.choice(["keep", "fill", "empty"])
            if what == "keep":
                nodes.append(helper.make_node("Identity", [v_in], [v_out]))
            elif what == "fill":
                val = names("ov")
                nodes.append(helper.make_node("Cast", [it], [names("ic")], to=elem))
                nodes.append(helper.make_node("Expand", [nodes[-1].output[0], _shape_const(
                    nodes, names, shape)], [val]))
                nodes.append(helper.make_node("Optional", [val], [v_out]))
            else:
                nodes.append(helper.make_node("Optional", [], [v_out], type=tt))
                feats["optional_made_empty"] = True
            b_out.append(helper.make_value_info(v_out, helper.make_optional_type_proto(tt)))
            feats["carried_optional"] = True
        carried_out.append(v_out)
    visible = outer + new_outer
    # scan outputs (at least one when nothing is carried: a Loop has an output)
    for _ in range(r.randint(0 if carried else 1, 2)):
        what = r.choice(["iter", "iter_cast", "zero_d", "carried", "outer", "if", "nested",
                         "nested_scan"])
        if what == "nested_scan" and not any(s for _, _, s in visible if s):
            what = "nested"
        tensors = [(n, dt, s) for n, dt, s in visible if s is not None]
        if what in ("zero_d", "carried", "outer", "if") and not tensors:
            what = "iter_cast"
        if what == "nested" and (depth >= 1 or not tensors):
            what = "iter_cast"
        if what == "iter":                             # iteration_num passed straight through
            scans.append((it, I64, []))
            feats["scan_of_iteration_num"] = True
        elif what == "iter_cast":
            out = names("ii")
            nodes.append(helper.make_node("Cast", [it], [out], to=TensorProto.FLOAT))
            scans.append((out, F, []))
        elif what == "zero_d":
            n, dt, s = r.choice(tensors)
            out = names("sum")
            nodes.append(helper.make_node("ReduceSum", [n], [out], keepdims=0))
            scans.append((out, DTYPES[dt], []))
            feats["scan_of_0d"] = True
        elif what == "carried":
            n, dt, s = r.choice(tensors)
            out = names("cv")
            nodes.append(helper.make_node("Identity", [n], [out]))
            scans.append((out, DTYPES[dt], list(s)))
        elif what == "outer":
            n, dt, s = r.choice(tensors)
            out = names("ov")
            nodes.append(helper.make_node("Neg" if dt in FLOATS else "Identity", [n], [out]))
            scans.append((out, DTYPES[dt], list(s)))
            feats["outer_read"] = True
        elif what == "if":
            n, dt, s = r.choice(tensors)
            two, zero, par, even = names("two"), names("zero"), names("par"), names("even")
            nodes += [_const(two, np.int64(2)), _const(zero, np.int64(0)),
                      helper.make_node("Mod", [it, two], [par]),
                      helper.make_node("Equal", [par, zero], [even])]
            t_out, e_out, out = names("then"), names("else"), names("ifv")
            then_g = helper.make_graph([helper.make_node("Identity", [n], [t_out])], names("tg"),
                                       [], [_vi(r, t_out, DTYPES[dt], list(s))])
            e_nodes: list = []
            e_val = _update(r, e_nodes, names, n, dt, None)
            e_nodes.append(helper.make_node("Identity", [e_val], [e_out]))
            else_g = helper.make_graph(e_nodes, names("eg"), [],
                                       [_vi(r, e_out, DTYPES[dt], list(s))])
            nodes.append(helper.make_node("If", [even], [out], then_branch=then_g,
                                          else_branch=else_g))
            scans.append((out, DTYPES[dt], list(s)))
            feats["if_in_loop"] = True
        elif what == "nested_scan":                    # a Scan over an outer tensor's axis 0
            n, dt, s = r.choice([t for t in visible if t[2]])
            zero, first, out = names("zi"), names("first"), names("scanned")
            nodes += [_const(zero, np.int64(0)),
                      helper.make_node("Gather", [n, zero], [first], axis=0)]
            sb_nodes: list = []
            s_in, e, s_out, y = names("ns_in"), names("ne"), names("ns_out"), names("ny")
            sb_nodes.append(helper.make_node("Add", [s_in, e], [s_out]))
            sb_nodes.append(helper.make_node("Mul", [e, first], [y]))   # reads `first` by name
            elem = DTYPES[dt]
            sbody = helper.make_graph(sb_nodes, names("sbody"),
                                      [_vi(r, s_in, elem, list(s[1:])), _vi(r, e, elem, list(s[1:]))],
                                      [_vi(r, s_out, elem, list(s[1:])), _vi(r, y, elem, list(s[1:]))])
            ys = names("nys")
            nodes.append(helper.make_node("Scan", [first, n], [out, ys], body=sbody,
                                          num_scan_inputs=1,
                                          scan_input_directions=[r.randint(0, 1)]))
            scans.append((out, elem, list(s[1:])))
            feats["scan_in_loop"] = True
        else:                                          # a nested Loop reading outer values
            n, dt, s = r.choice(tensors)
            m2, one = names("m2"), names("one_i")
            nodes += [_const(one, np.int64(r.choice([0, 1, 2]))),
                      helper.make_node("Add", [it, one], [m2])]
            inner_has_cond = r.random() < 0.3
            inner, inner_scans = _loop_body(r, names, feats, opset=opset, depth=depth + 1,
                                            has_m=True, outer=visible,
                                            carried=[(dt, tuple(s), "tensor")])
            ins = [m2, names("ic") if inner_has_cond else "", n]
            if inner_has_cond:
                nodes.append(_const(ins[1], np.bool_(True)))
            outs = [names("nested_fin")] + [names("nested_scan") for _ in inner_scans]
            nodes.append(helper.make_node("Loop", ins, outs, body=inner))
            out = names("nf")
            nodes.append(helper.make_node("Identity", [outs[0]], [out]))
            scans.append((out, DTYPES[dt], list(s)))
            feats["nested_loop"] = True
    for name, elem, shape in scans:
        b_out.append(_vi(r, name, elem, shape) if name != it else
                     helper.make_tensor_value_info(name, elem, shape))
    graph = helper.make_graph(nodes, names("body"), b_in, b_out)
    return graph, scans


def _shape_const(nodes: list, names: _Names, shape) -> str:
    n = names("shp")
    nodes.append(_const(n, np.asarray(list(shape), np.int64)))
    return n


def _loop_case(r: random.Random, seed: int) -> Case:
    names = _Names()
    opset = r.choice([13, 17, 17])
    feats: dict = {}
    has_m, has_cond = r.random() < 0.75, r.random() < 0.4
    top_nodes, inputs, feeds, outer = [], [], {}, []
    loop_in = ["", ""]
    if has_m:
        m_val = r.choice([-2, -1, 0, 0, 1, 2, 3, 5])
        inputs.append(helper.make_tensor_value_info("M", I64, []))
        feeds["M"] = np.array(m_val, np.int64)
        loop_in[0] = "M"
        feats["zero_trip_M"] = m_val <= 0
    if has_cond:
        c = r.random() < 0.8
        inputs.append(helper.make_tensor_value_info("cond", B, []))
        feeds["cond"] = np.array(c)
        loop_in[1] = "cond"
        feats["cond_false"] = not c
    if not has_cond:
        feats["cond_omitted"] = True
    # outer values the body may read by name
    for _ in range(r.randint(0, 2)):
        dt = r.choice(NUMERIC)
        shape = tuple(r.randint(1, 3) for _ in range(r.randint(0, 2)))
        name = names("x")
        inputs.append(_vi(r, name, DTYPES[dt], list(shape), open_ok=False))
        feeds[name] = _array(r, dt, shape)
        outer.append((name, dt, shape))
    carried = []
    kinds = ["tensor", "tensor", "grow", "bool"] + (["sequence", "optional"] if opset >= 17
                                                     else [])
    for _ in range(r.randint(0, 3)):
        ck = r.choice(kinds)
        dt = np.bool_ if ck == "bool" else r.choice(NUMERIC)
        shape = (r.randint(1, 3),) if ck == "grow" else \
            tuple(r.randint(1, 3) for _ in range(r.randint(0, 2)))
        carried.append((dt, shape, ck))
    body, scans = _loop_body(r, names, feats, opset=opset, depth=0, has_m=has_m, outer=outer,
                             carried=[(dt, None if ck == "grow" else s, ck)
                                      for dt, s, ck in carried])
    outputs = []
    for k, (dt, shape, ck) in enumerate(carried):
        v0 = names("v0")
        elem = DTYPES[dt]
        if ck in ("tensor", "grow", "bool"):
            inputs.append(_vi(r, v0, elem, list(shape), open_ok=False))
            feeds[v0] = _array(r, dt, shape)
        elif ck == "sequence":
            x0 = names("s0")
            inputs.append(_vi(r, x0, elem, list(shape), open_ok=False))
            feeds[x0] = _array(r, dt, shape)
            top_nodes.append(helper.make_node("SequenceConstruct", [x0], [v0]))
        else:
            tt = helper.make_tensor_type_proto(elem, list(shape))
            if r.random() < 0.5:
                top_nodes.append(helper.make_node("Optional", [], [v0], type=tt))
                feats["optional_starts_empty"] = True
            else:
                x0 = names("o0")
                inputs.append(_vi(r, x0, elem, list(shape), open_ok=False))
                feeds[x0] = _array(r, dt, shape)
                top_nodes.append(helper.make_node("Optional", [x0], [v0]))
        loop_in.append(v0)
    fins = [names("fin") for _ in carried]
    scan_outs = [names("scan") for _ in scans]
    top_nodes.append(helper.make_node("Loop", loop_in, fins + scan_outs, body=body))
    feats["unchanged_if_no_iteration"] = []      # (output, the input it equals then)
    for (dt, shape, ck), fin, v0 in zip(carried, fins, loop_in[2:]):
        elem = DTYPES[dt]
        if ck in ("tensor", "grow", "bool"):
            outputs.append(helper.make_tensor_value_info(fin, elem, None))
            feats["unchanged_if_no_iteration"].append((fin, v0))
        elif ck == "sequence":
            n, stacked = names("seq_len"), names("seq_all")
            top_nodes += [helper.make_node("SequenceLength", [fin], [n]),
                          helper.make_node("ConcatFromSequence", [fin], [stacked], axis=0,
                                           new_axis=1)]
            outputs += [helper.make_tensor_value_info(n, I64, []),
                        helper.make_tensor_value_info(stacked, elem, None)]
        else:
            has = names("has")
            top_nodes.append(helper.make_node("OptionalHasElement", [fin], [has]))
            outputs.append(helper.make_tensor_value_info(has, B, []))
    for (_, elem, _), so in zip(scans, scan_outs):
        outputs.append(helper.make_tensor_value_info(so, elem, None))
    feats["scans"] = [(so, name) for so, (name, _, _) in zip(scan_outs, scans)]
    feats["scan_outputs"] = scan_outs
    feats["iteration_num"] = body.input[0].name
    model = _model(top_nodes, inputs, outputs, opset)
    return Case(seed, "loop", model, feeds, feats)


# -- Scan ----------------------------------------------------------------------------------------
def _scan_body(r: random.Random, names: _Names, feats: dict, states: list, elems: list,
               outer: list, *, allow_outer_scan_read: bool):
    """A Scan body: states (dtype, shape), scanned elements (dtype, shape); returns the graph
    and the scan outputs (name, elem, shape, passthrough?)."""
    nodes, b_in, b_out, scans = [], [], [], []
    s_names = [names("s_in") for _ in states]
    e_names = [names("e") for _ in elems]
    for n, (dt, s) in zip(s_names, states):
        b_in.append(_vi(r, n, DTYPES[dt], list(s)))
    for n, (dt, s) in zip(e_names, elems):
        b_in.append(_vi(r, n, DTYPES[dt], list(s)))
    for n, (dt, s) in zip(s_names, states):
        parts = []
        for en, (edt, es) in zip(e_names, elems):
            if r.random() < 0.7:
                tot, cast = _sum(r, nodes, names, en, edt), names("tc")
                nodes.append(helper.make_node("Cast", [tot], [cast], to=DTYPES[dt]))
                parts.append(cast)
        if outer and r.random() < 0.5:                # read an outer tensor by name, whole
            on, odt, _ = r.choice(outer)
            tot, cast = _sum(r, nodes, names, on, odt), names("oc")
            nodes.append(helper.make_node("Cast", [tot], [cast], to=DTYPES[dt]))
            parts.append(cast)
            feats["outer_read"] = True
            if allow_outer_scan_read and on.startswith("xs"):
                feats["reads_scan_input_by_name"] = True
        cur = n
        for p in parts:
            nxt = names("acc")
            nodes.append(helper.make_node("Add", [cur, p], [nxt]))
            cur = nxt
        out = names("s_out")
        nodes.append(helper.make_node("Identity", [cur], [out]))
        b_out.append(_vi(r, out, DTYPES[dt], list(s)))
    for _ in range(r.randint(1, 2)):
        what = r.choice(["pass", "mul", "zero_d", "if", "loop"] + (["state"] if states else []))
        j = r.randrange(len(elems))
        dt, s = elems[j]
        if what == "pass":                       # a scanned element passed straight through
            if any(name == e_names[j] for name, *_ in scans):
                what = "mul"
            else:
                scans.append((e_names[j], DTYPES[dt], list(s), True))
                feats["scan_output_is_body_input"] = True
                continue
        if what == "mul":
            out = _update(r, nodes, names, e_names[j], dt, None)
            scans.append((out, DTYPES[dt], list(s), False))
        elif what == "zero_d":
            out = names("z")
            nodes.append(helper.make_node("ReduceSum", [e_names[j]], [out], keepdims=0))
            scans.append((out, DTYPES[dt], [], False))
            feats["scan_of_0d"] = True
        elif what == "if":                       # branches read the element by name
            tot, totf = _sum(r, nodes, names, e_names[j], dt), names("itf")
            zero, pos, out = names("iz"), names("pos"), names("iv")
            nodes += [helper.make_node("Cast", [tot], [totf], to=F),     # Greater-7: floats
                      _const(zero, np.float32(2)),
                      helper.make_node("Greater", [totf, zero], [pos])]
            t_out, e_out = names("st"), names("se")
            then_g = helper.make_graph([helper.make_node("Identity", [e_names[j]], [t_out])],
                                       names("stg"), [], [_vi(r, t_out, DTYPES[dt], list(s))])
            e_nodes: list = []
            e_val = _update(r, e_nodes, names, e_names[j], dt, None)
            e_nodes.append(helper.make_node("Identity", [e_val], [e_out]))
            else_g = helper.make_graph(e_nodes, names("seg"), [],
                                       [_vi(r, e_out, DTYPES[dt], list(s))])
            nodes.append(helper.make_node("If", [pos], [out], then_branch=then_g,
                                          else_branch=else_g))
            scans.append((out, DTYPES[dt], list(s), False))
            feats["if_in_scan"] = True
        elif what == "loop":                     # a Loop adding the element twice, by name
            two, acc0, fin = names("two"), names("acc0"), names("lfin")
            li, lc, la, lc_out, la_out = (names("li"), names("lc"), names("la"), names("lco"),
                                          names("lao"))
            lb_nodes = [helper.make_node("Identity", [lc], [lc_out]),
                        helper.make_node("Add", [la, e_names[j]], [la_out])]
            lbody = helper.make_graph(lb_nodes, names("lbody"),
                                      [helper.make_tensor_value_info(li, I64, []),
                                       helper.make_tensor_value_info(lc, B, []),
                                       _vi(r, la, DTYPES[dt], list(s))],
                                      [helper.make_tensor_value_info(lc_out, B, []),
                                       _vi(r, la_out, DTYPES[dt], list(s))])
            nodes += [_const(two, np.int64(2)),
                      helper.make_node("Identity", [e_names[j]], [acc0]),
                      helper.make_node("Loop", [two, "", acc0], [fin], body=lbody)]
            scans.append((fin, DTYPES[dt], list(s), False))
            feats["loop_in_scan"] = True
        else:
            k = r.randrange(len(states))
            out = names("sv")
            nodes.append(helper.make_node("Identity", [b_out[k].name], [out]))
            scans.append((out, DTYPES[states[k][0]], list(states[k][1]), False))
    for name, elem, shape, passthrough in scans:
        b_out.append(helper.make_tensor_value_info(name, elem, shape) if passthrough
                     else _vi(r, name, elem, shape))
    return helper.make_graph(nodes, names("body"), b_in, b_out), scans


def _scan_case(r: random.Random, seed: int) -> Case:
    names = _Names()
    opset = r.choice([9, 11, 16])
    feats: dict = {}
    length = r.choice([0, 1, 2, 3, 4])
    feats["zero_length"] = length == 0
    inputs, feeds, outer, top_nodes = [], {}, [], []
    if r.random() < 0.4:                               # an outer initializer read by name
        w = np.asarray([1.5, -2.0], np.float32)
        outer.append(("w", np.float32, (2,)))
        top_nodes.append(_const("w", w))
    states = [(r.choice(NUMERIC), tuple(r.randint(1, 3) for _ in range(r.randint(0, 2))))
              for _ in range(r.randint(0, 2))]
    m = r.randint(1, 2)
    elems, axes, dirs, x_names = [], [], [], []
    for _ in range(m):
        dt = r.choice(NUMERIC)
        rank = r.randint(1, 3)
        full = [r.randint(1, 3) for _ in range(rank)]
        axis = r.randrange(rank)
        full[axis] = length
        elem = tuple(d for k, d in enumerate(full) if k != axis)
        elems.append((dt, elem))
        axes.append(axis - rank if opset >= 11 and r.random() < 0.3 else axis)
        dirs.append(r.randint(0, 1))
        xn = names("xs")
        x_names.append(xn)
        inputs.append(_vi(r, xn, DTYPES[dt], full, open_ok=False))
        feeds[xn] = _array(r, dt, tuple(full))
        outer.append((xn, dt, tuple(full)))
    s_names = []
    for dt, s in states:
        sn = names("s0")
        s_names.append(sn)
        inputs.append(_vi(r, sn, DTYPES[dt], list(s), open_ok=False))
        feeds[sn] = _array(r, dt, s)
    body, scans = _scan_body(r, names, feats, states, elems, outer, allow_outer_scan_read=True)
    out_axes, out_dirs = [], []
    for _, _, shape, _ in scans:
        rank = len(shape) + 1
        a = r.randrange(rank)
        out_axes.append(a - rank if opset >= 11 and r.random() < 0.3 else a)
        out_dirs.append(r.randint(0, 1))
    attrs = {"num_scan_inputs": m}
    if any(axes) or r.random() < 0.3:
        attrs["scan_input_axes"] = axes
    if any(dirs) or r.random() < 0.3:
        attrs["scan_input_directions"] = dirs
    if any(out_axes) or r.random() < 0.3:
        attrs["scan_output_axes"] = out_axes
    if any(out_dirs) or r.random() < 0.3:
        attrs["scan_output_directions"] = out_dirs
    feats["input_axes"], feats["output_axes"] = axes, out_axes
    feats["input_directions"], feats["output_directions"] = dirs, out_dirs
    outs, outputs = _scan_outputs(names, feats, states, scans)
    feats["unchanged_if_no_iteration"] = list(zip(outs, s_names))
    top_nodes.append(helper.make_node("Scan", s_names + x_names, outs, body=body, **attrs))
    return Case(seed, "scan", _model(top_nodes, inputs, outputs, opset), feeds, feats)


def _scan_outputs(names: _Names, feats: dict, states: list, scans: list):
    """A Scan's output names (final states, then scan outputs) and the model's outputs."""
    fins = [names("sfin") for _ in states]
    scan_outs = [names("ys") for _ in scans]
    outputs = [helper.make_tensor_value_info(f, DTYPES[dt], None)
               for f, (dt, _) in zip(fins, states)]
    outputs += [helper.make_tensor_value_info(so, elem, None)
                for so, (_, elem, _, _) in zip(scan_outs, scans)]
    feats["passthrough_outputs"] = [so for so, sc in zip(scan_outs, scans) if sc[3]]
    feats["state_outputs"] = fins
    feats["scan_outputs"] = scan_outs
    return fins + scan_outs, outputs


def _scan8_case(r: random.Random, seed: int) -> Case:
    names = _Names()
    feats: dict = {}
    batch, length = r.choice([0, 1, 1, 2, 2]), r.choice([0, 1, 2, 3])
    feats["zero_batch"] = batch == 0
    feats["zero_length"] = length == 0
    inputs, feeds, outer = [], {}, []
    states = [(r.choice(NUMERIC), tuple(r.randint(1, 2) for _ in range(r.randint(0, 1))))
              for _ in range(r.randint(0, 2))]
    m = r.randint(1, 2)
    elems, dirs, x_names = [], [], []
    for _ in range(m):
        dt = r.choice(NUMERIC)
        elem = tuple(r.randint(1, 3) for _ in range(r.randint(0, 2)))
        full = (batch, length) + elem
        xn = names("xs")
        x_names.append(xn)
        inputs.append(_vi(r, xn, DTYPES[dt], list(full), open_ok=False))
        feeds[xn] = _array(r, dt, full)
        outer.append((xn, dt, full))
        elems.append((dt, elem))
        dirs.append(r.randint(0, 1))
    s_names = []
    for dt, s in states:
        sn = names("s0")
        s_names.append(sn)
        full = (batch,) + s
        inputs.append(_vi(r, sn, DTYPES[dt], list(full), open_ok=False))
        feeds[sn] = _array(r, dt, full)
        outer.append((sn, dt, full))
    body, scans = _scan_body(r, names, feats, states, elems, outer, allow_outer_scan_read=True)
    attrs = {"num_scan_inputs": m}
    if any(dirs) or r.random() < 0.3:
        attrs["directions"] = dirs
        feats["input_directions"] = dirs
    outs, outputs = _scan_outputs(names, feats, states, scans)
    feats["unchanged_if_no_iteration"] = list(zip(outs, s_names))
    node = helper.make_node("Scan", [""] + s_names + x_names, outs, body=body, **attrs)
    return Case(seed, "scan8", _model([node], inputs, outputs, 8), feeds, feats)


def _model(nodes, inputs, outputs, opset: int):
    graph = helper.make_graph(nodes, "fuzz", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
