"""Reading the files a user names: regular files only, never more than a budget, one sentence each.

A FIFO, a device (``/dev/zero``), a directory or a socket given where loopdbg reads a model, its
weights, its inputs or a trace would hang it or feed it without end; ``open_regular`` refuses them
before reading a byte (the open itself does not block on a FIFO). ``map_regular`` maps a file
read-only, so an 8 GiB ``.bin`` costs only the pages the model's constants touch. ``read_npz``
reads numpy's ``.npz`` member by member with checked sizes and a byte budget, never unpickling;
``npz_names`` lists its arrays' names from the zip's central directory alone, so that a file of
200,000 members is matched against a model's inputs before any of them is read.
Every error is the caller's error class with one sentence naming the file.
"""

from __future__ import annotations

import io
import mmap
import os
import stat
import struct
import sys
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO, Collection

import numpy as np

from loopdbg.files import kind_of

def physical_memory() -> int:
    """Bytes of physical memory (8 GiB when that cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def open_regular(path: str | Path, error: type[Exception], what: str = "") -> BinaryIO:
    """``path`` opened for binary reading if it is a regular file, else ``error`` in one sentence."""
    label = f"{path}" + (f" ({what})" if what else "")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"{label} does not exist.") from None
    except IsADirectoryError:
        raise error(f"{label} is a folder, not a regular file.") from None
    except OSError as err:
        raise error(f"{label} cannot be opened ({err.strerror}).") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{label} is {kind_of(mode)}, not a regular file; loopdbg reads only "
                        f"regular files.")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, error: type[Exception], what: str = "",
                 limit: int | None = None) -> bytes:
    """The whole of a regular file, refused past ``limit`` bytes."""
    with open_regular(path, error, what) as fh:
        size = os.fstat(fh.fileno()).st_size
        if limit is not None and size > limit:
            raise error(f"{path} is {_size(size)}, more than loopdbg reads for "
                        f"{what or 'it'} ({_size(limit)}).")
        try:
            return fh.read()
        except OSError as err:
            raise error(f"{path} cannot be read ({err.strerror}).") from None


def map_regular(path: str | Path, error: type[Exception], what: str = "") -> memoryview:
    """A read-only view of a regular file's bytes, mapped, not read (an empty file: no bytes)."""
    with open_regular(path, error, what) as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return memoryview(b"")
        try:
            return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        except (OSError, ValueError) as err:
            raise error(f"{path} cannot be mapped ({err}).") from None


# -- npz ---------------------------------------------------------------------------------------
def read_npz(path: str | Path, error: type[Exception], limit: int | None = None,
             skip: Collection[str] = ()) -> dict[str, np.ndarray | None]:
    """The arrays of an ``.npz``, by name; ``error`` for anything else, in one sentence. The
    members named in ``skip`` are not read: they are there as None.

    Each member is checked before it is decompressed: a known compression, not encrypted, its
    declared size within what is left of ``limit`` (default: a quarter of physical memory) and
    equal to the size its ``.npy`` header implies; the stream is read in chunks, so a zip bomb is
    stopped at the budget. Object arrays (pickles) are refused.
    """
    budget = physical_memory() // 4 if limit is None else limit
    with open_regular(path, error, "inputs") as fh:
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError):
            raise error(f"{path} is not an .npz file (numpy's zip of arrays).") from None
        out: dict[str, np.ndarray | None] = {}
        with archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                if name in out:
                    raise error(f"{path} holds the array '{name}' twice.")
                if name in skip:
                    out[name] = None
                    continue
                value = _member(archive, info, path, name, budget, error)
                budget -= value.nbytes
                out[name] = value
        return out


_END = struct.Struct("<4s4H2LH")              # end of central directory
_END64 = struct.Struct("<4sQ2H2L4Q")           # its zip64 record
_LOCATOR64 = struct.Struct("<4sLQL")           # where the zip64 record is
_ENTRY = struct.Struct("<4s6H3L5H2L")          # one central directory entry, before its name
_ENTRY_FLAGS = struct.Struct("<H")             # ... its flags (at 8)
_ENTRY_SIZES = struct.Struct("<3H")            # ... the lengths of its name, extra and comment (28)


def npz_names(path: str | Path, error: type[Exception]) -> list[str] | None:
    """The names of an ``.npz``'s arrays (``.npy`` left off, folders skipped), read from the zip's
    central directory only (names are decoded as ``zipfile`` decodes them); None when that
    directory is not one this reader follows, for ``read_npz`` to judge the file."""
    with open_regular(path, error, "inputs") as fh:
        size = os.fstat(fh.fileno()).st_size
        tail_at = max(size - (1 << 16) - _END.size, 0)
        fh.seek(tail_at)
        tail = fh.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < _END.size:
            return None
        _, _, _, _, count, cd_size, _, _ = _END.unpack_from(tail, at)
        end = tail_at + at                              # the central directory ends here
        if at >= _LOCATOR64.size and tail[at - _LOCATOR64.size:at - _LOCATOR64.size + 4] == \
                b"PK\x06\x07":
            end -= _LOCATOR64.size + _END64.size
            fh.seek(max(end, 0))
            record = fh.read(_END64.size)
            if len(record) != _END64.size or record[:4] != b"PK\x06\x06":
                return None
            count, cd_size = _END64.unpack(record)[7:9]
        if not 0 <= cd_size <= end:
            return None
        fh.seek(end - cd_size)
        directory = fh.read(cd_size)
    names, at, sizes, flags_of = [], 0, _ENTRY_SIZES.unpack_from, _ENTRY_FLAGS.unpack_from
    head = _ENTRY.size
    for _ in range(count):
        if directory[at:at + 4] != b"PK\x01\x02" or at + head > len(directory):
            return None
        n, extra, comment = sizes(directory, at + 28)
        raw = directory[at + head:at + head + n]
        utf8 = flags_of(directory, at + 8)[0] & 0x800
        at += head + n + extra + comment
        name = raw.decode("utf-8" if utf8 else "cp437", "replace")
        if "\x00" in name:
            name = name.split("\x00")[0]
        if not name.endswith("/"):
            names.append(name[:-4] if name.endswith(".npy") else name)
    return names if at == len(directory) else None


def _member(archive, info, path, name, budget, error) -> np.ndarray:
    where = f"{path}: array '{name}'"
    if info.flag_bits & 0x1:
        raise error(f"{where} is encrypted, which loopdbg cannot read.")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                                  zipfile.ZIP_LZMA):
        raise error(f"{where} uses zip compression method {info.compress_type}, which loopdbg "
                    f"cannot read (numpy writes stored or deflated members).")
    if info.file_size > budget + 2**16:
        raise error(f"{where} would take {_size(info.file_size)}, past the memory budget of "
                    f"{_size(max(budget, 0))} left for inputs.")
    try:
        with archive.open(info) as stream:
            version = np.lib.format.read_magic(stream)
            try:
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
                elif version in ((2, 0), (3, 0)):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
                else:
                    raise ValueError(f"npy format version {version}")
            except ValueError:
                if "ml_dtypes" in sys.modules:
                    raise
                # A header naming bfloat16, float8, int4 ... (``write.npy_descr``), which numpy
                # knows once ml_dtypes is imported: imported here, at the first such member
                # (~6 ms, which inputs without them never pay), and the member read again.
                import ml_dtypes  # noqa: F401

                return _member(archive, info, path, name, budget, error)
            if dtype.hasobject:
                raise error(f"{where} holds pickled Python objects, which loopdbg refuses to load; "
                            f"save plain arrays with numpy.savez.")
            if any(d < 0 for d in shape):
                raise error(f"{where} has a negative size in its shape {shape}.")
            if dtype.itemsize == 0:
                raise error(f"{where} has element type {dtype.str}, of zero bytes an element, "
                            f"which no array holds.")
            count = 1
            for d in shape:
                count *= d
            nbytes = count * dtype.itemsize
            if nbytes > budget:
                raise error(f"{where} has shape {shape} ({_size(nbytes)}), past the memory budget "
                            f"of {_size(max(budget, 0))} left for inputs.")
            data = _read_exactly(stream, nbytes)
            if len(data) != nbytes or stream.read(1):
                raise error(f"{where} has {'fewer' if len(data) != nbytes else 'more'} bytes than "
                            f"its header's shape {shape} and dtype {dtype} say.")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError,
            ValueError, _LZMAError) as exc:
        reason = str(exc).strip().rstrip(".") or type(exc).__name__
        raise error(f"{where} cannot be read: {reason}.") from None
    array = np.frombuffer(data, dtype=dtype, count=count)
    return array.reshape(shape[::-1]).T if fortran else array.reshape(shape)


def _read_exactly(stream, n: int) -> bytes:
    buf = io.BytesIO()
    while n > 0:
        chunk = stream.read(min(n, 1 << 22))
        if not chunk:
            break
        buf.write(chunk)
        n -= len(chunk)
    return buf.getvalue()


try:
    from lzma import LZMAError as _LZMAError
except ImportError:        # pragma: no cover - Python built without lzma
    class _LZMAError(Exception):
        pass


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
