"""The bytes of a trace file: constants, frame heads, and .npy encoding (see the package docstring).

Everything here is shared by the writer and the reader, so the two cannot drift apart. Nothing here
does I/O.
"""

from __future__ import annotations

import io
import json
import struct

import ml_dtypes  # noqa: F401 - makes .npy headers naming bfloat16, float8, int4 ... readable
import numpy as np

from loopdbg.errors import LoopdbgError
from loopdbg.ir.elements import npy_descr

try:            # the same crc32, ~15x faster on big frames (ISA-L): the optional extra fast-trace
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - zlib's own, where isal is not installed
    from zlib import crc32

MAGIC = b"\x89LDTRACE\r\n\x1a\n"            # 12 bytes, PNG-style: catches text-mode mangling
VERSION = (2, 0)                             # (major, minor) written
READABLE = (1, 2)                            # majors a reader opens (1: no BATCH frames)
PREAMBLE = struct.Struct("<12sHH")           # magic, major, minor: 16 bytes
SYNC = b"LDF\xa7"                            # first 4 bytes of every frame
HEAD = struct.Struct("<4sBBHQ")              # sync, kind, flags, reserved, body length: 16 bytes
CRC = struct.Struct("<I")                    # after the body: crc32 of head + body
LOCATOR_MAGIC = b"LDTRIDX1"
LOCATOR = struct.Struct("<8sQQI4s")          # magic, footer offset, footer length, crc, b"\x1aEND"
LOCATOR_TAIL = b"\x1aEND"
META_LEN = struct.Struct("<I")
COUNT = struct.Struct("<I")
ENTRY = struct.Struct("<BHQ")                # group, name length, .npy length
ITER_META = struct.Struct("<qqBBHH")         # iteration, trip (-1: none), cond, continues, n_outer, path length
ITER_FIXED = struct.Struct("<qqBB")          # the part of ITER_META that changes every iteration
ITER_TAIL = struct.Struct("<HH")             # n_outer, path length (then the outer i64s, the path)
BATCH_FIXED = struct.Struct("<qIq")          # first iteration, count, trip (-1: none)

# Frame kinds.
HEADER, INPUTS, LOOP_START, ITERATION, LOOP_FINISH, NOTICE, RUN_FINISH, END, FOOTER, BATCH = \
    range(1, 11)
KIND_NAMES = {HEADER: "header", INPUTS: "inputs", LOOP_START: "loop start", ITERATION: "iteration",
              LOOP_FINISH: "loop finish", NOTICE: "notice", RUN_FINISH: "run finished",
              END: "end", FOOTER: "footer index", BATCH: "iteration batch"}

# Array groups inside a frame.
BACK_EDGES, SCAN_SLICES, SLICED_INPUTS, NODES, BODY_INPUTS, OUTPUTS, MODEL_INPUTS = range(7)
GROUP_NAMES = ("back_edges", "scan_slices", "sliced_inputs", "nodes", "inputs", "outputs",
               "model_inputs")

# How a recording ended (the END frame's "status").
COMPLETE, INTERRUPTED, ERROR, STOPPED = "complete", "interrupted", "error", "stopped"

BIG = 1 << 16            # arrays at least this big are handed to the writer thread uncopied


class TraceError(LoopdbgError):
    """A trace file is missing, not a trace, damaged, or does not hold what was asked for."""


def header_part(header, name: str) -> dict:
    """The part ``name`` of a trace header ("model", "inputs", "options") if it is a JSON object,
    else an empty one: a hostile header's ``"model": "x"`` reads as nothing recorded."""
    part = header.get(name) if isinstance(header, dict) else None
    return part if isinstance(part, dict) else {}


def recorded_sources(header) -> list[tuple[str, str]]:
    """The files a header says the recording reads: [(what, path)] of the model (.xml or .onnx),
    its .bin and the inputs file (a recording must never write over one of them)."""
    model, inputs = header_part(header, "model"), header_part(header, "inputs")
    found = [("the model", model.get("path")),
             ("the model's weights (.bin)", model.get("bin_path")),
             ("the inputs file", inputs.get("source"))]
    return [(what, p) for what, p in found if isinstance(p, str) and p]


def preamble() -> bytes:
    return PREAMBLE.pack(MAGIC, *VERSION)


def locator(footer_offset: int, footer_length: int) -> bytes:
    body = struct.pack("<8sQQ", LOCATOR_MAGIC, footer_offset, footer_length)
    return body + CRC.pack(crc32(body)) + LOCATOR_TAIL


def parse_locator(raw: bytes) -> tuple[int, int] | None:
    """(footer offset, footer length) from the last LOCATOR.size bytes, or None if not valid."""
    if len(raw) != LOCATOR.size:
        return None
    magic, off, length, crc, tail = LOCATOR.unpack(raw)
    if magic != LOCATOR_MAGIC or tail != LOCATOR_TAIL or crc32(raw[:24]) != crc:
        return None
    return off, length


def load_json(meta: bytes | str):
    """A frame's JSON meta, read with limits: UTF-8 only, integers of at most 4,300 digits
    (Python's own limit), and nesting no deeper than the parser's recursion allows — anything
    else is a ValueError (never a RecursionError escaping to the user)."""
    try:
        return json.loads(meta)
    except RecursionError:
        raise ValueError("its JSON is nested too deeply") from None


# The JSON meta of each kind of frame that has one: field -> what its value must be. Fields
# not listed are allowed (a newer minor version may add some); a field listed must be there.
_TEXT, _INT, _BOOL, _OUTER = "text", "integer", "true or false", "a list of iteration numbers"
META_SCHEMA = {
    LOOP_START: {"path": _TEXT, "layer_id": _INT, "layer_name": _TEXT, "kind": _TEXT,
                 "trip_count": (_INT, None), "execution_condition": _BOOL, "outer": _OUTER},
    LOOP_FINISH: {"path": _TEXT, "outer": _OUTER, "iterations": _INT, "reason": _TEXT,
                  "error": (_TEXT, None)},
    NOTICE: {"path": _TEXT, "message": _TEXT, "rule": (_INT, None)},
    RUN_FINISH: {"interrupted": _BOOL, "loops": _INT, "notices": _INT},
    END: {"status": _TEXT, "error": (_TEXT, None), "frames": _INT, "iterations": _INT},
}
# Integers in a trace count frames, iterations and layers: nothing needs more than this.
MAX_COUNT = 2**62


def _fits(value, want) -> bool:
    if isinstance(want, tuple):
        return any(_fits(value, w) for w in want)
    if want is None:
        return value is None
    if want == _TEXT:
        return isinstance(value, str)
    if want == _BOOL:
        return isinstance(value, bool)
    if want == _INT:
        return type(value) is int and -MAX_COUNT <= value <= MAX_COUNT
    if want == _OUTER:
        return isinstance(value, list) and len(value) <= 64 and \
            all(type(k) is int and 0 <= k <= MAX_COUNT for k in value)
    return False


def check_meta(kind: int, meta) -> dict:
    """``meta`` (a frame's decoded JSON) if it is an object with the fields its kind of frame
    must have, of the right types and in range; else ValueError naming the first that is not."""
    if not isinstance(meta, dict):
        raise ValueError("its meta is not a JSON object")
    for name, want in META_SCHEMA.get(kind, {}).items():
        if name not in meta:
            raise ValueError(f"its meta has no '{name}'")
        if not _fits(meta[name], want):
            shown = " or ".join("null" if w is None else w
                                for w in (want if isinstance(want, tuple) else (want,)))
            raise ValueError(f"its meta's '{name}' is not {shown}")
    return meta


def json_bytes(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=_jsonable).encode()


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (set, frozenset, tuple)):
        return list(x)
    return str(x)


# -- .npy encoding --------------------------------------------------------------------------------
_npy_headers: dict = {}           # (dtype, shape) -> the .npy magic + header for a C-order array
_npy_parsed: dict = {}            # header bytes -> (dtype, shape, header length)


def npy_header(dtype: np.dtype, shape: tuple) -> bytes:
    """numpy's own .npy header (format 1.0, or 2.0 when needed) for a C-order array."""
    key = (dtype, shape)
    h = _npy_headers.get(key)
    if h is None:
        d = {"descr": npy_descr(dtype), "fortran_order": False, "shape": shape}
        buf = io.BytesIO()
        try:
            np.lib.format.write_array_header_1_0(buf, d)
        except ValueError:
            buf = io.BytesIO()
            np.lib.format.write_array_header_2_0(buf, d)
        h = buf.getvalue()
        if len(_npy_headers) < 4096:
            _npy_headers[key] = h
    return h


PLAIN_KINDS = "biufcmMSUV"        # numbers, bool, dates, bytes, text, raw bytes: no Python objects


def plain_dtype(dtype: np.dtype) -> bool:
    """Can arrays of ``dtype`` be stored and read back without pickle (and without surprises)?"""
    return (not dtype.hasobject and dtype.kind in PLAIN_KINDS and dtype.names is None
            and dtype.subdtype is None)


def check_array(value, where: str) -> np.ndarray:
    if value is None or isinstance(value, list):      # ONNX optionals and sequences
        what = ("an empty optional" if value is None else
                f"a sequence of {len(value)} tensor{'s' if len(value) != 1 else ''}")
        raise TraceError(f"{where} is {what}; a trace records tensors only (a sequence a loop "
                         f"appends to would be stored whole at every iteration), so loopdbg "
                         f"cannot trace this model: run or debug it without --trace.")
    arr = np.asarray(value)
    if not plain_dtype(arr.dtype):
        raise TraceError(f"{where} has dtype {arr.dtype}, which a trace cannot store without "
                         f"pickling; loopdbg never pickles.")
    return arr


def npy_layout(buf, start: int, end: int) -> tuple[np.dtype, tuple, int]:
    """(dtype, shape, offset of the data) of the .npy bytes ``buf[start:end]``, checked before
    anything uses them: numpy's format 1.0 or 2.0, a header numpy parses as a literal (never
    unpickling anything), a plain dtype (``plain_dtype``: no object arrays), C order, sizes
    >= 0, and data that fills exactly the rest of the span. ValueError saying what is wrong."""
    mv = memoryview(buf)
    if end - start < 10 or bytes(mv[start:start + 6]) != b"\x93NUMPY":
        raise ValueError("not .npy data")
    version = (mv[start + 6], mv[start + 7])
    if version == (1, 0):
        hlen = struct.unpack_from("<H", buf, start + 8)[0]
        hstart = start + 10
    elif version == (2, 0) and end - start >= 12:
        hlen = struct.unpack_from("<I", buf, start + 8)[0]
        hstart = start + 12
    else:
        raise ValueError(f".npy format version {version[0]}.{version[1]} is not one a trace "
                         f"holds")
    if hstart + hlen > end:
        raise ValueError("the .npy header runs past the end of the array")
    key = bytes(mv[start:hstart + hlen])
    parsed = _npy_parsed.get(key)
    if parsed is None:
        f = io.BytesIO(key)
        np.lib.format.read_magic(f)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(f))
        if not plain_dtype(dtype):
            raise ValueError(f"the .npy header declares dtype {dtype}, which is not a plain "
                             f"array (object arrays would need pickle); loopdbg refuses it")
        if fortran:
            raise ValueError("the .npy array is in Fortran order; a trace holds C-order arrays")
        if any(n < 0 for n in shape):
            raise ValueError(f"the .npy header declares shape {shape}")
        parsed = (dtype, shape)
        if len(_npy_parsed) < 4096:
            _npy_parsed[key] = parsed
    dtype, shape = parsed
    data = hstart + hlen
    count = 1
    for n in shape:
        count *= n
    if data + count * dtype.itemsize != end:
        raise ValueError(f"the .npy data has the wrong length ({end - data} bytes for "
                         f"{dtype} {shape})")
    return dtype, shape, data


def parse_npy(buf, start: int, end: int) -> np.ndarray:
    """The array stored as .npy bytes in ``buf[start:end]`` (a read-only view when aligned),
    checked by ``npy_layout`` first."""
    dtype, shape, data = npy_layout(buf, start, end)
    count = 1
    for n in shape:
        count *= n
    arr = np.frombuffer(buf, dtype=dtype, count=count, offset=data).reshape(shape)
    if not arr.flags.aligned:
        arr = arr.copy()
    return arr


def parse_body(buf, start: int, end: int, raw: bool = False) -> tuple[bytes, list]:
    """A frame body: (meta bytes, [(group, name, array), ...]); with ``raw``, each array is
    given as the (start, end) of its .npy bytes in ``buf`` instead. Every array is checked
    (``npy_layout``) either way; ValueError (or UnicodeDecodeError, struct.error) when the body
    is not what the format says."""
    mv = memoryview(buf)
    (mlen,) = META_LEN.unpack_from(buf, start)
    pos = start + 4
    if pos + mlen + COUNT.size > end:
        raise ValueError("the frame's meta runs past its end")
    meta = bytes(mv[pos:pos + mlen])
    pos += mlen
    (n,) = COUNT.unpack_from(buf, pos)
    pos += 4
    arrays = []
    for _ in range(n):
        if pos + ENTRY.size > end:
            raise ValueError("the frame holds fewer arrays than it says")
        group, nlen, alen = ENTRY.unpack_from(buf, pos)
        pos += ENTRY.size
        if pos + nlen > end:
            raise ValueError("an array's name runs past the end of its frame")
        name = bytes(mv[pos:pos + nlen]).decode()
        pos += nlen
        if pos + alen > end:
            raise ValueError("an array runs past the end of its frame")
        try:
            if raw:
                npy_layout(buf, pos, pos + alen)     # checked even when only copied (export)
                arrays.append((group, name, (pos, pos + alen)))
            else:
                arrays.append((group, name, parse_npy(buf, pos, pos + alen)))
        except ValueError as exc:
            raise ValueError(f"array '{name}': {exc}") from None
        pos += alen
    if pos != end:
        raise ValueError("the frame has bytes after its last array")
    return meta, arrays


def crc_ok(data) -> bool:
    """Does a whole frame (head, body, crc) carry the checksum of its head and body?"""
    n = len(data)
    return n >= HEAD.size + CRC.size and \
        crc32(memoryview(data)[:n - CRC.size]) == CRC.unpack_from(data, n - CRC.size)[0]


# -- whole frames, and the ITERATION frames a BATCH frame stands for -----------------------------
def encode_frame(kind: int, meta: bytes, arrays) -> bytes:
    """A whole frame (head, body, crc) holding ``meta`` and ``arrays`` [(group, name, array)]."""
    parts = [META_LEN.pack(len(meta)), meta, COUNT.pack(len(arrays))]
    for group, name, v in arrays:
        v = check_array(v, f"'{name}'")
        nb = name.encode()
        hdr = npy_header(v.dtype, v.shape)
        parts += [ENTRY.pack(group, len(nb), len(hdr) + v.nbytes), nb, hdr, v.tobytes()]
    body = b"".join(parts)
    head = HEAD.pack(SYNC, kind, 0, 0, len(body))
    return head + body + CRC.pack(crc32(body, crc32(head)))


def iteration_tail(path: str, outer: tuple) -> bytes:
    """The part of an ITERATION (and BATCH) meta naming the execution: n_outer, path length, the
    outer iterations (i64), the path (UTF-8)."""
    pb = path.encode()
    return ITER_TAIL.pack(len(outer), len(pb)) + struct.pack(f"<{len(outer)}q", *outer) + pb


def batch_meta(first: int, count: int, trip: int | None, path: str, outer: tuple,
               flags: bytes) -> bytes:
    """A BATCH frame's meta: first iteration, count, trip, the execution, then one byte per
    iteration (bit 0: cond, bit 1: continues)."""
    return (BATCH_FIXED.pack(first, count, -1 if trip is None else trip)
            + iteration_tail(path, outer) + flags)


def parse_batch_meta(meta: bytes) -> tuple:
    """(path, outer, first, count, trip, flags) of a BATCH frame's meta; ValueError (or
    struct.error) when it does not have the format's layout."""
    first, count, trip = BATCH_FIXED.unpack_from(meta, 0)
    pos = BATCH_FIXED.size
    n_outer, plen = ITER_TAIL.unpack_from(meta, pos)
    pos += ITER_TAIL.size
    outer = struct.unpack_from(f"<{n_outer}q", meta, pos)
    pos += 8 * n_outer
    path = meta[pos:pos + plen].decode()
    pos += plen
    flags = meta[pos:]
    if first < 0 or count < 1 or len(flags) != count or len(path.encode()) != plen:
        raise ValueError("the batch's meta has the wrong length")
    return path, outer, first, count, (None if trip < 0 else trip), flags


def batch_iterations(meta: bytes, arrays: list):
    """The ITERATION frames (bytes) a BATCH frame stands for, as its writer would have written
    them one by one: ``arrays`` hold one row per iteration. ValueError when a row is missing."""
    path, outer, first, count, trip, flags = parse_batch_meta(meta)
    for _, name, a in arrays:
        if a.ndim < 1 or a.shape[0] != count:
            raise ValueError(f"array '{name}' has {a.shape[0] if a.ndim else 0} rows for "
                             f"{count} iterations")
    tail = iteration_tail(path, outer)
    for j in range(count):
        meta_j = ITER_FIXED.pack(first + j, -1 if trip is None else trip, flags[j] & 1,
                                 (flags[j] >> 1) & 1) + tail
        yield encode_frame(ITERATION, meta_j, [(g, n, a[j]) for g, n, a in arrays])
