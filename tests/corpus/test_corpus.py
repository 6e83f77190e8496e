"""Every corpus case (IR written by OpenVINO, outputs computed by its CPU plugin) is reproduced."""

from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine, IterationDone, LoopFinished, RunFinished
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model

HERE = Path(__file__).parent
CASES = sorted(p.name for p in HERE.iterdir() if (p / "model.xml").exists())


def assert_matches(got: dict, expected: dict) -> None:
    """docs/semantics.md rule 14: floats at rtol=atol=1e-5, integers and booleans exact, same shapes."""
    assert set(got) == set(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.shape == want.shape, (name, have.shape, want.shape)
        assert have.dtype == want.dtype, (name, have.dtype, want.dtype)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(have, want, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_corpus_case_reproduces_openvino(case):
    model = read_model(HERE / case / "model.xml")
    final = Engine(model).run_to_end(load_npz(HERE / case / "inputs.npz"))
    assert isinstance(final, RunFinished)
    assert_matches(final.outputs, load_npz(HERE / case / "expected.npz"))


@pytest.mark.parametrize("case", CASES)
def test_every_iteration_yields_an_event(case):
    model = read_model(HERE / case / "model.xml")
    events = list(Engine(model).run(load_npz(HERE / case / "inputs.npz")))
    done = [e for e in events if isinstance(e, LoopFinished)]
    iters = [e for e in events if isinstance(e, IterationDone)]
    assert done, "every corpus model has a loop"
    assert len(iters) == sum(d.iterations for d in done)
    for k, e in enumerate(iters):
        assert e.iteration == k
        assert e.continues == (k < len(iters) - 1)
    assert isinstance(events[-1], RunFinished)


def test_corpus_copy_is_complete():
    assert len(CASES) == 13
