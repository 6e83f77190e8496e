"""``loopdbg serve``: the debugger served to browsers by textual-serve.

* The command each tab runs is isolated (``python -I``), names files by absolute path, and survives
  the shell textual-serve hands it to (a path with spaces, quotes or ``$(...)``).
* A served demo draws the debugger over the page's websocket and answers a key; two tabs are two
  sessions (stepping in one leaves the other where it was).
* In headless Chromium (Debian's ``chromium``; skipped where it is not installed), the page shows
  the debugger and a key changes what it shows.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("textual_serve", reason="the serve extra (textual-serve) is not installed")
aiohttp = pytest.importorskip("aiohttp")
pyte = pytest.importorskip("pyte", reason="pyte (the dev extra's terminal emulator) is missing")

from loopdbg.cli import build_parser  # noqa: E402
from loopdbg.cli.cmd_serve import session_command  # noqa: E402
from loopdbg.errors import LoopdbgError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def parse(*argv):
    return build_parser().parse_args(["serve", *argv])


def test_the_tab_command_is_isolated_absolute_and_shell_safe(tmp_path):
    folder = tmp_path / "a b $(touch pwned) 'q'"
    folder.mkdir()
    model = folder / "model.xml"
    shutil.copy(ROOT / "loopdbg/demos/while_loop/model.xml", model)
    shutil.copy(ROOT / "loopdbg/demos/while_loop/model.bin", folder / "model.bin")
    os.chdir(folder)
    argv, label = session_command(parse("model.xml"))
    assert argv[:2] == [sys.executable, "-I"]          # isolated, as every child of loopdbg
    assert argv[argv.index("loopdbg") + 1] == "open"
    assert str(model) in argv and "--web" in argv
    assert shlex.split(shlex.join(argv)) == argv
    assert label == "model.xml"
    assert not (folder / "pwned").exists()


def test_serve_says_what_is_missing(tmp_path):
    with pytest.raises(LoopdbgError, match="a MODEL, or --demo"):
        session_command(parse())
    with pytest.raises(LoopdbgError, match="no such file"):
        session_command(parse(str(tmp_path / "absent.xml")))
    with pytest.raises(LoopdbgError, match="there is no demo"):
        session_command(parse("--demo", "nope"))
    with pytest.raises(LoopdbgError, match="not both"):
        session_command(parse("m.xml", "--demo"))


def test_a_bad_port_is_a_usage_error():
    proc = subprocess.run([sys.executable, "-m", "loopdbg", "serve", "--demo", "--port", "99999"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "not a port number" in proc.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "loopdbg", "serve", "--demo", "while_loop",
                             "--port", str(port)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"loopdbg serve ended: {proc.stderr.read()}")
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("loopdbg serve did not listen within 60 s")
    yield f"127.0.0.1:{port}", proc
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


class Tab:
    """A browser tab as the page's script is one: the websocket and a terminal screen (pyte)
    that the session's output is played on."""

    def __init__(self, ws, width: int, height: int):
        self.ws = ws
        self.screen = pyte.Screen(width, height)
        self.stream = pyte.ByteStream(self.screen)

    @property
    def text(self) -> str:
        return "\n".join(self.screen.display)

    async def until(self, pattern: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} never came; the screen said:\n{self.text}")
            try:
                msg = await self.ws.receive(timeout=min(left, 5))
            except asyncio.TimeoutError:
                continue
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.stream.feed(msg.data)
            elif msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                raise AssertionError(f"the session closed; it said:\n{self.text}")
        return self.text

    async def key(self, key: str) -> None:
        await self.ws.send_str(json.dumps(["stdin", key]))


@pytest.mark.long
def test_each_tab_is_its_own_session(server):
    address, _ = server

    async def main():
        async with aiohttp.ClientSession() as http:
            page = await (await http.get(f"http://{address}/")).text()
            assert "loopdbg" in page
            url = f"ws://{address}/ws?width=120&height=36"
            async with http.ws_connect(url) as ws1, http.ws_connect(url) as ws2:
                one, two = Tab(ws1, 120, 36), Tab(ws2, 120, 36)
                # the back-edge table's x_next: 2, 4, 8, ... at iterations 0, 1, 2
                await one.until(r"x ← x_next +\(1,\) +float32 +2 ")     # each opens at iteration 0
                await two.until(r"x ← x_next +\(1,\) +float32 +2 ")
                await one.key("n")
                await one.until(r"x ← x_next +\(1,\) +float32 +4 ")
                await one.key("n")
                await one.until(r"x ← x_next +\(1,\) +float32 +8 ")
                await two.key("n")      # the second tab steps its own session: to 1, not 3
                await two.until(r"x ← x_next +\(1,\) +float32 +4 ")
                assert not re.search(r"x ← x_next +\(1,\) +float32 +16 ", two.text)

    asyncio.run(main())


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                               "(.ci/setup installs it with apt-get)")
@pytest.mark.long
def test_in_a_real_browser_the_debugger_is_drawn_and_answers_a_key(server, tmp_path):
    from PIL import Image, ImageChops

    address, _ = server
    profile = tmp_path / "profile"
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-quic",
         # the page draws the terminal with WebGL: Chromium's software GL, no GPU needed
         "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--remote-debugging-port=0", f"--user-data-dir={profile}",
         "--window-size=1280,800", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            assert time.monotonic() < deadline, "chromium did not start its DevTools endpoint"
            time.sleep(0.2)
        devtools = int(port_file.read_text().split()[0])
        shots = asyncio.run(_drive(devtools, f"http://{address}/", tmp_path))
    finally:
        browser.kill()
        browser.wait()
    (tmp_path / "before.png").write_bytes(shots[0])
    (tmp_path / "after.png").write_bytes(shots[1])
    before, after = (Image.open(io.BytesIO(s)).convert("RGB") for s in shots)
    assert drawn(before), f"the debugger never appeared (see {tmp_path / 'before.png'})"
    assert len(before.getcolors(1 << 20) or []) > 8, "the page is drawn in one colour"
    assert ImageChops.difference(before, after).getbbox() is not None, \
        "pressing n changed nothing on the page"


def drawn(image) -> bool:
    """The debugger's screen, not textual-serve's intro: mostly the UI's black background
    (the intro is dark blue-grey all over)."""
    black = sum(n for n, rgb in image.getcolors(1 << 20) or [] if max(rgb) < 8)
    return black > 0.3 * image.width * image.height


async def _drive(devtools: int, url: str, folder: Path) -> list[bytes]:
    async with aiohttp.ClientSession() as http:
        pages = await (await http.get(f"http://127.0.0.1:{devtools}/json/list")).json()
        target = next(p for p in pages if p.get("type") == "page")
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            ids = iter(range(1, 1 << 30))

            async def call(method, **params):
                n = next(ids)
                await ws.send_json({"id": n, "method": method, "params": params})
                while True:
                    msg = json.loads((await ws.receive(timeout=60)).data)
                    if msg.get("id") == n:
                        return msg.get("result", {})

            async def shot() -> bytes:
                return base64.b64decode((await call("Page.captureScreenshot", format="png"))["data"])

            async def settled(ready=lambda png: True) -> bytes:
                last, same = b"", 0
                for _ in range(180):    # until it is ready and three screenshots in a row agree
                    await asyncio.sleep(0.5)
                    now = await shot()
                    same = same + 1 if now == last and ready(now) else 0
                    if same >= 2:
                        return now
                    last = now
                return last

            def debugger_drawn(png: bytes) -> bool:
                from PIL import Image
                return drawn(Image.open(io.BytesIO(png)).convert("RGB"))

            await call("Page.enable")
            await call("Page.navigate", url=url)
            before = await settled(debugger_drawn)
            await call("Runtime.evaluate", expression="document.querySelector('.textual-terminal')"
                                                      "?.querySelector('textarea')?.focus()")
            for kind in ("keyDown", "keyUp"):
                await call("Input.dispatchKeyEvent", type=kind, key="n", code="KeyN",
                           text="n" if kind == "keyDown" else "", windowsVirtualKeyCode=78)
            after = await settled()
            return [before, after]
