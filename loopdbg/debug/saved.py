"""Breakpoints and watches saved per model, and restored when the same model is opened again.

One small JSON file per model in the user's state directory (``$XDG_STATE_HOME/loopdbg``, else
``~/.local/state/loopdbg``), named by a hash of the model's resolved path and of its contents:
a model that changed starts afresh, and nothing is ever written beside the model. The file is
written atomically (a temporary file renamed over it). A file that cannot be read, or holds
what loopdbg did not write, is ignored with a one-sentence note, never an error.

The state folder is trusted only when it is safe: ``XDG_STATE_HOME`` is used only when it is an
absolute path (the XDG specification: a relative one is ignored), loopdbg's folders in it are
made readable by their owner only, and a folder that is a link, is owned by another user, or
that others may write to is not used at all (``unusable`` says why in one sentence): the
debugger then starts without saved breakpoints and saves none.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from loopdbg.errors import LoopdbgError
from loopdbg.files.read import open_regular

VERSION = 1
HASHED = 64 << 20           # bytes of each model file hashed (a multi-GB .bin: its first 64 MiB)
MAX_FILE = 1 << 20          # a state file larger than this is not read
MAX_ITEMS = 1000


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):                 # unset, empty or relative: the default
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "loopdbg" / "breakpoints"


def _ours() -> tuple[Path, Path]:
    """loopdbg's folders in the state folder: ``loopdbg`` and ``loopdbg/breakpoints``."""
    folder = state_dir()
    return folder.parent, folder


def unusable() -> str | None:
    """Why the state folder must not be used (one sentence), or None when it is safe: each of
    loopdbg's folders that exists must be a real folder (not a link), owned by this user and
    writable by nobody else."""
    import stat

    uid = os.getuid() if hasattr(os, "getuid") else None
    for folder in _ours():
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problem = f"cannot be examined ({exc.strerror or exc})"
        else:
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                problem = "is not a folder" + (" (it is a symbolic link)"
                                               if stat.S_ISLNK(st.st_mode) else "")
            elif uid is not None and st.st_uid != uid:
                problem = f"is owned by another user (uid {st.st_uid})"
            elif st.st_mode & 0o022:
                problem = (f"may be written by others (mode {stat.S_IMODE(st.st_mode):o})")
            else:
                continue
        return (f"the state folder {folder} {problem}, so breakpoints and watches are neither "
                f"restored nor saved.")
    return None


def _make_folders() -> None:
    for folder in _ours():
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass


def model_key(files) -> str:
    """A hash of the model files' resolved paths, sizes and (first ``HASHED`` bytes of) contents."""
    h = hashlib.sha256()
    for f in files:
        p = Path(f).resolve()
        h.update(str(p).encode("utf-8", "surrogateescape") + b"\0")
        try:
            h.update(str(p.stat().st_size).encode() + b"\0")
            with open_regular(p, OSError) as fh:      # never a FIFO's read, never /dev/zero's
                left = HASHED
                while left > 0 and (chunk := fh.read(min(1 << 20, left))):
                    h.update(chunk)
                    left -= len(chunk)
        except OSError:
            h.update(b"unreadable")
    return h.hexdigest()


def _path(files) -> Path:
    return state_dir() / f"{model_key(files)[:32]}.json"


def save(files, breakpoints) -> Path | None:
    """Write ``breakpoints``' breakpoints and watches for the model made of ``files`` (none:
    the file is removed). Returns the file written, or None when nothing was (or it failed)."""
    path = _path(files)
    data = {
        "loopdbg": VERSION, "model": str(Path(files[0]).resolve()),
        "breakpoints": [{"text": bp.text, "loop": bp.loop, "enabled": bp.enabled,
                         "ignore": bp.ignore} for bp in breakpoints.items.values()
                        if not bp.temporary],
        "watches": [{"text": w.text, "loop": w.loop} for w in breakpoints.watches.values()],
    }
    try:
        if unusable():
            return None
        if not data["breakpoints"] and not data["watches"]:
            path.unlink(missing_ok=True)
            return None
        path.parent.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _make_folders()
        if unusable():                          # (made by someone else meanwhile)
            return None
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
        return path
    except OSError:
        return None


def _key(item: dict) -> tuple:
    text, loop = item.get("text"), item.get("loop")
    return (text if isinstance(text, str) else None, loop if isinstance(loop, str) else None)


def _text(v) -> bool:
    return isinstance(v, str) and len(v) <= 2000


def restore(files, breakpoints) -> str | None:
    """Add the breakpoints and watches saved for this model; a one-line note of what was
    restored (or why nothing was), None when nothing was saved."""
    refused = unusable()
    if refused:
        return refused
    path = _path(files)
    try:
        if not path.is_file():
            return None
        if path.stat().st_size > MAX_FILE:
            return f"the saved breakpoints ({path}) are too large to read; ignored."
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return f"the saved breakpoints ({path}) cannot be read; ignored."
    if not isinstance(data, dict) or data.get("loopdbg") != VERSION or \
            not isinstance(data.get("breakpoints"), list) or \
            not isinstance(data.get("watches"), list):
        return f"the saved breakpoints ({path}) are not loopdbg's; ignored."
    n_bp = n_w = failed = 0
    have = {(bp.text, bp.loop) for bp in breakpoints.items.values()}
    watched = {(w.text, w.loop) for w in breakpoints.watches.values()}
    for item in data["breakpoints"][:MAX_ITEMS]:
        if isinstance(item, dict) and _key(item) in have:
            continue                            # given again on the command line
        try:
            if not isinstance(item, dict) or not _text(item.get("text")) or \
                    not (item.get("loop") is None or _text(item.get("loop"))):
                raise LoopdbgError("malformed")
            ignore = item.get("ignore", 0)
            breakpoints.add(item["text"], loop=item.get("loop"),
                            enabled=item.get("enabled") is not False,
                            ignore=ignore if type(ignore) is int and 0 <= ignore < 2**31 else 0)
            n_bp += 1
        except LoopdbgError:
            failed += 1
    for item in data["watches"][:MAX_ITEMS]:
        if isinstance(item, dict) and _key(item) in watched:
            continue
        try:
            if not isinstance(item, dict) or not _text(item.get("text")) or \
                    not (item.get("loop") is None or _text(item.get("loop"))):
                raise LoopdbgError("malformed")
            breakpoints.watch(item["text"], loop=item.get("loop"))
            n_w += 1
        except LoopdbgError:
            failed += 1
    if not (n_bp or n_w or failed):
        return None
    parts = [f"{n_bp} breakpoint{'s' * (n_bp != 1)}", f"{n_w} watch{'es' * (n_w != 1)}"]
    skipped = f"; {failed} could not be restored" if failed else ""
    return (f"restored {' and '.join(parts)} saved for this model{skipped} "
            f"(--no-restore starts without them)")
