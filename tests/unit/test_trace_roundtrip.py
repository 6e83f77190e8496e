"""Record runs to trace files and read every frame back: it must equal what the engine showed live."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from loopdbg.engine import Engine, IterationDone, LoopFinished, LoopStarted, Notice, RunFinished
from loopdbg.engine.events import LoopRun
from loopdbg.engine.inputs import load_npz
from loopdbg.builder import GraphBuilder
from loopdbg.ir.load import read_model
from loopdbg.trace import format as fmt
from loopdbg.trace import (TraceError, TraceReader, TraceWriter, inputs_sha256, record,
                           recording)

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
MODELS = sorted(p.name for p in CORPUS.iterdir() if (p / "model.xml").exists())
NESTED = ROOT / "tests" / "data" / "nested_loop"


def scalar_while(iters: int):
    """x += 1 while i < limit: a scalar loop with a back edge and no scan output."""
    b = GraphBuilder("while_trace")
    x0 = b.parameter("x0", "f32", [1])
    limit = b.parameter("limit", "i64", [1])
    loop = b.loop("count", trip=-1, cond=True)
    x = loop.merged_input(x0, "x")
    lim = loop.invariant_input(limit, "lim")
    it = loop.current_iteration("i", "i64", (1,))
    body = loop.body
    x2 = body.op("Add", [x, np.array([1.0], np.float32)], name="x_next")
    keep = body.op("Less", [it, lim], name="keep_going")
    loop.back_edge(x2, x)
    loop.condition(keep)
    b.result(loop.output_last(x2, name="x_final"))
    return b.build(), {"x0": np.zeros(1, np.float32), "limit": np.array([iters - 1], np.int64)}


def nested_while(outer_trips: int, inner_trips: int):
    """An outer loop whose body runs an inner loop: y += 1, inner_trips times per outer pass."""
    b = GraphBuilder("nest")
    x0 = b.parameter("x0", "f32", [1])
    outer = b.loop("outer", trip=outer_trips, cond=True)
    x = outer.merged_input(x0, "x")
    inner = outer.body.loop("inner", trip=inner_trips, cond=True)
    y = inner.merged_input(x, "y")
    y2 = inner.body.op("Add", [y, np.array([1.0], np.float32)], name="y_next")
    inner.back_edge(y2, y)
    inner.condition(inner.body.const("t", np.array(True)))
    y_final = inner.output_last(y2, name="y_final")
    outer.back_edge(y_final, x)
    outer.condition(outer.body.const("t", np.array(True)))
    b.result(outer.output_last(y_final, name="x_final"))
    return b.build(), {"x0": np.zeros(1, np.float32)}


def run_and_record(model, inputs, path, trace_all=False):
    engine = Engine(model)
    live = list(engine.run(inputs, record_nodes=trace_all))
    final = record(engine.run(inputs, record_nodes=trace_all), path, model=model, inputs=inputs,
                   options={"trace_all": trace_all})
    return live, final


def assert_same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def assert_frame_is_event(f, e: IterationDone, trace_all: bool):
    assert (f.path, f.iteration, f.outer) == (e.path, e.iteration, e.outer)
    assert (f.trip_count, f.cond, f.continues) == (e.trip_count, bool(e.cond), e.continues)
    for group in ("back_edges", "scan_slices", "sliced_inputs"):
        live, rec = getattr(e, group), getattr(f, group)
        assert list(live) == list(rec), group
        for k in live:
            assert_same(live[k], rec[k])
    if trace_all:
        nodes = {k: v for k, v in e.nodes.items() if v is not None}
        assert list(nodes) == list(f.nodes)
        for k in nodes:
            assert_same(nodes[k], f.nodes[k])
    else:
        assert f.nodes is None


@pytest.mark.parametrize("trace_all", [False, True], ids=["plain", "trace_all"])
@pytest.mark.parametrize("name", MODELS)
def test_corpus_round_trip(tmp_path, name, trace_all):
    model = read_model(CORPUS / name / "model.xml")
    inputs = load_npz(CORPUS / name / "inputs.npz")
    path = tmp_path / "run.ldt"
    live, final = run_and_record(model, inputs, path, trace_all)
    with TraceReader(path) as t:
        assert not t.truncated and t.status == "complete" and not t.problems
        assert t.verify() == []
        iterations = [e for e in live if isinstance(e, IterationDone)]
        for e in iterations:
            f = t.frame(e.path, e.iteration, e.outer)
            assert_frame_is_event(f, e, trace_all)
            body_in = t.body_inputs(e.path, e.iteration, e.outer)       # what replay needs
            assert list(body_in) == list(e.inputs)
            for k, v in e.inputs.items():
                assert_same(v, body_in[k])
        # frames() in order gives the same stream
        in_order = [f for p in t.paths() for f in t.frames(p)]
        assert [(f.path, f.iteration) for f in in_order] == \
            [(e.path, e.iteration) for e in iterations]
        # loops: iteration counts and why they stopped
        finished = [e for e in live if isinstance(e, LoopFinished)]
        assert [(r.path, r.outer, r.iterations, r.reason) for r in t.loops()] == \
            [(e.path, e.outer, e.iterations, e.reason) for e in finished]
        starts = [e for e in live if isinstance(e, LoopStarted)]
        for s in starts:
            meta = t.loop_start(s.path, s.outer)
            assert (meta["trip_count"], meta["kind"]) == (s.trip_count, s.kind)
        outs = t.outputs()
        assert list(outs) == list(final.outputs)
        for k, v in final.outputs.items():
            assert_same(v, outs[k])
        for k, v in t.model_inputs().items():
            assert_same(inputs[k], v)
        assert [n["message"] for n in t.notices()] == \
            [e.message for e in live if isinstance(e, Notice)]
        h = t.header
        assert h["inputs"]["sha256"] == inputs_sha256(inputs)
        xml = (CORPUS / name / "model.xml").read_bytes()
        assert h["model"]["xml_sha256"] == hashlib.sha256(xml).hexdigest()
        assert h["model"]["bin_sha256"] == hashlib.sha256(
            (CORPUS / name / "model.bin").read_bytes()).hexdigest()
        assert h["options"]["trace_all"] is trace_all
        assert t.end["status"] == "complete"


@pytest.mark.parametrize("trips", [(4, 700), (300, 3)], ids=["long_inner", "short_inner"])
def test_nested_loops_built_round_trip(tmp_path, trips):
    """Long inner runs are batched, the outer loop's frames come between them; short inner
    runs share compiled code. Every frame must still read back as the engine showed it."""
    model, inputs = nested_while(*trips)
    live, _ = run_and_record(model, inputs, tmp_path / "n.ldt")
    with TraceReader(tmp_path / "n.ldt") as t:
        assert t.verify() == []
        its = [e for e in live if isinstance(e, IterationDone)]
        for e in its:
            assert_frame_is_event(t.frame(e.path, e.iteration, e.outer), e, False)
        records = [r.meta for r in t.records() if r.kind == 4]      # file order = event order
        assert [(f.path, f.outer, f.iteration) for f in records] == \
            [(e.path, e.outer, e.iteration) for e in its]
        assert t.loop_start("outer/inner", (trips[0] - 1,))["schema"]["back_edges"] == \
            [["y", "y_next/result"]]


def test_nested_loops_are_keyed_by_outer_iterations(tmp_path):
    model = read_model(NESTED / "model.xml")
    inputs = load_npz(NESTED / "inputs.npz")
    live, _ = run_and_record(model, inputs, tmp_path / "n.ldt")
    with TraceReader(tmp_path / "n.ldt") as t:
        its = [e for e in live if isinstance(e, IterationDone)]
        assert any(e.outer for e in its)
        for e in its:
            assert_frame_is_event(t.frame(e.path, e.iteration, e.outer), e, False)
            for k, v in e.inputs.items():
                assert_same(v, t.body_inputs(e.path, e.iteration, e.outer)[k])
        inner = next(e.path for e in its if e.outer)
        assert [f.outer + (f.iteration,) for f in t.frames(inner)] == \
            [e.outer + (e.iteration,) for e in its if e.path == inner]
        assert t.executions(inner) == list(dict.fromkeys(e.outer for e in its if e.path == inner))
        with pytest.raises(TraceError, match="outer iterations"):
            t.frame(inner, 0, ())
        with pytest.raises(TraceError, match="no iteration 99"):
            t.frame(inner, 99, t.executions(inner)[0])
        with pytest.raises(TraceError, match="no loop 'nope'"):
            t.frame("nope", 0)


# -- synthetic events: every kind of array ------------------------------------------------------
def fake_spec(params, results, back, concat=(), sliced=()):
    return SimpleNamespace(param_names=tuple(params), result_names=tuple(results),
                           back_edge_view=tuple(back), concat_view=tuple(concat),
                           sliced_view=tuple(sliced), roles={}, current_iteration=None,
                           condition_param=None)


ODD_ARRAYS = {
    "big": np.arange(70_000, dtype=np.float32),                  # past the no-copy threshold
    "strided": np.arange(40, dtype=np.int16).reshape(5, 8)[:, ::3],
    "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "scalar0d": np.array(3.5, np.float64),
    "npscalar": np.int64(7),
    "bool": np.array([True, False, True]),
    "u64": np.array([2**64 - 1], np.uint64),
    "f16": np.array([1.5, -2.25], np.float16),
    "c64": np.array([1 + 2j], np.complex64),
    "empty": np.zeros((0, 3), np.float32),
    "big_strided": np.arange(200_000, dtype=np.float64)[::2],
    "bigendian": np.array([1, 2, 3], ">i4"),
}


def test_every_kind_of_array_round_trips(tmp_path):
    names = list(ODD_ARRAYS)
    spec = fake_spec(names, names, [(n, k) for k, n in enumerate(names)])
    events = [LoopStarted("odd", 1, "odd", "Loop", 3, True, (), spec)]
    for i in range(3):
        outs = tuple(ODD_ARRAYS[n] if not isinstance(ODD_ARRAYS[n], np.ndarray) or i == 0
                     else ODD_ARRAYS[n] * (i + 1) if ODD_ARRAYS[n].dtype.kind != "b"
                     else ~ODD_ARRAYS[n] for n in names)
        events.append(IterationDone.make("odd", i, 3, True, i < 2, spec, outs, outs))
    events.append(LoopFinished("odd", 3, "trip_count", {}))
    events.append(RunFinished({"out": ODD_ARRAYS["big"]}))
    path = tmp_path / "odd.ldt"
    record(iter(events), path)
    with TraceReader(path) as t:
        for e in events[1:4]:
            f = t.frame("odd", e.iteration)
            for k, r in spec.back_edge_view:
                assert_same(e.body_out[r], f.back_edges[k])
                assert f.back_edges[k].flags.c_contiguous or f.back_edges[k].ndim < 2
        assert_same(t.outputs()["out"], ODD_ARRAYS["big"])


def test_object_arrays_are_refused_never_pickled(tmp_path):
    spec = fake_spec(["p"], ["r"], [("p", 0)])
    bad = np.array([{"a": 1}], dtype=object)
    with TraceWriter(tmp_path / "o.ldt") as w:
        w.write(LoopStarted("l", 1, "l", "Loop", 1, True, (), spec))
        with pytest.raises(TraceError, match="pickl"):
            w.write(IterationDone.make("l", 0, 1, True, False, spec, (bad,), (bad,)))


def test_read_the_last_of_many_iterations_through_the_footer(tmp_path, monkeypatch):
    model, inputs = scalar_while(20_000)
    path = tmp_path / "long.ldt"
    record(Engine(model).run(inputs), path, model=model, inputs=inputs)
    monkeypatch.setattr(TraceReader, "_scan", lambda self: pytest.fail("the footer was not used"))
    with TraceReader(path) as t:
        f = t.frame("count", 19_999)
        assert f.back_edges["x"].tolist() == [20_000.0]
        assert f.cond is False and f.continues is False
        assert t.loops()[0].iterations == 20_000


def test_memory_does_not_grow_with_the_iterations_recorded(tmp_path):
    def peak(iters):
        model, inputs = scalar_while(iters)
        engine = Engine(model)
        tracemalloc.start()
        try:
            record(engine.run(inputs), tmp_path / f"m{iters}.ldt", inputs=inputs,
                   batch_bytes=64 << 10)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    small, large = peak(2_000), peak(12_000)
    # 10,000 more iterations may cost their index entries (8 bytes, copied once for the footer),
    # not their frames (~200 bytes each, 2 MB in all, ~30 batches): frames wait in a bounded
    # batch, then go to disk
    assert large - small < 10_000 * 48, (small, large)


def test_live_events_stay_unchanged_and_are_passed_through(tmp_path):
    model = read_model(CORPUS / "loop_while_iter" / "model.xml")
    inputs = load_npz(CORPUS / "loop_while_iter" / "inputs.npz")
    engine = Engine(model)
    seen = []
    with recording(engine.run(inputs), tmp_path / "r.ldt", model=model, inputs=inputs) as rec:
        for e in rec:
            seen.append(type(e).__name__)
    assert seen[0] == "LoopStarted" and seen[-1] == "RunFinished"
    assert rec.writer.closed and rec.final is not None


def _write_all(path, events, **options):
    with TraceWriter(path, {"fixed": True}, **options) as w:
        for e in events:
            w.write(e)


@pytest.mark.parametrize("case", ["scalar_while", "ti_gru", "loop_while_iter", "nested",
                                  "nested_long", "nested_short", "wide_state", "cond_flags"])
def test_batched_frames_are_the_bytes_of_one_by_one_frames(tmp_path, monkeypatch, case):
    """Small frames of fixed layout are written as BATCH frames; a batch must stand for exactly
    the ITERATION frames its iterations would have had alone: the reader gives them byte for
    byte, and every frame reads back the same."""
    if case == "scalar_while":
        model, inputs = scalar_while(3000)
        events = list(Engine(model).run(inputs))
    elif case == "nested":
        events = list(Engine(read_model(NESTED / "model.xml")).run(
            load_npz(NESTED / "inputs.npz")))
    elif case.startswith("nested_"):
        model, inputs = nested_while(*((4, 700) if case == "nested_long" else (300, 3)))
        events = list(Engine(model).run(inputs))
    elif case in ("ti_gru", "loop_while_iter"):
        events = list(Engine(read_model(CORPUS / case / "model.xml")).run(
            load_npz(CORPUS / case / "inputs.npz")))
    else:
        wide = case == "wide_state"          # 128 varying data bytes: crc32 row by row
        spec = fake_spec(["s", "k"], ["s2", "k2"], [("s", 0), ("k", 1)])
        events = [LoopStarted("w", 1, "w", "Loop", None, True, (), spec)]
        run = LoopRun("w", None, spec)          # one execution, as the engine makes it
        for i in range(700):
            s = np.full(32 if wide else 1, i * 0.5, np.float32)
            k = np.array(i, np.int64)
            events.append(IterationDone((run, i, np.bool_(i % 3 != 2), i < 699, (s, k), (s, k),
                                         None, None)))
        events.append(LoopFinished("w", 700, "condition", {}))
    _write_all(tmp_path / "batched.ldt", events, batch_bytes=16 << 10)
    import loopdbg.trace.batch as batch
    monkeypatch.setattr(batch.BatchLayout, "fits", staticmethod(lambda size: False))
    _write_all(tmp_path / "single.ldt", events, batch_bytes=16 << 10)
    with TraceReader(tmp_path / "batched.ldt") as tb, TraceReader(tmp_path / "single.ldt") as ts:
        # (the END frames differ: they count the frames of their file)
        assert [(k, d) for _, k, d in tb.raw() if k != fmt.END] == \
            [(k, d) for _, k, d in ts.raw() if k != fmt.END]
        kinds = [k for _, k, _ in tb._walk()]
        assert fmt.BATCH not in [k for _, k, _ in ts._walk()]
        if case in ("scalar_while", "nested_long", "wide_state", "cond_flags"):
            assert fmt.BATCH in kinds                 # long runs of small frames are batched
            shrink = 2 if case == "wide_state" else 3     # 136 data bytes per iteration there
            assert (tmp_path / "batched.ldt").stat().st_size < \
                (tmp_path / "single.ldt").stat().st_size / shrink
        for row in tb.index.rows():
            path, outer = tb.index.key(row)
            for k in range(tb.index.count(row)):
                a, b = tb.frame(path, k, outer), ts.frame(path, k, outer)
                assert (a.cond, a.continues, a.trip_count) == (b.cond, b.continues, b.trip_count)
                assert a.tensors().keys() == b.tensors().keys()
                for name, v in a.tensors().items():
                    np.testing.assert_array_equal(v, b.tensors()[name])
    with TraceReader(tmp_path / "batched.ldt") as t:
        assert t.verify() == []


@pytest.mark.parametrize("case", ["scalar_while", "nested_long", "nested_short",
                                  "loop_while_iter", "ti_gru"])
def test_record_writes_what_iterating_a_recording_writes(tmp_path, case):
    """``record`` drains the events through the writer's pump (the batched execution's code as
    a loop over them); iterating a ``recording`` writes one event at a time. The frames are the
    same bytes (the header differs only by its creation time)."""
    if case == "scalar_while":
        model, inputs = scalar_while(5000)
    elif case.startswith("nested_"):
        model, inputs = nested_while(*((4, 700) if case == "nested_long" else (300, 3)))
    else:
        model, inputs = read_model(CORPUS / case / "model.xml"), load_npz(CORPUS / case / "inputs.npz")
    engine = Engine(model)
    # Batches also end by the clock (every flush_interval): on a loaded machine the two runs
    # would cut them at other iterations. Only their size ends them here.
    slow = {"flush_interval": 1e9}
    record(engine.run(inputs), tmp_path / "drained.ltrace", model=model, inputs=inputs, **slow)
    for _ in recording(engine.run(inputs), tmp_path / "iterated.ltrace", model=model,
                       inputs=inputs, **slow):
        pass
    with TraceReader(tmp_path / "drained.ltrace") as a, \
            TraceReader(tmp_path / "iterated.ltrace") as b:
        assert a.status == b.status == "complete"
        frames_a = [(k, d) for _, k, d in a._walk() if k != fmt.HEADER]
        frames_b = [(k, d) for _, k, d in b._walk() if k != fmt.HEADER]
        assert frames_a == frames_b
        if case in ("scalar_while", "nested_long"):
            assert fmt.BATCH in [k for k, _ in frames_a]


def test_the_writers_generated_code_is_registered_with_linecache(tmp_path):
    """The fast path's code (single, batch and pump modes) shows its lines in a traceback."""
    import linecache

    from loopdbg.trace import fastpath

    fastpath._code_cache.clear()
    model, inputs = scalar_while(2000)
    record(Engine(model).run(inputs), tmp_path / "t.ltrace", model=model, inputs=inputs)
    codes = [c for pair in fastpath._code_cache.values() for c in pair]
    names = {c.co_filename for c in codes}
    assert any("single mode" in n for n in names) and any("pump" in n for n in names), names
    for code in codes:
        lines = linecache.getlines(code.co_filename)
        assert lines and lines[0].startswith("def f("), code.co_filename
