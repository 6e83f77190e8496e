"""Make docs/screenshot.svg and docs/screenshot_life.svg, the README's pictures of the debugger.

    python tools/screenshot.py [OUT.svg [LIFE.svg]]

The TensorIterator LSTM demo stopped at the breakpoint ``i == 3`` in a 160x48 terminal, the
graph's cursor on the LSTMCell node and the heat map tab open: made with Textual's headless
driver and ``save_screenshot``, so it shows exactly what the UI draws. The second: the same run
at its end, ``mean(h); norm(c)`` plotted over the iterations in the Plot tab.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def make(out: Path, life: Path) -> None:
    from loopdbg.debug import Session
    from loopdbg.tui.app import LoopdbgApp

    demo = ROOT / "loopdbg" / "demos" / "ti_lstm"
    session = Session.open(demo / "model.xml", demo / "inputs.npz")
    session.breakpoints.add("i == 3")
    app = LoopdbgApp(session, title="demos/ti_lstm/model.xml")
    async with app.run_test(size=(160, 48)) as pilot:
        async def settle():
            for _ in range(3000):
                await pilot.pause(0.01)
                if not app.busy and not app.graph.laying_out:
                    return
        await settle()
        await pilot.press("c")
        await settle()
        app.graph.find("cell")
        app.query_one("#tabs").active = "tab-scan"
        await pilot.pause(0.5)
        app.save_screenshot(filename=out.name, path=str(out.parent))
        await pilot.press("c")
        await settle()
        app.query_one("#plot").set_expressions(["mean(h)", "norm(c)"])
        app.query_one("#tabs").active = "tab-plot"
        await pilot.pause(0.5)
        app.save_screenshot(filename=life.name, path=str(life.parent))


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshot.svg"
    life = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs" / "screenshot_life.svg"
    asyncio.run(make(target.resolve(), life.resolve()))
    print(target, life)
