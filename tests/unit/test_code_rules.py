"""Rules of the codebase that a review would otherwise have to remember, checked on every run."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "loopdbg"
# private names of other libraries that loopdbg has to use
FOREIGN = {("sys", "_getframe"), ("os", "_exit"), ("etree", "_Element")}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def test_no_module_touches_anothers_private_attributes():
    """``x._name`` only where ``_name`` is this module's own (its classes' attributes, set or
    defined here): a module's state is changed through its public interface."""
    bad = []
    for path, tree in modules():
        own = {n.name for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        own |= {t.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")
                for t in (n,)}
        own |= {t.id for n in ast.walk(tree) if isinstance(n, ast.AnnAssign)
                for t in (n.target,) if isinstance(t, ast.Name)}
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Attribute) and n.attr.startswith("_")
                    and not n.attr.startswith("__")):
                continue
            if isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                continue
            base = ast.unparse(n.value)
            if (base, n.attr) in FOREIGN or n.attr in own:
                continue
            bad.append(f"{path.relative_to(PACKAGE.parent)}:{n.lineno}: {base}.{n.attr}")
    assert not bad, "private attributes of other modules:\n" + "\n".join(bad)
