"""The directory where loopdbg keeps what it worked out between runs, as Python keeps ``.pyc``
files: compiled generated code (``engine.codecache``) and models as read (``ir.model_cache``).

The directory is ``$LOOPDBG_CODE_CACHE``, else ``$XDG_CACHE_HOME/loopdbg/code`` (``~/.cache/...``);
``LOOPDBG_CODE_CACHE=off`` turns every cache off. Since what is read there is run (code) or
unpickled (models), a directory is used only when its path is absolute (never one found where
loopdbg runs, such as a model's folder), it belongs to the user and no one else may write to it
(as with ``.pyc`` files, the user's own files are trusted). Each kind of file is kept under its own
size, the least recently used going first (``trim``); a file is written whole or not at all
(``write``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OFF = ("off", "0", "no", "false", "")

# A key's SHA-256 (``digest``): hashlib's import loads OpenSSL (~4 ms of every start), where
# CPython's own SHA-256 module loads in ~0.3 ms; OpenSSL's is faster past a few dozen KB (0.8
# against 0.12 ms for 150 KB), so bigger data (a model file's bytes) takes hashlib.
SMALL_DIGEST = 64 << 10
try:
    from _sha256 import sha256 as _own_sha256       # Python 3.10, 3.11
except ImportError:                                 # pragma: no cover - the Python of the day
    try:
        from _sha2 import sha256 as _own_sha256     # 3.12 on
    except ImportError:
        _own_sha256 = None


def digest(*parts: bytes) -> str:
    """The SHA-256 of ``parts`` joined, in hexadecimal (the same whichever module computes it)."""
    if _own_sha256 is not None and sum([len(p) for p in parts]) <= SMALL_DIGEST:
        h = _own_sha256()
    else:
        import hashlib

        h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()


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


def read(path: Path) -> bytes | None:
    """The bytes of a kept file, marked recently used; None when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    _used(path)
    return data


def mapped(path: Path) -> memoryview | None:
    """A kept file's bytes, mapped read-only rather than read (what is made of them may be
    views of them), marked recently used; None when it cannot be mapped. The mapping stays
    whole when the file is replaced or removed (kept files are only ever written whole, under
    another name, then renamed into place: ``write``)."""
    import mmap

    try:
        with open(path, "rb") as f:
            view = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):       # (ValueError: an empty file)
        return None
    _used(path)
    return view


def _used(path: Path) -> None:
    try:
        os.utime(path)                  # recently used: kept longest
    except OSError:
        pass


def write(where: Path, name: str, data: bytes, max_bytes: int) -> None:
    """Keep ``data`` as ``where/name`` (written whole, then renamed into place), then trim the
    files of its suffix to ``max_bytes``; quietly nothing when that fails."""
    import tempfile         # here: a run that finds what it needs kept writes nothing

    try:
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, where / name)
        except BaseException:
            os.unlink(tmp)
            raise
        trim(where, os.path.splitext(name)[1], max_bytes)
    except (OSError, ValueError):
        pass


def trim(where: Path, suffix: str, max_bytes: int) -> None:
    """Remove the least recently used ``*suffix`` files while they hold more than max_bytes."""
    files = []
    for entry in os.scandir(where):
        if entry.name.endswith(suffix):
            info = entry.stat()
            files.append((info.st_mtime, info.st_size, entry.path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= max_bytes:
            break
        try:
            os.unlink(path)
        except OSError:
            pass
        total -= size
