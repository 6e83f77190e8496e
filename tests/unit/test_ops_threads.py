"""BLAS threads: the user's variables win; otherwise the cores free now (loopdbg.ops.threads)."""

import numpy as np
import pytest

from loopdbg.ops import threads


@pytest.mark.parametrize("n_cores, load, expected", [
    (2, 0.0, 2),       # a quiet machine keeps every core
    (2, 1.0, 2),       # ... counting this process's own load
    (2, 2.2, 1),       # one other busy process: one thread
    (2, 6.7, 1),       # a crowded machine: one thread, never zero
    (8, 3.0, 6),
    (4, None, 4),      # no load average: every core
])
def test_count_follows_free_cores(n_cores, load, expected):
    n, reason = threads.choose(n_cores, load, environ={})
    assert n == expected
    assert f"{n_cores} cores" in reason


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"])
def test_user_variables_leave_blas_alone(name):
    n, reason = threads.choose(2, 9.0, environ={name: "2"})
    assert n is None and reason == f"{name} is set"


def test_loopdbg_variable_sets_the_count():
    assert threads.choose(2, 9.0, environ={"LOOPDBG_BLAS_THREADS": "2",
                                           "OMP_NUM_THREADS": "1"}) == (2, "LOOPDBG_BLAS_THREADS")
    # an unusable value is ignored like an unset one
    assert threads.choose(2, 0.0, environ={"LOOPDBG_BLAS_THREADS": "many"})[0] == 2


def test_settle_sets_blas_threads(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    np.ones((2, 2)) @ np.ones((2, 2))
    if not [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]:
        pytest.skip("numpy's BLAS is not visible to threadpoolctl")
    for name in threads.USER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOPDBG_BLAS_THREADS", "1")
    with threadpoolctl.threadpool_limits(limits=None):      # restores BLAS's count after
        got = threads.settle()
        assert got.count == 1 and "LOOPDBG_BLAS_THREADS" in got.describe()
        counts = {p["num_threads"] for p in threadpoolctl.threadpool_info()
                  if p.get("user_api") == "blas"}
        assert counts == {1}
        assert threads.state() == got


def test_engine_run_settles_threads(monkeypatch):
    from loopdbg.builder import GraphBuilder
    from loopdbg.engine import Engine

    seen = []
    monkeypatch.setattr(threads, "settle", lambda: seen.append(1))
    b = GraphBuilder("m")
    x = b.parameter("x", "f32", [2])
    b.result(b.op("Relu", [x]), "y")

    list(Engine(b.build()).run({"x": np.ones(2, np.float32)}))
    assert seen == [1]


# -- the cores others keep busy, over the last moments (threads.others, revisit) -------------
@pytest.mark.parametrize("n_cores, used, expected", [
    (2, 0.0, 2),       # nothing else runs: every core
    (2, 0.2, 2),       # a little (a shell, a clock tick's error): still every core
    (2, 0.4, 1),       # a third of a core or more counts as taken
    (2, 1.0, 1),       # the benchmark's other process, a build
    (2, 3.5, 1),       # never zero
    (8, 2.9, 5),
])
def test_count_follows_what_others_use(n_cores, used, expected):
    n, reason = threads.choose(n_cores, 9.0, environ={}, busy=(used, 0.5))
    assert n == expected                  # the load average (9.0) is not what decides
    assert f"others busy {used:.1f} of them over 0.5 s" in reason


def test_user_variables_win_over_the_measure():
    assert threads.choose(2, None, environ={"OMP_NUM_THREADS": "2"}, busy=(0.0, 1.0)) == \
        (None, "OMP_NUM_THREADS is set")


def test_others_is_busy_time_less_this_process():
    before = threads.Sample(wall=10.0, busy=100.0, own=1.0)
    # in 0.5 s the CPUs were busy 0.9 s, 0.6 s of it this process's own: others used 0.6 core
    assert threads.others(before, threads.Sample(10.5, 100.9, 1.6)) == pytest.approx((0.6, 0.5))
    # our own threads on both cores: nobody else
    assert threads.others(before, threads.Sample(10.5, 101.0, 2.0))[0] == pytest.approx(0.0)
    # too short a window for clock ticks, too long to say anything about now, nothing read
    assert threads.others(before, threads.Sample(10.05, 100.1, 1.0)) is None
    assert threads.others(before, threads.Sample(60.0, 150.0, 1.0)) is None
    assert threads.others(None, before) is None


def test_sample_reads_this_machine():
    got = threads.sample()
    if got is None:
        pytest.skip("no /proc/stat here")
    assert got.busy > 0 and got.own >= 0
    later = threads.sample()
    assert later.busy >= got.busy and later.own >= got.own and later.wall > got.wall


@pytest.fixture
def fake_machine(monkeypatch):
    """threads with a machine whose others' use the test sets, and BLAS's count recorded
    instead of set."""
    for name in threads.USER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    machine = {"t": 100.0, "busy": 0.0, "own": 0.0, "others": 0.0}
    monkeypatch.setattr(threads, "sample", lambda: threads.Sample(
        machine["t"], machine["busy"], machine["own"]))
    monkeypatch.setattr(threads.time, "perf_counter", lambda: machine["t"])
    monkeypatch.setattr(threads, "cores", lambda: 2)
    monkeypatch.setattr(threads, "running_others", lambda: machine.get("running"))
    set_to = []

    def apply(n, reason):
        set_to.append(n)
        threads._STATE["now"] = threads.Threads(n, reason)
        return threads._STATE["now"]
    monkeypatch.setattr(threads, "_apply", apply)
    monkeypatch.setattr(threads, "_LOOK", [threads.sample(), 0.0])
    monkeypatch.setattr(threads, "_STATE", {})
    monkeypatch.setattr(threads, "_MEASURED", [None, 0.0])
    monkeypatch.setattr(threads, "_MOVABLE", [False])

    def advance(seconds, others, running=None):
        machine["running"] = running            # (the snapshot, when the test gives one)
        machine["t"] += seconds
        machine["own"] += seconds               # this process runs all along
        machine["busy"] += seconds * (1 + others)
    return advance, set_to


def test_a_run_follows_the_machine(fake_machine):
    advance, set_to = fake_machine
    advance(0.3, others=1.0)              # the runtime's script before us, still running
    threads.settle()
    assert set_to == [1]
    advance(0.1, others=0.0)              # it ended; too soon to look again
    threads.revisit()
    assert set_to == [1]
    advance(threads.REVISIT, others=0.0)  # a quarter of a second later: quiet
    threads.revisit()
    assert set_to[-1] == 2 and "others busy 0.0" in threads.state().reason
    advance(threads.REVISIT + 0.1, others=1.0)      # a build starts beside the run
    threads.revisit()
    assert set_to[-1] == 1


def test_the_users_count_is_never_moved(fake_machine, monkeypatch):
    advance, set_to = fake_machine
    monkeypatch.setenv("LOOPDBG_BLAS_THREADS", "2")
    advance(0.3, others=1.5)
    threads.settle()
    advance(1.0, others=1.5)
    threads.revisit()
    assert set_to == [2] and threads.state().reason == "LOOPDBG_BLAS_THREADS"


def test_a_short_window_falls_back_to_the_load_average(fake_machine, monkeypatch):
    advance, set_to = fake_machine
    monkeypatch.setattr(threads, "load", lambda: 3.0)
    advance(0.05, others=0.0)             # the run starts right after the last look, and no
    threads.settle()                      # snapshot of the running tasks can be taken
    assert set_to == [1] and "load 3.0" in threads.state().reason


def test_a_long_window_gives_way_to_what_runs_now(fake_machine, monkeypatch):
    """A window longer than MAX_WINDOW holds the script that ran before the run (the runtime's,
    in the same notebook): what runs at this moment decides, and the run's first look
    measures again."""
    advance, set_to = fake_machine
    monkeypatch.setattr(threads, "load", lambda: 3.0)
    advance(1.5, others=1.5, running=0)   # busy a moment ago, nothing else running now
    threads.settle()
    assert set_to == [2] and "0 other tasks running now" in threads.state().reason
    advance(threads.REVISIT + 0.01, others=1.0)   # not over after all: the first look sees it
    threads.revisit()
    assert set_to == [2, 1]
    advance(2.0, others=1.0, running=1)   # a build running right now
    threads.settle()
    assert set_to[-1] == 1


def test_running_others_reads_this_machine():
    got = threads.running_others()
    if got is None:
        pytest.skip("no /proc/loadavg here")
    assert 0 <= got < 10_000


def test_loop_checkpoints_revisit_the_threads(monkeypatch):
    """Between the iterations of a loop the run looks at the machine again (through the
    loops' checkpoints), with no memory budget set."""
    from loopdbg.engine import Engine, iteration_checks

    seen = []
    monkeypatch.setattr(iteration_checks, "revisit_threads", lambda: seen.append(1))
    events = list(Engine(_doubling_loop(trip=5)).run({"x": np.ones(2, np.float32)}))
    assert events[-1].outputs["x_last"].tolist() == [32, 32]
    assert len(seen) >= 1


def test_a_short_window_keeps_the_last_measured_count(fake_machine, monkeypatch):
    """Runs that follow each other closely (a short model run twice) keep what the last
    measure chose rather than the load average, and the short window grows into the next."""
    advance, set_to = fake_machine
    monkeypatch.setattr(threads, "load", lambda: 3.0)
    advance(0.3, others=0.0)
    threads.settle()                      # measured: quiet
    advance(0.05, others=0.0)
    threads.settle()                      # 0.05 s later: too short to judge; not the load's 1
    assert set_to == [2, 2] and "others busy 0.0" in threads.state().reason
    advance(0.1, others=1.0)              # 0.15 s since the last usable look: judged now
    threads.settle()
    assert set_to[-1] == 1


# -- an iteration's count is recorded, and a recomputed iteration runs with it ---------------
def _doubling_loop(trip=6, inner=False):
    from loopdbg.builder import GraphBuilder

    b = GraphBuilder("m")
    x = b.parameter("x", "f32", [2])
    loop = b.loop("acc", trip=trip, cond=True)
    xb = loop.merged_input(x, "x")
    nxt = loop.body.op("Add", [xb, xb], name="x_next")
    if inner:                                    # a loop in the body: its checkpoints too
        sub = loop.body.loop("inner", trip=3, cond=True)
        yb = sub.merged_input(nxt, "y")
        ynext = sub.body.op("Add", [yb, np.ones(2, np.float32)], name="y_next")
        sub.back_edge(ynext, yb)
        sub.condition(sub.body.const("true", np.array(True)))
        nxt = sub.output_last(ynext, name="y_last")
    loop.back_edge(nxt, xb)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(nxt, name="x_last"))
    return b.build()


def test_a_moved_count_is_recorded_from_the_iteration_it_starts(monkeypatch):
    from loopdbg.engine import Engine, iteration_checks

    # a steady loop's checkpoints come after iterations 0, 1 and 3 (then every 2, 4, ...)
    moves = iter([None, 1, 2])
    monkeypatch.setattr(iteration_checks, "revisit_threads", lambda: next(moves, None))
    monkeypatch.setattr(threads, "current", lambda: 2)    # the count at the run's start
    events = [e for e in Engine(_doubling_loop()).run({"x": np.ones(2, np.float32)})
              if hasattr(e, "iteration")]
    run = events[0].run
    assert run.blas_threads == [(0, 2), (2, 1), (4, 2)]
    assert [run.threads_at(e.iteration) for e in events] == [2, 2, 1, 1, 2, 2]


def test_only_outermost_loops_look_again(monkeypatch):
    from loopdbg.engine import Engine, iteration_checks

    looked = []
    monkeypatch.setattr(iteration_checks, "revisit_threads", lambda: looked.append(1))
    events = list(Engine(_doubling_loop(trip=4, inner=True)).run({"x": np.ones(2, np.float32)}))
    done = [e for e in events if hasattr(e, "iteration")]
    outer = [e for e in done if e.path == "acc"]
    inner = [e for e in done if e.path == "acc/inner"]
    assert len(outer) == 4 and len(inner) == 12
    assert 1 <= len(looked) <= 3              # between the outer iterations only


def test_a_recomputed_iteration_runs_with_its_count(monkeypatch):
    from contextlib import contextmanager

    from loopdbg.engine import Engine, iteration_checks, recompute

    moves = iter([None, 1])                   # from iteration 2 on: 1 thread
    monkeypatch.setattr(iteration_checks, "revisit_threads", lambda: next(moves, None))
    monkeypatch.setattr(threads, "current", lambda: 2)
    events = [e for e in Engine(_doubling_loop()).run({"x": np.ones(2, np.float32)})
              if hasattr(e, "iteration")]
    pins = []

    @contextmanager
    def pinned(count):
        pins.append(count)
        yield
    monkeypatch.setattr(recompute, "pinned", pinned)
    assert recompute.node_values(events[1])["x_next"].tolist() == [4, 4]
    assert recompute.node_values(events[3])["x_next"].tolist() == [16, 16]
    assert pins == [2, 1]
    pins.clear()
    steps = list(recompute.node_steps(events[4]))
    assert steps and set(pins) == {1}         # each layer, pinned


def test_pinned_sets_blas_and_puts_it_back():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    np.ones((2, 2)) @ np.ones((2, 2))
    if not [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]:
        pytest.skip("numpy's BLAS is not visible to threadpoolctl")

    def count():
        return {p["num_threads"] for p in threadpoolctl.threadpool_info()
                if p.get("user_api") == "blas"}
    with threadpoolctl.threadpool_limits(limits=None):      # restores BLAS's count after
        before = count()
        other = 1 if before != {1} else 2
        with threads.pinned(other):
            assert count() == {other}
        assert count() == before
        with threads.pinned(None):
            assert count() == before
        # a run in another thread moved the count while a recompute was pinned: its count
        # stays after the pin, not the one the pin found
        moved = 2 if other == 1 else 1
        with threads.pinned(other):
            threads._apply(moved, "a look between iterations")
        assert count() == {moved}
