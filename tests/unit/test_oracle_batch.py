"""Many models asked of OpenVINO in one request: each answer is the one it gets alone, a case the
batch cannot answer is asked alone, and a test made of batched cases still fails exactly the case
whose kernel is wrong (``loopdbg.oracle.testing`` recording, ``tests/unit/_ov_batch.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from loopdbg.oracle import ERROR, OpenVINO, OracleFailure, openvino_installed, shutdown
from loopdbg.oracle import testing as ovt
from loopdbg.oracle.child import FAULT_ENV

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(not openvino_installed(), reason="OpenVINO is not installed")]
HERE = Path(__file__).resolve().parent


def _model(folder: Path, op: str, shape=(2, 3)) -> Path:
    """A one-op model written by OpenVINO itself (node names numbered process-wide)."""
    ov = pytest.importorskip("openvino")
    import openvino.opset8 as o8
    p = o8.parameter(list(shape), np.float32)
    node = {"relu": o8.relu, "exp": o8.exp, "neg": o8.negative}[op](p)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{op}.xml"
    ov.save_model(ov.Model([node.output(0)], [p]), str(path), compress_to_fp16=False)
    return path


def test_a_batch_answers_each_model_as_it_would_alone_and_a_bad_one_with_its_error(tmp_path):
    ov = OpenVINO("CPU")
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    relu, exp = _model(tmp_path / "a", "relu"), _model(tmp_path / "b", "exp")
    bad = tmp_path / "bad.xml"
    bad.write_text("<net><layers/></net>")
    answers = ov.batch([("run", relu, [x]), ("run", bad, [x]), ("evaluate", exp, [x]),
                        ("run", exp, [x])])
    assert [a.tolist() for a in answers[0]] == [ov.run(relu, [x])[1][0].tolist()]
    assert isinstance(answers[1], str) and answers[1].startswith("OpenVINO: ")
    np.testing.assert_allclose(answers[2][0], np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(answers[3][0], ov.run(exp, [x])[1][0])


def test_under_fault_injection_a_batch_is_refused_so_each_model_meets_the_fault_alone(
        tmp_path, monkeypatch):
    shutdown()
    monkeypatch.setenv(FAULT_ENV, "SIGFPE:compile")
    try:
        path = _model(tmp_path, "relu")
        x = np.ones((2, 3), np.float32)
        with pytest.raises(OracleFailure) as info:
            OpenVINO("CPU").batch([("run", path, [x])])
        assert info.value.kind == ERROR and "no batches under fault injection" in str(info.value)
        with ovt.recording() as asked:
            assert ovt.run(path, [x]) is None
            assert ovt.answer_batch(asked) == 0          # nothing answered: asked alone
        with pytest.raises(pytest.skip.Exception, match=r"crashed \(SIGFPE\) while compiling"):
            ovt.run(path, [x])
    finally:
        monkeypatch.delenv(FAULT_ENV)
        shutdown()


def test_a_recorded_request_is_answered_once_from_the_batch_and_only_the_same_request(tmp_path):
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    first = _model(tmp_path / "first", "neg")
    with ovt.recording() as asked:
        assert ovt.run(first, [x]) is None and ovt.evaluate(first, [x * 2]) is None
        first.write_text("<net>overwritten by the next case</net>")     # the copy counts
        assert ovt.answer_batch(asked) == 2
    again = _model(tmp_path / "again", "neg")        # the same model with other node names
    assert ovt.run(again, [x])[0].tolist() == (-x).tolist() and ovt.from_batch(again)
    assert ovt.evaluate(again, [x * 2])[0].tolist() == (-2 * x).tolist()
    assert ovt.from_batch(again)
    assert ovt.run(again, [x])[0].tolist() == (-x).tolist()       # answered once: now alone
    assert not ovt.from_batch(again)
    with ovt.recording() as asked:
        ovt.run(again, [x])
        ovt.answer_batch(asked)
    assert ovt.run(again, [x + 1])[0].tolist() == (-(x + 1)).tolist()   # other inputs: alone
    assert not ovt.from_batch(again)
    assert ovt.run(_model(tmp_path / "exp", "exp"), [x]) is not None
    assert not ovt.from_batch(tmp_path / "exp" / "exp.xml")


INNER_TEST = '''
import numpy as np
import pytest
import openvino.opset8 as o8
import _ov_single_op
from _ov_single_op import P, check
from loopdbg.ops.registry import make_kernel
from loopdbg.oracle import testing as ovt

pytestmark = [pytest.mark.oracle, pytest.mark.ov_batch]
RNG = np.random.default_rng(1)


def wrong(layer):
    kernel, n_out = make_kernel(layer)
    return (lambda *a: kernel(*a) + 1), n_out


@pytest.mark.parametrize("case", range(6))
def test_relu(tmp_path, case):
    x = RNG.standard_normal((2, case + 1)).astype(np.float32)     # draws as the batch drew
    _ov_single_op.make_kernel = wrong if case == 3 else make_kernel
    try:
        check(tmp_path, o8.relu, [P(x)])
    finally:
        _ov_single_op.make_kernel = make_kernel
    assert ovt.from_batch(tmp_path / "op.xml"), "not answered by the batch"
'''

INNER_CONFTEST = f'''
import sys
sys.path.insert(0, {str(HERE)!r})
import _ov_batch
import pytest


@pytest.hookimpl(tryfirst=True)     # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    _ov_batch.mark_groups(items)


def pytest_runtest_setup(item):
    _ov_batch.prefetch(item, {{}})
'''


def test_a_wrong_kernel_fails_exactly_its_case_among_batched_ones(tmp_path):
    """Under pytest-xdist (the README's command): the cases of the function stay on one worker,
    each is answered by the batch, and only the case whose kernel is wrong fails."""
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER_TEST))
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    oracle: x\n    ov_batch: x\n"
                                         "addopts = --dist loadgroup\n")
    # only pytest-xdist of the installed plugins: the others (hypothesis, syrupy, the Textual
    # snapshots) cost each of the three processes seconds to import, and none is used here
    env = dict(os.environ, PYTHONPATH=str(HERE), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "xdist.plugin", "-rf", "-n", "2", "test_inner.py"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    failed = [ln.split()[1].split("@")[0] for ln in proc.stdout.splitlines()
              if ln.startswith("FAILED")]
    assert failed == ["test_inner.py::test_relu[3]"], proc.stdout[-3000:]
    assert "1 failed, 5 passed" in proc.stdout, proc.stdout[-3000:]
