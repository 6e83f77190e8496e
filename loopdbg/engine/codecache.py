"""Compiled generated code kept between runs, as Python keeps ``.pyc`` files for modules.

CPython compiles about 20-30 µs per line: the iteration code of a real decoder's loop (1,000-3,000
body layers inlined) takes 50-150 ms to compile, a good part of opening the model, every time the
same model is opened. The source of a plan is a function of the model alone (its names are
positions, layer names appear only through ``repr`` in comments), so its code object is too: it is
kept in a cache directory under the source's BLAKE2b digest (256 bits, with the Python's bytecode
magic number) and read back in under a millisecond the next time. (BLAKE2b: CPython's own module,
0.5 ms for a decoder's 250 KB of code; hashlib's SHA-256 would load OpenSSL, ~4 ms of a start.) A loaded code object gets the file name of this
run's source (``codegen``), so tracebacks, ``linecache`` and ``loopdbg explain --code`` are as for
freshly compiled code.

The directory is ``files.cache``'s: ``$LOOPDBG_CODE_CACHE``, else ``$XDG_CACHE_HOME/loopdbg/code``
(``~/.cache/...``), used only when it is the user's alone; ``LOOPDBG_CODE_CACHE=off`` turns the
cache off. A file that cannot be read back (cut short, from another Python) is compiled again and
replaced; a directory that cannot be written is left alone; the code files are kept under
``MAX_BYTES``, the least recently used going first. Sources under ``MIN_LINES``
compile faster than a file is found and are not kept.
"""

from __future__ import annotations

import importlib.util
import marshal
import types

from loopdbg.files import cache
from loopdbg.files.cache import directory

try:
    from _blake2 import blake2b                 # (hashlib's blake2b, without hashlib's import)
except ImportError:                             # pragma: no cover - a Python built without it
    from hashlib import blake2b

MIN_LINES = 100
MAX_BYTES = 64 << 20


def _key(source: str) -> str:
    tag = importlib.util.MAGIC_NUMBER.hex()
    digest = blake2b(tag.encode() + b"\0", digest_size=32)
    digest.update(source.encode("utf-8"))
    return digest.hexdigest()


def load(source: str, filename: str) -> types.CodeType | None:
    """The kept code of ``source``, renamed to ``filename``; None when it is not kept."""
    if source.count("\n") < MIN_LINES or (where := directory()) is None:
        return None
    data = cache.read(where / f"{_key(source)}.code")
    if data is None:
        return None
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(code, types.CodeType):
        return None
    return renamed(code, filename)


def store(source: str, code: types.CodeType) -> None:
    """Keep ``code``, compiled from ``source``, for the next run (quietly not, if that fails)."""
    if source.count("\n") < MIN_LINES or (where := directory()) is None:
        return
    cache.write(where, f"{_key(source)}.code", marshal.dumps(code), MAX_BYTES)


def renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` and the code objects it holds with the file name ``filename``."""
    consts = tuple(renamed(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)
