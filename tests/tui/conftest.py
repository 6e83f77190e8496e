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
def _idle_is_the_app_idle(monkeypatch):
    """Textual's test ``wait_for_idle`` (twice after each key a test presses, and in every
    ``pilot.pause``) sleeps 20 ms at a time until the *process* spent under 1 ms of CPU in one:
    at least 40 ms of sleep per key, and its 1 s limit while the engine's thread computes. The
    same rule on the UI thread's CPU alone still slept 40-60 ms a key, and under load (its
    thread's CPU spread over more wall time) often reached the limit. Here the wait looks at the app itself (``_app_busy``) and returns as soon as nothing in it is
    left to do, which is seldom more than a few yields of the event loop. The engine's thread
    and the graph's layout thread are waited for by ``settle`` (screen.py), as before."""
    try:
        import textual.app
        import textual.pilot
    except ImportError:        # textual missing: the UI tests skip themselves
        return
    monkeypatch.setattr(textual.app, "wait_for_idle", wait_for_idle)
    monkeypatch.setattr(textual.pilot, "wait_for_idle", wait_for_idle)


BUSY_POLL = 0.001      # s between two looks while the app waits on a thread, a timer or I/O
SLEEP_GRANULARITY = 1 / 50    # textual._wait's, the default minimum of its wait_for_idle
SCREEN_UPDATE = "the screen's update"


async def wait_for_idle(min_sleep: float = SLEEP_GRANULARITY, max_sleep: float = 1.0) -> None:
    """Return when the app under test (the active app of the calling task) has been idle at
    two looks in a row, one turn of the event loop apart, and ``min_sleep`` s have passed
    (Textual's minimum, 0 after a key and in ``pilot.pause``); after ``max_sleep`` s at the
    latest while it stays busy (Textual's limit). Between the two looks the event loop runs
    once, ready callbacks, due timers and I/O alike: what is idle at both stays idle until a
    timer, a thread or I/O gives it something new (the engine's thread and the graph's layout
    are ``settle``'s to wait for).

    An update of the screen that is due (a repaint, a layout) is the last thing an idle app
    does: its timer would run it within 1/60 s. It is run at once, as ``pilot.pause`` does
    after its wait (``Screen._on_timer_update``), and the looks start again."""
    from textual import _wait
    from textual._context import active_app

    app = active_app.get(None)
    if app is None:            # not inside run_test: Textual's own rule
        await _wait.wait_for_idle(min_sleep, max_sleep)
        return
    loop = asyncio.get_running_loop()
    start = time.monotonic()
    quiet = 0
    why = None
    while True:
        # ``loop._ready`` (private to asyncio): the callbacks ready to run; sleep(0) lets them
        # run first. With none, the app waits on a timer, an animation or a thread: a short
        # sleep instead of spinning.
        waiting = (why is not None or quiet >= 2) and not loop._ready
        await asyncio.sleep(BUSY_POLL if waiting else 0)
        elapsed = time.monotonic() - start
        why = _app_busy(app, loop)
        if why is None:
            quiet += 1
            if quiet >= 2 and elapsed >= min_sleep:
                return
            continue
        quiet = 0
        if elapsed >= max_sleep:
            return
        if why == SCREEN_UPDATE:
            app.screen._on_timer_update()


def _app_busy(app, loop) -> str | None:
    """What the app still has to do, or None when it is idle. Uses private attributes of
    asyncio and Textual 8 (read only), for want of public ones:

    - ``loop._ready``, ``loop._scheduled``: callbacks ready to run, timers due;
    - per message pump (the app, each screen of the stack and its widgets): ``_task`` (the
      pump's loop), ``_message_queue`` (Textual's queue; a pump waiting for a message waits
      on its ``ready_event``, an asyncio Event whose ``_waiters`` hold the future its task
      awaits: ``Task._fut_waiter``), ``_pending_message``, ``_next_callbacks``; a pump whose
      task awaits anything else is inside a handler;
    - ``App.animator._animations``/``_scheduled``, ``App._resize_event`` (a resize not yet
      sent to the screens), ``App._batch_count``;
    - the screen's ``_layout_required``, ``_scroll_required``, ``_repaint_required``,
      ``_recompose_required``, ``_dirty_widgets``: an update its timer will run."""
    if loop._ready:
        return "a callback ready to run"
    due = loop.time() + loop._clock_resolution
    if any(handle.when() <= due and not handle.cancelled() for handle in loop._scheduled):
        return "a timer due"
    if not app.is_running:
        return None
    if app.animator._animations or app.animator._scheduled:
        return "an animation"
    if app._resize_event is not None:
        return "a resize"
    try:
        stack = list(app.screen_stack)
    except Exception:  # noqa: BLE001 - no screen yet or any more: the pumps tell
        stack = []
    pumps = [app]
    for screen in stack:
        pumps.extend(screen.walk_children(with_self=True))
    for pump in pumps:
        task = pump._task
        if task is None or task.done():
            continue                   # not started, or closed
        if pump._pending_message is not None or pump._next_callbacks:
            return f"{pump!r} has messages"
        queue = pump._message_queue
        if not queue.empty():
            return f"{pump!r} has messages"
        if task._fut_waiter is None or task._fut_waiter not in queue.ready_event._waiters:
            return f"{pump!r} is handling a message"
    if stack and not app._batch_count:
        screen = stack[-1]
        if screen._layout_required or screen._scroll_required or screen._repaint_required \
                or screen._recompose_required or screen._dirty_widgets:
            return SCREEN_UPDATE
    return None


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
