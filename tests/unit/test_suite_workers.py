"""``-n auto`` (the README's test command) starts one pytest-xdist worker more than the cores
(tests/conftest.py ``pytest_xdist_auto_num_workers``): the UI tests' waits leave a core idle."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("xdist")


def _auto(pytestconfig) -> int:
    return pytestconfig.pluginmanager.hook.pytest_xdist_auto_num_workers(config=pytestconfig)


def test_auto_is_one_worker_more_than_the_cores_this_process_may_use(pytestconfig, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert _auto(pytestconfig) == len(os.sched_getaffinity(0)) + 1


def test_the_variable_pytest_xdist_reads_still_decides(pytestconfig, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    assert _auto(pytestconfig) == 5
