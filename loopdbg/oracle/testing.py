"""For test suites: OpenVINO as an oracle that skips, never kills, when it cannot answer.

A test that consults OpenVINO and finds it missing, crashed (a CPU plugin's SIGFPE), hung or out
of memory is *skipped with that reason*; a loopdbg result that disagrees with a working OpenVINO
still fails. pytest is imported only when a skip is due.

    from loopdbg.oracle import testing as ovt
    outputs = ovt.run(xml_path, [x, y])          # pytest.skip(...) if OpenVINO cannot answer
    ovt.skip_unless_compared(report)             # for a loopdbg.check report
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from loopdbg.oracle.worker import CRASH, ERROR, HANG, MEMORY, MISSING, OpenVINO, OracleFailure

UNAVAILABLE = (MISSING, CRASH, HANG, MEMORY)
_OV: OpenVINO | None = None


def skip(reason: str):
    import pytest
    pytest.skip(f"OpenVINO as oracle: {reason}")


def openvino() -> OpenVINO:
    """The shared oracle (CPU, f32), or a skip when OpenVINO is missing or does not start."""
    global _OV
    if _OV is None:
        try:
            _OV = OpenVINO("CPU")
        except OracleFailure as exc:
            skip(str(exc))
    return _OV


def _answer(call, *args):
    try:
        return call(*args)
    except OracleFailure as exc:
        if exc.kind in UNAVAILABLE:
            skip(str(exc))
        raise


def run(path: str | Path, values: Sequence[np.ndarray] | Mapping[str, np.ndarray],
        what: str = "the model") -> list[np.ndarray]:
    """OpenVINO CPU's outputs for the model file on ``values`` (in order, or by input name)."""
    return run_named(path, values, what)[0]


def run_named(path: str | Path, values: Sequence[np.ndarray] | Mapping[str, np.ndarray],
              what: str = "the model") -> tuple[list[np.ndarray], list[set[str]]]:
    """(outputs, tensor names per output) from OpenVINO CPU."""
    ov = openvino()
    if not isinstance(values, Mapping):
        values = list(values)
    compiled, outs = _answer(ov.run, path, values, what)
    return outs, [set(n) for n in compiled.outputs]


def evaluate(path: str | Path, values: Sequence[np.ndarray], what: str = "the model"):
    """The outputs of OpenVINO's reference implementations (``Node.evaluate``), node by node."""
    ov = openvino()
    return _answer(ov.evaluate, path, list(values), what)


def describe(path: str | Path, what: str = "the model") -> dict:
    """What OpenVINO's reader makes of the model (see ``loopdbg.oracle.child``)."""
    ov = openvino()
    return _answer(ov.describe, path, what)


def skip_unless_compared(report) -> None:
    """Skip when a ``loopdbg.check`` report could not compare because OpenVINO failed."""
    if getattr(report, "openvino_failure", None) in UNAVAILABLE:
        skip(report.openvino_error)
    for lc in getattr(report, "loops", {}).values():
        if getattr(lc, "failure", None) in UNAVAILABLE:
            skip(f"loop '{lc.path}': {lc.error}")


__all__ = ["openvino", "run", "run_named", "evaluate", "describe", "skip_unless_compared",
           "UNAVAILABLE", "ERROR"]
