"""Fixtures shared by the unit tests."""

from __future__ import annotations

import importlib

import _ov_batch
import pytest


class _OpenVINOKit(dict):
    """What the single-operation oracle tests use, by key: ``"o7"`` is ``openvino.opset7``
    (imported on first use), ``"C"``/``"P"``/``"check"`` come from ``_ov_single_op`` and
    ``"check_ir"`` from ``_ov_ir_op``."""

    def __missing__(self, key: str):
        if key.startswith("o") and key[1:].isdigit():
            value = importlib.import_module(f"openvino.opset{key[1:]}")
        elif key == "check_ir":
            value = importlib.import_module("_ov_ir_op").check_ir
        else:
            raise KeyError(key)
        self[key] = value
        return value


def _openvino_kit() -> _OpenVINOKit:
    pytest.importorskip("openvino")
    from _ov_single_op import C, P, check
    return _OpenVINOKit(C=C, P=P, check=check)


@pytest.fixture(scope="session")
def ovm():
    """OpenVINO's opset factories and the single-op checks (skips without OpenVINO)."""
    return _openvino_kit()


@pytest.hookimpl(tryfirst=True)     # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    _ov_batch.mark_groups(items)


def pytest_runtest_setup(item):
    # the cases of a single-op oracle test asked of OpenVINO together (_ov_batch.py)
    _ov_batch.prefetch(item, {"ovm": _openvino_kit})
