"""The UI targets of tests/benchmark.py (issue 18, item 8), measured on the real app.

    python tests/benchmark_ui.py          # the UI rows alone (tests/benchmark.py runs them too)
    python tests/benchmark_ui.py --grouped   # only the rows of a ~3,000-layer grouped body

Key to screen: from the key's action starting (what a key press calls) to the first frame the
compositor produces after every panel has been shown the new stop, through the engine thread
and back. Measured with Textual's headless driver, so the time to write the frame to a real
terminal is not included (a few ms for a full 160x48 frame). Each case reports the best of five
presses, and the CPU time the process spent in that interval (engine thread included): on a
shared machine the wall clock also counts the neighbours, the CPU time does not.

First frame and quit are measured on a real process in a pseudo-terminal: ``loopdbg MODEL``
until the footer is on the screen, and ``q`` until the process has ended.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import asynccontextmanager
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "tui"))

DEMOS = ROOT / "loopdbg" / "demos"
CORPUS = ROOT / "tests" / "corpus"
SIZE = (160, 48)
KEY_TARGET = 0.050


def _timed_app(session):
    """A LoopdbgApp that notes when a key's action starts and when the next frame is made."""
    from loopdbg.tui.app import LoopdbgApp

    marks: dict[str, float] = {}

    class Timed(LoopdbgApp):
        def action_command(self, name):
            marks["key"] = time.perf_counter()
            marks["key_cpu"] = time.process_time()
            marks.pop("drawn", None)
            super().action_command(name)

        def refresh_all(self, stop):
            super().refresh_all(stop)
            marks["shown"] = time.perf_counter()

        def _display(self, screen, renderable):
            super()._display(screen, renderable)
            if renderable is not None and "shown" in marks and "drawn" not in marks:
                marks["drawn"] = time.perf_counter()
                marks["drawn_cpu"] = time.process_time()

    return Timed(session, title="bench"), marks


@asynccontextmanager
async def _started(session):
    """The timed app on ``session``, run headless until its first frame: (app, marks, pilot,
    seconds to that frame)."""
    t0 = time.perf_counter()
    app, marks = _timed_app(session)
    async with app.run_test(size=SIZE) as pilot:
        while app.busy or "drawn" not in marks:
            await pilot.pause(0.002)
        yield app, marks, pilot, marks["drawn"] - t0


async def _press_times(app, marks, pilot, key: str, presses: int) -> list[tuple[float, float]]:
    """(key-to-screen s, its CPU s) of each of ``presses`` presses of ``key``."""
    times = []
    for _ in range(presses):
        before = app.last_stop
        marks.pop("shown", None)
        await pilot.press(key)
        while app.busy or app.last_stop is before or "drawn" not in marks:
            await pilot.pause(0.001)
        times.append((marks["drawn"] - marks["key"], marks["drawn_cpu"] - marks["key_cpu"]))
    return times


async def _keys(session, key: str = "n", presses: int = 5) -> tuple[float, float, float]:
    """(first screen s, key-to-screen s, its CPU s): the best of ``presses`` presses (as
    tests/benchmark.py takes the best of its repeats: the neighbours only ever add)."""
    async with _started(session) as (app, marks, pilot, first):
        times = await _press_times(app, marks, pilot, key, presses)
    best = min(times)
    return first, best[0], best[1]


def _session(case: str):
    from loopdbg.debug import Session
    from loopdbg.engine import Engine

    if case == "1 MiB state":                  # tests/perf's loop_big_state_200
        import benchmark_cases
        model, inputs, _, _ = benchmark_cases.load("loop_big_state_200")
        return Session(Engine(model), inputs)
    if case == "100-node converted body":
        import tempfile

        from bigbody import big_body_model
        xml, npz = big_body_model(Path(tempfile.mkdtemp(prefix="loopdbg-bench-")))
        return Session.open(xml, npz)
    base = DEMOS / case if (DEMOS / case).is_dir() else CORPUS / case
    return Session.open(base / "model.xml", base / "inputs.npz")


async def _screen_time(session, key: str, ready) -> float:
    """Seconds from pressing ``key`` to the first frame where ``ready(app)`` holds."""
    app, marks = _timed_app(session)
    async with app.run_test(size=SIZE) as pilot:
        while app.busy or "drawn" not in marks:
            await pilot.pause(0.002)
        drawn = []
        original = app._display

        def display(screen, renderable):
            original(screen, renderable)
            if renderable is not None and ready(app) and not drawn:
                drawn.append(time.perf_counter())
        app._display = display
        t0 = time.perf_counter()
        await pilot.press(key)
        while not drawn:
            await pilot.pause(0.001)
        return drawn[0] - t0


def _inspect_ready(app) -> bool:
    views = app.query("#inspect-view")      # none before the Inspector's tab is first shown
    return bool(views) and \
        "shape (256, 1024)" in str(getattr(views.first().content, "plain", views.first().content))


async def _inspect_time(session) -> float:
    app, marks = _timed_app(session)
    async with app.run_test(size=SIZE) as pilot:
        while app.busy or "drawn" not in marks:
            await pilot.pause(0.002)
        drawn = []
        original = app._display

        def display(screen, renderable):
            original(screen, renderable)
            if renderable is not None and _inspect_ready(app) and not drawn:
                drawn.append(time.perf_counter())
        app._display = display
        t0 = time.perf_counter()
        app.show_value("body_h")             # the 1 MiB state (loop_big_state_200's back edge)
        while not drawn:
            await pilot.pause(0.001)
        return drawn[0] - t0


def _process_times(model: Path) -> tuple[float, float]:
    """(first frame s, quit s) of ``loopdbg MODEL`` in a pseudo-terminal."""
    import pty
    import select
    import struct

    import fcntl
    import termios

    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "loopdbg", str(model)])
    t0 = time.perf_counter()
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    out = bytearray()

    def read(until: float) -> None:
        while time.perf_counter() < until:
            ready, _, _ = select.select([fd], [], [], 0.01)
            if ready:
                try:
                    out.extend(os.read(fd, 65536))
                except OSError:
                    return

    first = None
    while first is None and time.perf_counter() - t0 < 30:
        read(time.perf_counter() + 0.01)
        if b"palette" in out:                       # the footer: the first full frame
            first = time.perf_counter() - t0
    read(time.perf_counter() + 1.0)
    os.write(fd, b"q")
    t1 = time.perf_counter()
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        read(time.perf_counter() + 0.005)
    quit_time = time.perf_counter() - t1
    os.close(fd)
    return first if first is not None else float("inf"), quit_time


def ui_rows(rows) -> None:
    def ms(t: float) -> str:
        return f"{t * 1e3:.0f} ms"

    demos = sorted(p.name for p in DEMOS.iterdir() if (p / "model.xml").exists())
    worst = (0.0, 0.0, "")
    for name in demos:
        _, key, cpu = asyncio.run(_keys(_session(name)))
        if key > worst[0]:
            worst = (key, cpu, name)
    rows.append((f"UI: key n to screen, slowest of {len(demos)} demos ({worst[2]})",
                 ms(worst[0]), f"{ms(worst[1])} CPU", "", "< 50 ms", worst[0] < KEY_TARGET))
    for case in ("ti_lstm_forward", "ti_gru", "1 MiB state", "100-node converted body"):
        first, key, cpu = asyncio.run(_keys(_session(case)))
        rows.append((f"UI: key n to screen, {case}", ms(key), f"{ms(cpu)} CPU", "", "< 50 ms",
                     key < KEY_TARGET))
        rows.append((f"UI: first screen in process, {case}", ms(first), "", "", "< 1000 ms",
                     first < 1.0))
    t = asyncio.run(_screen_time(_session("for_loop"), "question_mark",
                                 lambda app: app.screen.has_class("show-help")))
    rows.append(("UI: ? to the help screen", ms(t), "", "", "< 100 ms", t < 0.1))
    t = min(asyncio.run(_inspect_time(_session("1 MiB state"))) for _ in range(3))   # best of
    rows.append(("UI: inspect the 1 MiB state", ms(t), "", "", "< 100 ms", t < 0.1))  # 3, as keys
    first, quit_time = _process_times(DEMOS / "for_loop" / "model.xml")
    rows.append(("UI: loopdbg MODEL to its first frame (process)", ms(first), "", "",
                 "< 1000 ms", first < 1.0))
    rows.append(("UI: q to the end of the process", ms(quit_time), "", "", "< 1000 ms",
                 quit_time < 1.0))


async def _grouped_times(session) -> tuple[float, float, float, float, float]:
    """On a big body: (first frame s, grouped graph on screen s, key n s, opening a group s,
    opening a group the cursor rested on s)."""
    from loopdbg.tui.widgets.graph import GraphView

    t0 = time.perf_counter()
    async with _started(session) as (app, marks, pilot, first):
        graph = app.query_one(GraphView)
        while not any("▸ blocks." in line for line in graph._lines):
            await pilot.pause(0.002)
        grouped = time.perf_counter() - t0
        while graph.laying_out:
            await pilot.pause(0.002)
        times = [wall for wall, _ in await _press_times(app, marks, pilot, "n", 3)]
        graph.focus()
        body = graph._body(graph._spec)
        group = body.groups.ids[("blocks.7",)]
        graph.select(group)
        await pilot.pause()
        opened = await _open_time(pilot, graph, "blocks.7")
        # a group the cursor rested on (its picture laid out meanwhile, as while a person reads)
        await pilot.press("escape")
        graph.select(body.groups.ids[("blocks.9",)])
        while graph.laying_out:
            await pilot.pause(0.002)
        rested = await _open_time(pilot, graph, "blocks.9")
    return first, grouped, min(times), opened, rested


async def _open_time(pilot, graph, name: str) -> float:
    """Seconds from Enter on group ``name`` to the first frame with its picture on the screen
    (what a person waits for; laying out ahead for the next group, which starts once that
    frame is drawn, is not counted)."""
    app = pilot.app
    drawn: list[float] = []
    original = app._display

    def opened() -> bool:
        return "(laying out" not in str(graph.border_title) and \
            any(f"▾ {name} · " in line for line in graph._lines)

    def display(screen, renderable):
        original(screen, renderable)
        if renderable is not None and not drawn and opened():
            drawn.append(time.perf_counter())
    app._display = display
    try:
        t1 = time.perf_counter()
        await pilot.press("enter")
        while not drawn:
            await pilot.pause(0.001)
    finally:
        app._display = original
    return drawn[0] - t1


def grouped_rows(rows) -> None:
    """Issue 28: a decoder-like body of ~3,000 layers, drawn by its groups."""
    import subprocess
    import tempfile

    from bigbody import decoder_model
    from loopdbg.debug import Session

    def ms(t: float) -> str:
        return f"{t * 1e3:.0f} ms"

    xml, npz = decoder_model(Path(tempfile.mkdtemp(prefix="loopdbg-bench-")), blocks=34,
                             extra=52, d=8, steps=4)
    t0 = time.perf_counter()
    session = Session.open(xml, npz)
    opened = time.perf_counter() - t0
    spec = next(iter(session.engine.loops.values()))
    what = f"{len(spec.body.graph.layers)}-layer body"
    first, grouped, key, open_group, rested = asyncio.run(_grouped_times(session))
    rows.append((f"UI: first frame, {what} (+{ms(opened)} opening)", ms(first), "", "",
                 "< 1500 ms", first < 1.5))
    rows.append((f"UI: grouped graph on screen, {what}", ms(grouped), "", "", "< 3000 ms",
                 grouped < 3.0))
    rows.append((f"UI: key n to screen, {what}", ms(key), "", "", "< 100 ms", key < 0.1))
    rows.append((f"UI: opening a group, {what}", ms(open_group), "", "", "< 300 ms",
                 open_group < 0.3))
    rows.append((f"UI: opening a group the cursor rested on, {what}", ms(rested), "", "",
                 "< 300 ms", rested < 0.3))
    out = Path(tempfile.mkdtemp(prefix="loopdbg-bench-")) / "body.svg"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "loopdbg", "graph", str(xml), "-o", str(out)],
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    t = time.perf_counter() - t0 if proc.returncode == 0 else float("inf")
    rows.append((f"loopdbg graph to SVG, {what}", ms(t), "", "", "< 10000 ms", t < 10.0))


def main() -> int:
    rows: list[tuple] = []
    if "--grouped" not in sys.argv:
        ui_rows(rows)
    grouped_rows(rows)
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'loopdbg':>10}  {'beside':>12}  {'target':>10}  ok")
    for name, a, b, _, target, ok in rows:
        print(f"{name:<{width}}  {a:>10}  {b:>12}  {target:>10}  {'yes' if ok else 'NO'}")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
