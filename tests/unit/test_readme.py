"""The README's Python examples run as written (on the bundled demo)."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_python_blocks_run(capsys):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in blocks:
            exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    finally:
        os.chdir(cwd)
    assert "stopped: breakpoint 1 (i == 3) in loop doubling at iteration 3" in capsys.readouterr().out


def test_quick_start_has_exactly_two_commands():
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", quick, re.S).group(1)
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest -q" in ci and ".venv/bin/python -m pytest -q" in commands[1]
