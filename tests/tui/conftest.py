"""Run ``async def`` tests in this directory with asyncio (no pytest-asyncio/anyio needed)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time

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


@pytest.fixture(autouse=True)
def _frames_are_drawn_when_read(monkeypatch):
    """Draw the screen when a test reads it, not on each of Textual's refreshes.

    Under ``run_test`` the terminal is Textual's headless driver, which throws every frame away;
    drawing those frames (the compositor's partial updates, ~60 a second while the app works)
    was about a fifth of these tests' CPU. A test reads what reaches the terminal through
    ``screen.screen_rows`` (the compositor draws the whole screen then, from the widgets' state
    as it is) or a snapshot (``export_screenshot``: a full update, still drawn). A frame still
    reaches ``App._display`` when something changed, as an empty renderable (tests that watch
    frames hook it). So that a widget that cannot draw itself still fails its test, the last
    screen of every test is drawn in full before the app closes (``_last_frame_drawn``)."""
    try:
        from rich.segment import Segments
        from textual._compositor import Compositor
        from textual.app import App
    except ImportError:        # textual missing: the UI tests skip themselves
        return
    draw = Compositor.render_update

    def render_update(self, full=False, screen_stack=None, simplify=False):
        if full:               # a screenshot
            return draw(self, full=full, screen_stack=screen_stack, simplify=simplify)
        if not self._dirty_regions:
            return None               # as drawing does: nothing changed, no frame
        self._dirty_regions.clear()   # what drawing would have done to the compositor
        return Segments([])           # a frame (a test may watch App._display), drawn empty

    monkeypatch.setattr(Compositor, "render_update", render_update)
    monkeypatch.setattr(App, "run_test", _last_frame_drawn(App.run_test))


@pytest.fixture(autouse=True)
def _idle_is_the_ui_thread_idle(monkeypatch):
    """Textual's test ``wait_for_idle`` (after each key a test presses, twice, and in every
    ``pilot.pause``) waits until the *process* spends under 1 ms of CPU in a 20 ms sleep. While
    the engine's worker thread computes (a continue running) the process is never idle, and
    each wait lasted its 1 s limit: a second of the engine's CPU per key. The same rule here
    looks at the UI's thread only, where Textual handles every message; the engine is waited
    for by ``settle``, as before."""
    try:
        import textual.app
        import textual.pilot
        from textual import _wait
    except ImportError:        # textual missing: the UI tests skip themselves
        return

    async def wait_for_idle(min_sleep: float = _wait.SLEEP_GRANULARITY, max_sleep: float = 1):
        start = time.monotonic()
        while True:
            cpu = time.thread_time()
            await asyncio.sleep(_wait.SLEEP_GRANULARITY)
            elapsed = time.monotonic() - start
            if elapsed >= max_sleep or \
                    (elapsed > min_sleep and time.thread_time() - cpu < _wait.SLEEP_IDLE):
                return

    monkeypatch.setattr(textual.app, "wait_for_idle", wait_for_idle)
    monkeypatch.setattr(textual.pilot, "wait_for_idle", wait_for_idle)


def _last_frame_drawn(run_test):
    """``App.run_test`` that draws the whole screen once more when the test body has ended."""
    @contextlib.asynccontextmanager
    async def drawn(app, *args, **kwargs):
        async with run_test(app, *args, **kwargs) as pilot:
            yield pilot
            if app.is_running:
                await pilot.pause()
                app.screen._compositor.render_strips()
    return drawn
