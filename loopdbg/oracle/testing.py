"""For test suites: OpenVINO and onnxruntime as oracles that skip, never kill, when they fail.

A test that consults a runtime and finds it missing, crashed (a CPU plugin's SIGFPE), hung or out
of memory is *skipped with that reason*; a loopdbg result that disagrees with a working runtime
still fails. pytest is imported only when a skip is due.

    from loopdbg.oracle import testing as ovt
    outputs = ovt.run(xml_path, [x, y])          # pytest.skip(...) if OpenVINO cannot answer
    outputs = ovt.run_onnxruntime(onnx_path, {"x": x})      # the same through onnxruntime
    ovt.skip_unless_compared(report)             # for a loopdbg.check report
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from loopdbg.oracle.worker import (CRASH, ERROR, HANG, MEMORY, MISSING, OnnxRuntime, OpenVINO,
                                   OracleFailure, Runtime)

UNAVAILABLE = (MISSING, CRASH, HANG, MEMORY)
_RUNTIMES: dict[str, Runtime] = {}


def skip(reason: str, label: str = "OpenVINO"):
    import pytest
    pytest.skip(f"{label} as oracle: {reason}")


def _runtime(cls) -> Runtime:
    if cls.key not in _RUNTIMES:
        try:
            _RUNTIMES[cls.key] = cls("CPU")
        except OracleFailure as exc:
            skip(str(exc), cls.label)
    return _RUNTIMES[cls.key]


def openvino() -> OpenVINO:
    """The shared oracle (CPU, f32), or a skip when OpenVINO is missing or does not start."""
    return _runtime(OpenVINO)


def onnxruntime() -> OnnxRuntime:
    """The shared onnxruntime (CPU), or a skip when it is missing or does not start."""
    return _runtime(OnnxRuntime)


def answer(call, *args, label: str = "OpenVINO"):
    """``call(*args)``; the test is skipped when the runtime is missing, crashed, hung or OOM."""
    try:
        return call(*args)
    except OracleFailure as exc:
        if exc.kind in UNAVAILABLE:
            skip(str(exc), label)
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
    compiled, outs = answer(ov.run, path, values, what)
    return outs, [set(n) for n in compiled.outputs]


def run_onnxruntime(path: str | Path,
                    values: Sequence[np.ndarray] | Mapping[str, np.ndarray],
                    what: str = "the model") -> tuple[list[np.ndarray], list[str]]:
    """(outputs, output names) from onnxruntime on CPU, fed in order or by input name."""
    ort = onnxruntime()
    if not isinstance(values, Mapping):
        values = list(values)
    compiled, outs = answer(ort.run, path, values, what, label=ort.label)
    return outs, [next(iter(n)) for n in compiled.outputs]


def evaluate(path: str | Path, values: Sequence[np.ndarray], what: str = "the model"):
    """The outputs of OpenVINO's reference implementations (``Node.evaluate``), node by node."""
    ov = openvino()
    return answer(ov.evaluate, path, list(values), what)


def describe(path: str | Path, what: str = "the model") -> dict:
    """What OpenVINO's reader makes of the model (see ``loopdbg.oracle.child``)."""
    ov = openvino()
    return answer(ov.describe, path, what)


def skip_unless_compared(report) -> None:
    """Skip when a ``loopdbg.check`` report (or ``check --against --runtimes``) could not compare
    because a runtime failed."""
    label = getattr(report, "runtime", "OpenVINO")
    if getattr(report, "runtime_failure", None) in UNAVAILABLE:
        skip(report.runtime_error, label)
    loops = getattr(report, "loops", {})
    for lc in loops.values() if isinstance(loops, dict) else ():
        if getattr(lc, "failure", None) in UNAVAILABLE:
            skip(f"loop '{lc.path}': {lc.error}", label)
    for sub in getattr(report, "runtime_checks", {}).values():    # a check --against --runtimes
        skip_unless_compared(sub)


__all__ = ["openvino", "onnxruntime", "answer", "run", "run_named", "run_onnxruntime", "evaluate",
           "describe", "skip_unless_compared", "UNAVAILABLE", "ERROR"]
