"""Every program loopdbg starts is started here, so that a model folder can never run code.

loopdbg is often run inside a folder a stranger sent (a model, its weights, its inputs, a trace).
A child started there could take that folder's code: ``python -m`` puts the working directory
first on ``sys.path`` (a ``json.py`` or a ``numpy/`` beside the model would run), and a program
looked up on a ``PATH`` holding ``.`` or an empty entry is found in the folder. So:

* a program is looked up on PATH's absolute folders only (``find``);
* every child runs in a neutral working directory (``NEUTRAL``, the root folder): a relative path
  means nothing there, so the files a child is given are absolute paths (``absolute``);
* a Python child runs isolated (``python -I``: no working directory, script folder or
  ``PYTHON*`` variable decides its path), with the parent's module path less the working
  directory (``python_argv``): it imports the same loopdbg and runtimes as the parent;
* a library that reads its settings from the working directory or starts programs of its own
  (matplotlib reads ``./matplotlibrc`` and may run ``fc-list``) is loaded under ``neutral()``.

Imports nothing of loopdbg: the oracle, the layout and the command line all start programs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

NEUTRAL = os.path.abspath(os.sep)        # the working directory of every child

# Run as ``python -I -c BOOT DATA N PATH1 ... PATHN MODULE ARGS...``: the child's data-size limit
# (RLIMIT_DATA's soft one) becomes DATA unless it is ``-``; its module path becomes PATH1 ... PATHN
# (the parent's, less its working directory), then MODULE runs as ``python -m MODULE ARGS...``
# would, its sys.argv[1:] being ARGS.
BOOT = ("import runpy, sys\n"
        "data = sys.argv.pop(1)\n"
        "if data != '-':\n"
        "    import resource\n"
        "    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]\n"
        "    resource.setrlimit(resource.RLIMIT_DATA, (int(data), hard))\n"
        "n = int(sys.argv.pop(1))\n"
        "sys.path[:] = sys.argv[1:1 + n]\n"
        "del sys.argv[1:1 + n]\n"
        "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n")


def find(name: str) -> str | None:
    """The full path of program ``name`` on PATH, looking only in its absolute folders (never
    ``.``, an empty entry or another relative one, which would find it in the working
    directory); None when it is not there."""
    return shutil.which(name, path=absolute_path()) or None


def absolute_path() -> str:
    """PATH without its relative entries (``.``, an empty one ...)."""
    return os.pathsep.join(f for f in os.environ.get("PATH", os.defpath).split(os.pathsep)
                           if f and os.path.isabs(f))


@contextlib.contextmanager
def neutral():
    """While it lasts, the process works in ``NEUTRAL`` with only PATH's absolute entries (for
    loading a library that looks in the working directory; loopdbg's own process only, from the
    command line, before any thread starts)."""
    cwd, path = os.getcwd(), os.environ.get("PATH")
    os.chdir(NEUTRAL)
    os.environ["PATH"] = absolute_path()
    try:
        yield
    finally:
        os.chdir(cwd)
        if path is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = path


def loopdbg_root() -> str:
    """The folder that holds the loopdbg package running now."""
    return str(Path(__file__).resolve().parents[1])


def child_path() -> list[str]:
    """The module path of a Python child: this process's own (so it imports the same loopdbg and
    the same runtimes, a ``pip install --user`` one included), less every entry that is relative
    or names the working directory, with the folder holding loopdbg first."""
    def real(p: str) -> str:
        try:
            return os.path.realpath(p)
        except (OSError, ValueError):
            return p

    try:
        here = real(os.getcwd())
    except OSError:                     # the working directory was removed: nothing to leave out
        here = None
    root = loopdbg_root()
    kept = [root]
    for entry in sys.path:
        if entry and os.path.isabs(entry) and real(entry) != here and entry not in kept:
            kept.append(entry)
    return kept


# The data-size limit a Python child starts with while loopdbg caps its own for --max-memory
# (``ops.budget.backstop``): the one loopdbg had before, so that a runtime child is not held to
# the cap of loopdbg's run (the oracle watches a runtime's memory on its own). None: no cap.
_CHILD_DATA: list[int | None] = [None]


def set_child_data_limit(limit: int | None) -> None:
    _CHILD_DATA[0] = limit


def python_argv(module: str, *args: str) -> list[str]:
    """The command line that runs ``python -m module args...`` isolated (see the module doc)."""
    path = child_path()
    data = "-" if _CHILD_DATA[0] is None else str(_CHILD_DATA[0])
    return [sys.executable, "-I", "-c", BOOT, data, str(len(path)), *path, module,
            *map(str, args)]


def absolute(path: str | os.PathLike) -> str:
    """``path`` made absolute against loopdbg's own working directory, for a child that runs
    in ``NEUTRAL``; not normalised, so ``link/..`` still means what it meant."""
    path = os.fspath(path)
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
