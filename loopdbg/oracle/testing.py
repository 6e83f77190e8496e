"""For test suites: OpenVINO and onnxruntime as oracles that skip, never kill, when they fail.

A test that consults a runtime and finds it missing, crashed (a CPU plugin's SIGFPE), hung or out
of memory is *skipped with that reason*; a loopdbg result that disagrees with a working runtime
still fails. pytest is imported only when a skip is due.

    from loopdbg.oracle import testing as ovt
    outputs = ovt.run(xml_path, [x, y])          # pytest.skip(...) if OpenVINO cannot answer
    outputs = ovt.run_onnxruntime(onnx_path, {"x": x})      # the same through onnxruntime
    ovt.skip_unless_compared(report)             # for a loopdbg.check report

Many small models can be answered in one request (a compile costs ~30 ms however small the
model; compiled together, a hundred cost a few ms each): ``with ovt.recording() as asked:`` makes
``run`` and ``evaluate`` note what they are asked and answer None; ``answer_batch(asked)`` then
asks OpenVINO all of it at once, and each answer waits for the same request (the same model, up
to its node names, and the same inputs) to come again, which it answers without a round trip.
A request the batch could not answer (a crash, an error) is asked alone when it comes, so a crash
still skips only the test whose model causes it. tests/unit/_ov_batch.py drives this.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from loopdbg import programs
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
        what: str = "the model", alone: bool = False) -> list[np.ndarray] | None:
    """OpenVINO CPU's outputs for the model file on ``values`` (in order, or by input name);
    None while ``recording``. ``alone``: not an answer a batch prepared."""
    if _recorded("run", path, values):
        return None
    prepared = _prepared("run", path, values, alone)
    return run_named(path, values, what)[0] if prepared is None else prepared


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


def evaluate(path: str | Path, values: Sequence[np.ndarray], what: str = "the model",
             alone: bool = False):
    """The outputs of OpenVINO's reference implementations (``Node.evaluate``), node by node;
    None while ``recording``. ``alone``: not an answer a batch prepared."""
    if _recorded("evaluate", path, values):
        return None
    prepared = _prepared("evaluate", path, values, alone)
    if prepared is not None:
        return prepared
    ov = openvino()
    return answer(ov.evaluate, path, list(values), what)


# -- many requests in one ------------------------------------------------------------------------
BATCH_SIZE = 64          # models per request: a crash loses at most these answers
_ASKED: list[list] = []              # the requests being recorded (innermost recording last)
_ANSWERS: dict[str, list[np.ndarray]] = {}
_FROM_BATCH: set[str] = set()        # the paths whose latest answer came from a batch
_NAMES = re.compile(rb'\s(?:name|names|output_names)="[^"]*"')


@contextlib.contextmanager
def recording():
    """While it lasts, ``run`` and ``evaluate`` answer None and note each request in the list
    this yields, with a copy of its model (a test may write the next model over it); a request
    fed by input name, or of a model not in IR, is not noted (it is asked alone when it comes).
    ``answer_batch`` is to be called before it ends."""
    asked: list = []
    with tempfile.TemporaryDirectory(prefix="loopdbg-batch-") as folder:
        _ASKED.append((asked, Path(folder)))
        try:
            yield asked
        finally:
            _ASKED.pop()


def answer_batch(asked: Sequence[tuple]) -> int:
    """Ask OpenVINO the recorded requests, ``BATCH_SIZE`` to a request; each answer is kept for
    the same request to come (answers kept before are dropped). How many were answered; a batch
    the child could not answer (a crash: its cases will be asked one by one) answers none."""
    _ANSWERS.clear()
    ov = None
    for start in range(0, len(asked), BATCH_SIZE):
        chunk = asked[start:start + BATCH_SIZE]
        try:
            ov = ov or openvino()
            answers = ov.batch([(kind, path, values) for kind, path, values, _ in chunk])
        except (OracleFailure, _skip_exception()):
            continue
        for (_, _, _, key), answer in zip(chunk, answers):
            if not isinstance(answer, str):
                _ANSWERS[key] = answer
    return len(_ANSWERS)


def from_batch(path: str | Path) -> bool:
    """Whether the latest answer for the model at ``path`` came from a batch (a test that finds
    it wrong may ask again alone, ``run(..., alone=True)``: the answer a model gets compiled
    with others should be the same; this keeps a test from failing if it is not)."""
    return programs.absolute(path) in _FROM_BATCH


def _recorded(kind: str, path, values) -> bool:
    if not _ASKED:
        return False
    asked, folder = _ASKED[-1]
    path = Path(path)
    if isinstance(values, Mapping) or path.suffix != ".xml":
        return True
    values = [np.asarray(v) for v in values]
    copy = folder / f"{len(asked)}.xml"
    shutil.copyfile(path, copy)
    if path.with_suffix(".bin").exists():
        shutil.copyfile(path.with_suffix(".bin"), copy.with_suffix(".bin"))
    asked.append((kind, copy, values, _key(kind, copy, values)))
    return True


def _prepared(kind: str, path, values, alone: bool):
    where = programs.absolute(path)
    _FROM_BATCH.discard(where)
    if not _ANSWERS or alone or isinstance(values, Mapping):
        return None
    try:
        answer = _ANSWERS.pop(_key(kind, path, values))
    except (KeyError, OSError):
        return None
    _FROM_BATCH.add(where)
    return answer


def _key(kind: str, path, values) -> str:
    """The request's identity: the model file as written but for node and tensor names (which
    builders number by a process-wide counter), its weights, and the inputs."""
    h = hashlib.sha256(kind.encode())
    path = Path(path)
    text = path.read_bytes()
    h.update(_NAMES.sub(b"", text) if path.suffix == ".xml" else text)
    if path.suffix == ".xml" and path.with_suffix(".bin").exists():
        h.update(path.with_suffix(".bin").read_bytes())
    for v in values:
        v = np.ascontiguousarray(v)
        h.update(f"{v.dtype.str}{v.shape}".encode())
        h.update(v.tobytes())
    return h.hexdigest()


def _skip_exception():
    import pytest
    return pytest.skip.Exception


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
           "describe", "skip_unless_compared", "recording", "answer_batch", "from_batch",
           "UNAVAILABLE", "ERROR"]
