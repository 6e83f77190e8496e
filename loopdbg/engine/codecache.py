"""Compiled generated code kept between runs, as Python keeps ``.pyc`` files for modules.

CPython compiles about 20-30 µs per line: the iteration code of a real decoder's loop (1,000-3,000
body layers inlined) takes 50-150 ms to compile, a good part of opening the model, every time the
same model is opened. The source of a plan is a function of the model alone (its names are
positions, layer names appear only through ``repr`` in comments), so its code object is too: it is
kept in a cache directory under the source's SHA-256 (with the Python's bytecode magic number) and
read back in under a millisecond the next time. A loaded code object gets the file name of this
run's source (``codegen``), so tracebacks, ``linecache`` and ``loopdbg explain --code`` are as for
freshly compiled code.

The directory is ``$LOOPDBG_CODE_CACHE``, else ``$XDG_CACHE_HOME/loopdbg/code`` (``~/.cache/...``);
``LOOPDBG_CODE_CACHE=off`` turns the cache off. Since what is read there is run, a directory is
used only when its path is absolute (never one found where loopdbg runs, such as a model's folder),
it belongs to the user and no one else may write to it (as with ``.pyc`` files, the user's own
files are trusted). A file that cannot be read back (cut short, from another Python) is
compiled again and replaced; a directory that cannot be written is left alone; the directory is
kept under ``MAX_BYTES``, the least recently used files going first. Sources under ``MIN_LINES``
compile faster than a file is found and are not kept.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import stat
import types
from pathlib import Path

MIN_LINES = 100
MAX_BYTES = 64 << 20
OFF = ("off", "0", "no", "false", "")


def directory() -> Path | None:
    """The cache directory this process may use, created if need be; None: no cache."""
    setting = os.environ.get("LOOPDBG_CODE_CACHE")
    if setting is not None:
        if setting.strip().lower() in OFF:
            return None
        path = Path(setting).expanduser()
        if not path.is_absolute():      # not a folder that depends on where loopdbg runs
            return None
    else:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(base):     # (the XDG specification: a relative one is ignored)
            base = os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "loopdbg" / "code"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o022 or \
            (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        return None                     # another user could put code there
    return path


def _key(source: str) -> str:
    tag = importlib.util.MAGIC_NUMBER.hex()
    return hashlib.sha256(tag.encode() + b"\0" + source.encode("utf-8")).hexdigest()


def load(source: str, filename: str) -> types.CodeType | None:
    """The kept code of ``source``, renamed to ``filename``; None when it is not kept."""
    if source.count("\n") < MIN_LINES or (where := directory()) is None:
        return None
    path = where / f"{_key(source)}.code"
    try:
        data = path.read_bytes()
        code = marshal.loads(data)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(code, types.CodeType):
        return None
    try:
        os.utime(path)                  # recently used: kept longest
    except OSError:
        pass
    return renamed(code, filename)


def store(source: str, code: types.CodeType) -> None:
    """Keep ``code``, compiled from ``source``, for the next run (quietly not, if that fails)."""
    if source.count("\n") < MIN_LINES or (where := directory()) is None:
        return
    import tempfile         # here: a run that finds its code kept stores nothing

    try:
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(code))
            os.replace(tmp, where / f"{_key(source)}.code")
        except BaseException:
            os.unlink(tmp)
            raise
        _trim(where)
    except (OSError, ValueError):
        pass


def _trim(where: Path) -> None:
    """Remove the least recently used files while the directory holds more than MAX_BYTES."""
    files = []
    for entry in os.scandir(where):
        if entry.name.endswith(".code"):
            info = entry.stat()
            files.append((info.st_mtime, info.st_size, entry.path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= MAX_BYTES:
            break
        try:
            os.unlink(path)
        except OSError:
            pass
        total -= size


def renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` and the code objects it holds with the file name ``filename``."""
    consts = tuple(renamed(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)
