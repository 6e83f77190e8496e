"""Run ``async def`` tests in this directory with asyncio (no pytest-asyncio/anyio needed)."""

from __future__ import annotations

import asyncio
import inspect

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    func = pyfuncitem.obj
    if not inspect.iscoroutinefunction(func):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(asyncio.wait_for(func(**kwargs), timeout=60))
    return True


@pytest.fixture(autouse=True)
def _internal_errors_fail_the_test(monkeypatch):
    """The UI logs an unexpected exception and goes on (loopdbg.tui.guard); a test must fail."""
    try:
        from loopdbg.tui.app import LoopdbgApp
    except ImportError:        # textual missing: the UI tests skip themselves
        return
    monkeypatch.setattr(LoopdbgApp, "RAISE_INTERNAL_ERRORS", True)
