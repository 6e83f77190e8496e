"""Rules of the codebase that a review would otherwise have to remember, checked on every run."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "loopdbg"
# its tests read the package parsed once per process (~1.3 s of CPU): under pytest-xdist, one worker
pytestmark = pytest.mark.xdist_group("code_rules")
# private names of other libraries that loopdbg has to use
FOREIGN = {("sys", "_getframe"), ("os", "_exit"), ("etree", "_Element")}


@functools.lru_cache(maxsize=None)
def parsed(root: Path) -> tuple:
    """(path, syntax tree) of every Python file under ``root``, parsed once per run."""
    return tuple((p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(root.rglob("*.py")))


def modules():
    return parsed(PACKAGE)


def test_no_module_touches_anothers_private_attributes():
    """``x._name`` only where ``_name`` is this module's own (its classes' attributes, set or
    defined here): a module's state is changed through its public interface."""
    bad = []
    for path, tree in modules():
        own, touched = set(), []          # one walk of the tree gathers both
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(n.name)
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                own.add(n.target.id)
            elif isinstance(n, ast.Attribute):
                if isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                    own.add(n.attr)
                elif n.attr.startswith("_") and not n.attr.startswith("__"):
                    touched.append(n)
        for n in touched:
            if n.attr in own:
                continue
            base = ast.unparse(n.value)
            if (base, n.attr) not in FOREIGN:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{n.lineno}: {base}.{n.attr}")
    assert not bad, "private attributes of other modules:\n" + "\n".join(bad)


MAX_LINES = 500
GENERATED = {"ops/_families.py"}             # written by `python -m loopdbg.ops.catalog --write`


def test_hand_written_modules_stay_small():
    """A file past ~500 lines usually holds two ideas: split it by idea."""
    big = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in GENERATED:
            continue
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            big.append(f"loopdbg/{rel}: {n} lines")
    assert not big, f"modules over {MAX_LINES} lines:\n" + "\n".join(big)


def test_no_one_letter_module_aliases():
    """``import x as F`` hides which module a name comes from; spell the module."""
    short = []
    for path, tree in modules() + _maybe_aliasing(PACKAGE.parent / "tests"):
        for n in ast.walk(tree):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                for alias in n.names:
                    if alias.asname and len(alias.asname) == 1 and \
                            _is_module(n, alias.name):
                        short.append(f"{path.name}:{n.lineno}: {alias.name} as {alias.asname}")
    assert not short, "one-letter module aliases:\n" + "\n".join(short)


def _maybe_aliasing(root: Path) -> tuple:
    """(path, syntax tree) of the files under ``root`` that have an ``as`` and one letter at all
    (the tests are three times the package: parsing them all took seconds)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if re.search(r"\bas\s+\w\s*(?:[,)#]|$)", text, re.MULTILINE):
            found.append((path, ast.parse(text)))
    return tuple(found)


def _is_module(node, name: str) -> bool:
    """Does this import bind a module (``import x``, or ``from loopdbg.pkg import module``)?"""
    if isinstance(node, ast.Import):
        return True
    if not (node.module or "").startswith("loopdbg"):
        return False
    where = PACKAGE.parent.joinpath(*node.module.split("."), name)
    return where.with_suffix(".py").exists() or where.is_dir()
