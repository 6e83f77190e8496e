"""Differential fuzzer: random Loop/TensorIterator models run by loopdbg and by OpenVINO (CPU, f32).

Models come from ``fuzz_models.cases()`` (hypothesis) and are built with loopdbg's IR builder:
Loop and TensorIterator; trip counts (Const or model input, i32/i64, -1 = no limit); execution
conditions (Const true, or a model input true/false of shape [] or [1]); body conditions computed
from state (current_iteration < K, an i32 or f32 counter carried by a back edge); current_iteration
in i32/i64, [] or [1]; sliced inputs forward and backward along axis 0 or 1 with part_size 1 or 2;
merged states with back edges, an invariant input; last-value and concatenated outputs along axis
0 or 1 (TensorIterator also reversed); a nested Loop or TensorIterator in the body (fixed trip
count, or current_iteration < K); zero-iteration Loops. Outputs must agree as docs/semantics.md rule 14
says: floats at rtol = atol = 1e-5, integers and booleans exactly, identical shapes and dtypes.

Restriction — only configurations where OpenVINO's CPU plugin follows the specification are
drawn (docs/semantics.md and the operation specifications name the others); the fuzzer never generates:

* slicing (Loop or TensorIterator) or TensorIterator concatenation other than the two canonical
  forms, (start 0, end -1, stride part_size) and (start -1, end 0, stride -part_size) (CPU slices
  from an end of the axis whatever start says); always |stride| == part_size, and every sliced
  input of a TensorIterator gives the same number of iterations;
* a Loop running more iterations than its sliced inputs have slices (trip count and body
  condition are drawn so that the run ends by the last slice);
* a Loop concatenated output with stride < 0 (CPU reverses it; Loop-5 does not define it), or a
  Loop concatenation of pieces longer than 1 along the axis;
* negative concatenation axes (CPU refuses them);
* a back edge into the current_iteration Parameter;
* zero iterations with a last-value output that no back edge feeds (undefined by the
  specification; CPU returns uninitialised memory);
* a constant false execution condition (CPU's shape inference then fails to compile), and a false
  execution condition together with a concatenated output when the trip count is a Const and the
  body condition constant true (CPU sizes the concatenation from the folded trip count, and keeps
  that size when nothing runs; the specification gives an empty one);
* zero-iteration TensorIterators (an axis of length 0: OpenVINO refuses it) and TensorIterators
  without a sliced input (docs/semantics.md rule 12: CPU's count differs);
* a TensorIterator directly inside a TensorIterator's body (OpenVINO forbids it);
* integer division and float comparisons near a threshold (CPU truncates integer division and
  rounds differently; the conditions here compare exact integers or integer-valued floats).

CI runs ``LOOPDBG_FUZZ_EXAMPLES`` examples (default 25); a long run is one command, see README.md.
"""

from __future__ import annotations

import contextlib
import os
import signal

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from fuzz_models import build, cases  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.load import read_model  # noqa: E402
from loopdbg.ir.xml_writer import write_ir  # noqa: E402
from loopdbg.oracle import OpenVINO, OracleFailure, openvino_installed  # noqa: E402
from loopdbg.oracle.testing import UNAVAILABLE  # noqa: E402

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(not openvino_installed(), reason="OpenVINO is not installed")]

EXAMPLES = int(os.environ.get("LOOPDBG_FUZZ_EXAMPLES", "25"))
UNANSWERED: list[str] = []       # examples OpenVINO could not run (crash, hang): not compared


def run_openvino(xml, inputs: dict) -> list[tuple[str, np.ndarray]] | None:
    """OpenVINO CPU's outputs (in its child process), or None when it crashed or hung."""
    try:
        ov = OpenVINO("CPU", timeout=60)
        compiled, outs = ov.run(xml, dict(inputs))
    except OracleFailure as exc:
        if exc.kind not in UNAVAILABLE:
            raise
        UNANSWERED.append(str(exc))
        return None
    return [(min(names), out) for names, out in zip(compiled.outputs, outs)]


def assert_same(got: dict, want: list, where: str) -> None:
    """docs/semantics.md rule 14."""
    assert [name for name, _ in want] == list(got), where
    for name, expected in want:
        have = got[name]
        assert have.shape == expected.shape, f"{where}: {name} shape {have.shape} vs OpenVINO " \
                                             f"{expected.shape}"
        assert have.dtype == expected.dtype, f"{where}: {name} dtype {have.dtype} vs " \
                                             f"{expected.dtype}"
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(have, expected, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{where}: {name}")
        else:
            np.testing.assert_array_equal(have, expected, err_msg=f"{where}: {name}")


@pytest.mark.no_alarm
@settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_loopdbg_agrees_with_openvino_cpu(case, tmp_path_factory):
    model, inputs = build(case)
    xml, _ = write_ir(model, tmp_path_factory.mktemp("fuzz") / "model.xml")
    with example_time_limit(60):
        got = Engine(read_model(xml)).run_to_end(inputs).outputs
    want = run_openvino(xml, inputs)
    if want is None:             # this host's OpenVINO crashed on it: nothing to compare with
        hypothesis.note(f"not compared: {UNANSWERED[-1]}")
        return
    assert_same(got, want, f"{xml} ({case})")


def test_openvino_answered_some_fuzz_examples():
    """The fuzz run above compares nothing when OpenVINO crashes on every example: say so."""
    if UNANSWERED and len(UNANSWERED) >= EXAMPLES:
        pytest.skip(f"OpenVINO could not run any fuzz example on this host: {UNANSWERED[-1]}")


@contextlib.contextmanager
def example_time_limit(seconds: int):
    """A hang in one example fails it (Unix only), however many examples the run has."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def hung(signum, frame):
        raise TimeoutError(f"the example took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_the_generator_reaches_every_feature():
    """The strategy draws each feature the issue asks for (generation only, no shrinking)."""
    from hypothesis import Phase

    seen: set[str] = set()
    features = {
        "TI backward part_size 2": lambda c: c.kind == "TensorIterator" and any(
            s.backward and s.part == 2 for s in c.slices),
        "Loop sliced": lambda c: c.kind == "Loop" and bool(c.slices),
        "unbounded Loop stopped by a state counter": lambda c: c.kind == "Loop" and
        c.trip == -1 and c.cond.startswith("counter"),
        "Loop stopped by current_iteration": lambda c: c.kind == "Loop" and c.cond == "iter",
        "zero-iteration Loop with a scan": lambda c: c.zero_possible and any(
            o[0] == "scan" for o in c.outputs),
        "reversed concatenation": lambda c: any(o[0] != "last" and o[-1] is True
                                                for o in c.outputs),
        "concatenation along axis 1": lambda c: any(o[0] == "scan" and o[2] == 1
                                                    for o in c.outputs),
        "invariant": lambda c: c.invariant,
        "TI inside a Loop": lambda c: c.kind == "Loop" and c.inner is not None and
        c.inner.kind == "TensorIterator",
        "Loop inside a TI": lambda c: c.kind == "TensorIterator" and c.inner is not None,
    }

    @settings(max_examples=400, deadline=None, database=None, phases=[Phase.generate])
    @given(case=cases())
    def sample(case):
        seen.update(name for name, has in features.items() if has(case))

    sample()
    assert seen == set(features), set(features) - seen
