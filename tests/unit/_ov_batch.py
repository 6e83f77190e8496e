"""The cases of a single-op oracle test asked of OpenVINO together, each still compared alone.

A compile in OpenVINO's CPU plugin costs ~30 ms however small the model, and the single-op tests
(``_ov_single_op.check``, ``_ov_ir_op.check_ir``) compile one model per case, thousands in all.
For a test function marked ``oracle`` in a module marked ``ov_batch``, before its first case runs, every case of it
still to run here is run once *recording* (``loopdbg.oracle.testing.recording``): its body builds
its models and inputs as it will for real, but ``ovt.run``/``ovt.evaluate`` only note them (and
``check`` compares nothing). The notes go to OpenVINO's child in a few requests, each compiling
its models as one; then the cases run for real, and each finds the answer to its own model and
inputs (the same request, byte for byte but for node names) without a round trip. What the batch
could not answer (a crash, an error), or a case that builds something else when it runs (it drew
other random numbers), is asked alone as before: a crash still skips only its own case, with its
reason, and a wrong kernel still fails exactly the case that uses it.

The module-level random generators are put back as they were before the recording, so each case
draws for real what it drew while recorded. Under pytest-xdist, the cases of one function are one
``xdist_group`` (``mark_groups``): they run on one worker, one after the other.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest

from loopdbg.oracle import testing as ovt

MARK = "ov_batch"
_RECORDED: set[str] = set()          # node ids recorded once (never twice: a miss is asked alone)
_OUTCOMES = (Exception, pytest.skip.Exception, pytest.fail.Exception, pytest.xfail.Exception)


def mark_groups(items) -> None:
    """Each function's cases one xdist group (they share their batch), unless grouped already."""
    for item in items:
        if _batched(item) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(f"ov-{_function_key(item)}"))


def prefetch(item, fixtures: dict) -> None:
    """Record the cases of ``item``'s function from ``item`` on and ask their requests in batches.
    ``fixtures``: a factory per fixture the bodies may take besides ``tmp_path`` and parameters."""
    if item.nodeid in _RECORDED or not _batched(item):
        return
    key = _function_key(item)
    items = item.session.items
    cases = list(itertools.takewhile(lambda it: _function_key(it) == key,
                                     items[items.index(item):]))
    cases = [it for it in cases if it.nodeid not in _RECORDED]
    _RECORDED.update(it.nodeid for it in cases)
    names = list(inspect.signature(item.function).parameters)
    if getattr(item, "cls", None) is not None or any(
            n not in fixtures and n != "tmp_path" and n not in _params(item) for n in names):
        return                           # a body this cannot call: each case asks alone
    state = _random_state(item.module)
    try:
        with ovt.recording() as asked, tempfile.TemporaryDirectory(prefix="ov-batch-") as tmp:
            for k, case in enumerate(cases):
                params = copy.deepcopy(_params(case))     # a body may change its own
                kwargs = {n: params[n] if n in params else
                          _tmp(tmp, k) if n == "tmp_path" else fixtures[n]() for n in names}
                try:
                    case.function(**kwargs)
                except _OUTCOMES:        # its real run says what is wrong; draws stay aligned
                    pass
            ovt.answer_batch(asked)
    finally:
        _restore(state)


def _batched(item) -> bool:
    return bool(item.get_closest_marker(MARK) and item.get_closest_marker("oracle"))


def _function_key(item) -> str:
    return f"{Path(str(item.path)).stem}.{getattr(item, 'originalname', item.name)}"


def _params(item) -> dict:
    callspec = getattr(item, "callspec", None)
    return callspec.params if callspec is not None else {}


def _tmp(root: str, k: int) -> Path:
    path = Path(root) / str(k)
    path.mkdir()
    return path


def _random_state(module) -> list:
    """How to put back every random generator the module's cases draw from."""
    saved = [(random.setstate, random.getstate()), (np.random.set_state, np.random.get_state())]
    for value in vars(module).values():
        if isinstance(value, np.random.Generator):
            saved.append((_setter(value.bit_generator), copy.deepcopy(value.bit_generator.state)))
        elif isinstance(value, np.random.RandomState):
            saved.append((value.set_state, value.get_state()))
    return saved


def _setter(bit_generator):
    def put(state):
        bit_generator.state = state
    return put


def _restore(saved: list) -> None:
    for put, state in saved:
        put(state)
