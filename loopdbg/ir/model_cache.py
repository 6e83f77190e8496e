"""ONNX models as read, kept between runs (in ``files.cache``'s directory, beside the compiled code).

Reading an .onnx is most of what opening it costs before it runs: importing onnx and protobuf,
parsing, onnx's shape inference and its operator schemas, and the translation of every node into a
Layer (a real decoder's loop body: thousands; 0.1-0.3 s on this project's two GPT models). What it
gives is a function of the file's bytes, the path it was named by (which its messages quote), the
reader's own code and onnx's: the Model is kept, pickled (``pack``: its arrays' bytes out of
band, read back as views of the file's, not copies), under the SHA-256 of all of these (``key``),
and read back the next time in a fraction of that, without importing onnx.

Finding a kept model hashes the file's bytes (~7 ms for a 9 MB decoder, most of reading it back).
A file read again as the file system last described it is found without: after a reading, the
file's identity (device, inode, size, modification and change times, ``os.stat``) is noted
beside its key (``note``) and looked up first (``recall``). Any write to the file moves its change
time, which no program can set back; a file changed within its clock's tick of the stat (two
writes a few milliseconds apart) could look the same, so a file is noted only once it has been
left alone for ``SETTLED`` seconds (git trusts its index the same way). POSIX systems only:
elsewhere ``st_ctime`` is the creation time.

Kept only: models without external data (those files are mapped, not read, and may change on
their own), of at most ``MAX_FILE`` bytes, and only what was read without an error; the ``.model``
files of the directory are kept under ``MAX_BYTES``, the least recently used going first. A file
that cannot be read back (cut short, from another numpy) is read from the model again.
``LOOPDBG_CODE_CACHE=off`` turns it off with the code cache.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import struct
import sys
import time

from loopdbg.files import cache
from loopdbg.ir.model import Model

MAX_FILE = 64 << 20
MAX_BYTES = 256 << 20
SUFFIX = ".model"
NOTE_SUFFIX = ".seen"
MAX_NOTE_BYTES = 1 << 20         # some 15,000 notes (70 bytes each: the name of a kept model)
SETTLED = 2.0                    # seconds a file is left alone before its stat is trusted


def key(data: bytes | memoryview, path: str) -> str | None:
    """The name a model of these bytes, read under ``path``, is kept under (None: not kept,
    and not hashed: too big, or no cache directory to keep it in)."""
    if len(data) > MAX_FILE or cache.directory() is None:
        return None
    tag = _reader_tag()
    if tag is None:
        return None
    return cache.digest(tag, path.encode("utf-8", "surrogateescape") + b"\0", data) + SUFFIX


def load(name: str | None) -> Model | None:
    """The Model kept under ``name``, or None."""
    if name is None or (where := cache.directory()) is None:
        return None
    data = cache.mapped(where / name)
    if data is None:
        return None
    try:
        model = unpack(data)
    except Exception:  # noqa: BLE001 - cut short, another numpy's arrays: read the model again
        return None
    return model if isinstance(model, Model) else None


def store(name: str | None, model: Model) -> None:
    """Keep ``model`` under ``name`` for the next run (quietly not, if that fails)."""
    if name is None or model.data_files or (where := cache.directory()) is None:
        return
    try:
        data = pack(model)
    except Exception:  # noqa: BLE001 - a value pickle cannot hold: not kept
        return
    cache.write(where, name, data, MAX_BYTES)


def recall(path: str, info: os.stat_result | None) -> Model | None:
    """The Model kept from the bytes of ``path`` when ``info`` (its ``os.stat``, taken before
    it is read) is as noted after an earlier reading (``note``), without reading the file."""
    name = _note_name(path, info)
    if name is None or (where := cache.directory()) is None:
        return None
    kept = cache.read(where / name)
    if kept is None or not _is_key(kept):
        return None
    return load(kept.decode("ascii"))


def note(path: str, info: os.stat_result | None, name: str | None) -> None:
    """Note that the bytes of ``path`` as ``info`` (its ``os.stat`` taken before they were read)
    describes it are kept under ``name``; not for a file changed in the last ``SETTLED``
    seconds."""
    if name is None or info is None or \
            time.time() - max(info.st_mtime, info.st_ctime) < SETTLED:
        return
    noted = _note_name(path, info)
    if noted is not None and (where := cache.directory()) is not None:
        cache.write(where, noted, name.encode("ascii"), MAX_NOTE_BYTES)


def _note_name(path: str, info: os.stat_result | None) -> str | None:
    if info is None or os.name != "posix" or (tag := _reader_tag()) is None:
        return None
    identity = (f"{path}\0{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:"
                f"{info.st_ctime_ns}")
    return cache.digest(tag, identity.encode("utf-8", "surrogateescape")) + NOTE_SUFFIX


def _is_key(data: bytes) -> bool:
    """Whether ``data`` is the name of a kept model (a note holds nothing else)."""
    digest, _, suffix = data.partition(b".")
    return len(digest) == 64 and suffix == SUFFIX[1:].encode() and \
        all(c in b"0123456789abcdef" for c in digest)


# A kept model's file: MAGIC, the pickle's length and the number of arrays' buffers, each
# buffer's (offset, length), the pickle (protocol 5), then the buffers' bytes, each at an offset
# ALIGN divides. Read back, the arrays are views of the file's bytes, not copies: read-only, as
# the plan makes every constant anyway.
MAGIC = b"loopdbg\x01"
_HEAD = struct.Struct("<8sQI")
_SPAN = struct.Struct("<QQ")
ALIGN = 64


def pack(value) -> bytes:
    """``value`` pickled with its arrays' buffers out of band, as ``unpack`` reads it."""
    buffers: list[pickle.PickleBuffer] = []
    body = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    offset = _HEAD.size + _SPAN.size * len(raws) + len(body)
    parts, spans = [], []
    for raw in raws:
        pad = -offset % ALIGN
        parts += [b"\0" * pad, raw]
        spans.append(_SPAN.pack(offset + pad, raw.nbytes))
        offset += pad + raw.nbytes
    return b"".join([_HEAD.pack(MAGIC, len(body), len(raws)), *spans, body, *parts])


def unpack(data: bytes | memoryview):
    """What ``pack`` packed (ValueError, struct.error or pickle's own errors when it is not)."""
    magic, length, count = _HEAD.unpack_from(data, 0)
    start = _HEAD.size + _SPAN.size * count
    if magic != MAGIC or start + length > len(data):
        raise ValueError("not a kept model")
    view = memoryview(data)
    buffers = []
    for k in range(count):
        offset, size = _SPAN.unpack_from(data, _HEAD.size + _SPAN.size * k)
        if offset < start + length or offset + size > len(data):
            raise ValueError("a buffer outside the file")
        buffers.append(view[offset:offset + size])
    return pickle.loads(view[start:start + length], buffers=buffers)


def _reader_tag() -> bytes | None:
    """What the Model read from a file depends on besides the file: this Python and numpy (the
    pickle), loopdbg's reader (its version and, for a checkout being edited, its files' sizes and
    times) and the onnx it uses (shape inference, operator schemas: its files' too). None when
    onnx cannot be found (the reader then says how to install it). Asked at each read (~0.5 ms):
    an onnx installed or a reader file edited since the last read counts."""
    import numpy as np

    from loopdbg import __version__

    try:
        spec = importlib.util.find_spec("onnx")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    parts = [__version__, sys.version, importlib.util.MAGIC_NUMBER.hex(), np.__version__]
    for f in [spec.origin, *reader_files()]:
        try:
            info = os.stat(f)
        except OSError:
            return None
        parts.append(f"{f}:{info.st_size}:{info.st_mtime_ns}")
    return "\0".join(parts).encode("utf-8", "surrogateescape") + b"\0"


def reader_files() -> list[str]:
    """The reader's source files: every module of ``loopdbg.ir``."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, f) for f in sorted(os.listdir(here)) if f.endswith(".py")]
