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
