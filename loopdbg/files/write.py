"""Every file loopdbg writes is opened here: exactly the path given, never one it reads.

Two kinds of output:

* whole files (``-o out.npz``, ``graph -o body.svg``, ``trace export -o all.npz``):
  ``Output(path, reads=..., npz=True)`` checks the path when the command starts (before a long
  run), and ``.write_npz(arrays)`` / ``.write_bytes(data)`` / ``.write(fill)`` write a temporary
  file in the same folder and rename it over the target, so a failed write (a full disk) leaves
  the old file whole and no half-written one;
* a trace being recorded (``run --trace``): ``open_recording(path, reads=...)`` opens the file
  itself (a reader of a crashed recording needs the frames on disk at that path), takes an
  exclusive lock on it and only then empties it, so a second recorder is refused before it can
  destroy the first one's file.

The promises, checked each time:

* a path that names one of the command's inputs (the model's .xml or .bin, an ONNX model's
  external data files, the inputs, a trace it reads: the same file by its device and inode, so
  through links and hard links too) or another of its outputs is refused: loopdbg never
  overwrites a file it reads;
* nothing is written through a symbolic link: an output that is a link (to a file, a folder, or
  nothing) is refused, and files are created with ``O_NOFOLLOW`` (a temporary file also with
  ``O_EXCL``), so a link planted in a model folder cannot redirect a write;
* nor through a linked folder where a stranger's files land: a folder on the way to an output
  that is inside the working directory or inside the folder of a file the command reads (the
  model's) may not be a link (``-o results/out.svg``, ``results`` shipped as a link to ``~``),
  and the output's folder is opened component by component from there with ``O_NOFOLLOW``
  (``openat``), the file created and renamed relative to that open folder, so a link planted
  after the checks is refused, not followed. Links above those folders (``/tmp`` on macOS, a
  home on another disk) are the system's and are followed;
* only regular files are written: an existing folder, device (``/dev/full``), FIFO or socket is
  refused;
* the path given is the path written: ``.npz`` is added only to a name without a suffix that does
  not exist yet, and ``Output.note`` says so;
* a failure (no space left, no permission, no such folder) is one sentence (``OutputError``).
"""

from __future__ import annotations

import errno
import os
import stat
import zipfile
from pathlib import Path
from typing import Callable, Iterable, Mapping

from loopdbg.errors import LoopdbgError
from loopdbg.files import kind_of

try:
    import fcntl
except ImportError:                 # not on POSIX: no lock (the file is still created safely)
    fcntl = None


class OutputError(LoopdbgError):
    """An output path loopdbg refuses, or a write that failed."""


Reads = Iterable[tuple[str, "str | os.PathLike | None"]]     # (what it is, path)


def _strerror(exc: OSError) -> str:
    return exc.strerror or str(exc)


def same_file(a, b) -> bool:
    """Do ``a`` and ``b`` name the same file: the same device and inode after following links
    (so hard links too), or, for a path that does not exist, the same resolved path?"""
    if a is None or b is None:
        return False
    try:
        sa, sb = os.stat(a), os.stat(b)
        return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
    except (OSError, ValueError):
        pass
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def _refuse_link(given: str, what: str) -> None:
    try:
        to = os.readlink(given)
    except (OSError, ValueError):
        return
    raise OutputError(f"refusing to write {given}: it is a symbolic link (to {to}), and loopdbg "
                      f"never writes through a link; give {what} another name.")


def check_output(path, reads: Reads = (), *, what: str = "the output") -> Path:
    """The file to write for ``path`` (made absolute, never resolved: a link is refused, not
    followed), after every check of the module docstring; ``OutputError`` naming ``path``
    otherwise."""
    given = str(path)
    if not given or given.endswith(("/", os.sep)):
        raise OutputError(f"give {what} a file name, not {given!r}.")
    _refuse_link(given, what)
    try:
        target = Path(given).absolute()
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    except (OSError, ValueError) as exc:
        raise OutputError(f"cannot write {given}: {getattr(exc, 'strerror', None) or exc}.") \
            from None
    if st is not None and stat.S_ISLNK(st.st_mode):         # made a link since
        _refuse_link(given, what)
    if st is not None and not stat.S_ISREG(st.st_mode):
        hint = "; give a file name inside it" if stat.S_ISDIR(st.st_mode) else ""
        raise OutputError(f"{given} is {kind_of(st.st_mode)}, not a regular file; loopdbg "
                          f"writes {what} only to a regular file{hint}.")
    for label, other in reads:                # files the command reads: those that exist
        if other is not None and os.path.lexists(other) and same_file(target, other):
            raise OutputError(f"{given} is {label}, which this command reads; loopdbg never "
                              f"overwrites a file it reads: choose another name for {what}.")
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {given}: the folder {folder} does not exist.")
    close(open_folder(target, reads, given, what))        # no linked folder on the way
    return target


def _guarded(target: Path, reads: Reads) -> Path | None:
    """The outermost folder whose linked sub-folders an output's path may not pass through:
    the working directory, or a folder of a file the command reads, that holds ``target``
    (lexically); None when none does."""
    roots = []
    try:
        roots.append(Path.cwd())
    except OSError:
        pass
    roots += [Path(p).absolute().parent for _, p in reads if p is not None]
    inside = [r for r in roots if r in target.parents]
    return min(inside, key=lambda r: len(r.parts)) if inside else None


def _link_at(name: str, fd: int) -> str | None:
    """What the entry ``name`` of the open folder ``fd`` links to, None if it is no link."""
    try:
        return os.readlink(name, dir_fd=fd)
    except (OSError, TypeError, NotImplementedError):
        return None


def close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def open_folder(target: Path, reads: Reads, given: str, what: str) -> int | None:
    """A descriptor of ``target``'s folder, opened from the guarded folder (``_guarded``) one
    component at a time with ``O_NOFOLLOW``: ``OutputError`` when one of them is a symbolic
    link. None where the system has no ``openat`` (the path is used as it is)."""
    if os.open not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
        return None
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
    root = _guarded(target, reads)
    start = root if root is not None else target.parent
    try:
        fd = os.open(start, flags)
    except OSError as exc:
        raise OutputError(f"cannot write {given}: {_strerror(exc)}.") from None
    try:
        for part in target.parent.relative_to(start).parts:
            try:
                nxt = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                to = _link_at(part, fd)
                if to is not None:
                    raise OutputError(
                        f"refusing to write {given}: the folder {start / part} on its way is a "
                        f"symbolic link (to {to}), and loopdbg never writes through a link in "
                        f"the working directory or the model's folder; give {what} the "
                        f"folder's real path.") from None
                raise OutputError(f"cannot write {given}: {_strerror(exc)}.") from None
            os.close(fd)
            fd, start = nxt, start / part
    except BaseException:
        os.close(fd)
        raise
    return fd


def distinct_outputs(*outputs: tuple[str, "str | os.PathLike | None"]) -> None:
    """Refuse two outputs of one command that name the same file (``-o X --trace X``)."""
    given = [(label, p) for label, p in outputs if p is not None]
    for k, (la, a) in enumerate(given):
        for lb, b in given[k + 1:]:
            if same_file(a, b):
                raise OutputError(f"{la} and {lb} name the same file ({a}); they must differ.")


class Output:
    """A whole file to write at the end of a command: checked at once, written atomically."""

    def __init__(self, path, reads: Reads = (), *, npz: bool = False, what: str = "the output"):
        self.given = str(path)
        p = Path(self.given)
        self.suffix_added = bool(npz and p.name and not p.suffix and not os.path.lexists(p)
                                 and not self.given.endswith(os.sep))
        self.path = str(p.with_name(p.name + ".npz")) if self.suffix_added else self.given
        self.reads = list(reads)
        self.what = what
        self.target = check_output(self.path, self.reads, what=what)

    def also_reads(self, reads: Reads) -> None:
        """Files the command turned out to read (a model it opened after the check): checked
        now, and again when the file is written."""
        self.reads += list(reads)
        check_output(self.path, self.reads, what=self.what)

    @property
    def note(self) -> str:
        """What to add after the path when saying it was written ("" or the .npz explanation)."""
        return (f" (.npz added: {self.given} had no suffix)" if self.suffix_added else "")

    def write(self, fill: Callable) -> None:
        """Write the file through ``fill(file)`` (a binary file object open on a temporary file
        beside the target), then rename it over the target, both in the output's folder as
        ``open_folder`` opened it (never through a link planted since the checks)."""
        target = check_output(self.path, self.reads, what=self.what)
        folder = open_folder(target, self.reads, self.path, self.what)
        name = target.name if folder is not None else str(target)
        tmp = None
        try:
            try:
                mode = stat.S_IMODE(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
            except OSError:
                mode = 0o666 & ~_umask()
            fd, tmp = _temporary(target, folder)
            with os.fdopen(fd, "wb") as f:
                fill(f)
                if hasattr(os, "fchmod"):
                    os.fchmod(f.fileno(), mode)
            check_output(self.path, self.reads, what=self.what)     # still a regular file?
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)   # (a link made
            tmp = None                                  # meanwhile is replaced, not followed)
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {_strerror(exc)}.") from None
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp, dir_fd=folder)
                except OSError:
                    pass
            close(folder)

    def write_bytes(self, data: bytes) -> None:
        self.write(lambda f: f.write(data))

    def write_npz(self, arrays: Mapping, *, compress: bool = False) -> None:
        """An .npz numpy reads back with ``np.load(path, allow_pickle=False)``, one member per
        array, named exactly by its key (any key: ``file`` and ``allow_pickle`` included)."""
        import numpy as np

        values = {}
        for name, value in arrays.items():
            a = np.asanyarray(value)
            if a.dtype.hasobject:
                raise OutputError(f"{self.path}: '{name}' holds Python objects, which loopdbg "
                                  f"never writes (they would need pickle).")
            name = str(name)
            if zipfile.ZipInfo(name + ".npy").filename != name + ".npy":
                raise OutputError(f"{self.path}: the name '{name}' cannot be kept in an .npz (a "
                                  f"zip member name cannot hold it as it is).")
            values[name] = a

        def fill(f):
            mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            with zipfile.ZipFile(f, "w", compression=mode, allowZip64=True) as zf:
                for name, a in values.items():
                    with zf.open(name + ".npy", "w", force_zip64=True) as member:
                        write_npy(member, a)

        self.write(fill)


def _temporary(target: Path, folder: int | None) -> tuple[int, str]:
    """A new file beside ``target`` (in the open ``folder`` when there is one): its descriptor
    and its name there, made with O_CREAT | O_EXCL | O_NOFOLLOW under a name nobody else made."""
    import secrets          # here: its hmac, random and base64 cost a run that writes nothing

    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    for _ in range(100):
        name = f".loopdbg-{secrets.token_hex(6)}.partial"
        path = name if folder is not None else str(target.parent / name)
        try:
            return os.open(path, flags, 0o600, dir_fd=folder), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name")


def npy_descr(dtype) -> str:
    """The ``descr`` an .npy header gives ``dtype``: numpy's own, except for the ml_dtypes types
    (bfloat16, float8, int4 ...), which numpy would write as raw bytes (``<V2``) and which are
    written by name (``bfloat16``): ``numpy.load`` reads such a file back when ml_dtypes is
    imported, and says it does not understand the type when it is not."""
    import ml_dtypes
    import numpy as np

    dt = np.dtype(dtype)
    ml = getattr(ml_dtypes, dt.name, None)
    if isinstance(ml, type) and issubclass(ml, np.generic) and np.dtype(ml) == dt:
        return dt.name
    return np.lib.format.dtype_to_descr(dt)


def write_npy(f, a) -> None:
    """``a`` as one .npy file on ``f``: numpy's own format, C order, ml_dtypes types by name."""
    import numpy as np

    if a.dtype.hasobject:
        raise OutputError("an array of Python objects cannot be written without pickle.")
    a = a if a.flags.c_contiguous else a.copy(order="C")      # (keeps a 0-d array 0-d)
    header = {"descr": npy_descr(a.dtype), "fortran_order": False, "shape": a.shape}
    try:
        np.lib.format.write_array_header_1_0(f, header)
    except ValueError:
        np.lib.format.write_array_header_2_0(f, header)
    f.write(a.tobytes())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def open_recording(path, reads: Reads = (), *, what: str = "the trace") -> int:
    """A file descriptor open for writing on ``path``, emptied, exclusively locked while it is
    open: a second recorder of the same file is refused with one sentence, its file untouched."""
    target = check_output(path, reads, what=what)
    flags = (os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NOFOLLOW", 0))
    folder = open_folder(target, reads, str(path), what)
    try:        # O_NONBLOCK: a FIFO made meanwhile cannot hang; O_NOFOLLOW: nor a link redirect
        fd = os.open(target.name if folder is not None else target, flags, 0o666, dir_fd=folder)
    except OSError as exc:
        if os.path.islink(target):
            _refuse_link(str(path), what)
        raise OutputError(f"cannot create {what} {path}: {_strerror(exc)}.") from None
    finally:
        close(folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{path} is {kind_of(st.st_mode)}, not a regular file; loopdbg "
                              f"writes {what} only to a regular file.")
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OutputError(f"{path} is being recorded by another loopdbg (it holds the "
                                  f"file's lock); record to another file, or wait until that "
                                  f"recording ends.") from None
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        os.ftruncate(fd, 0)
    except OutputError:
        os.close(fd)
        raise
    except OSError as exc:
        os.close(fd)
        raise OutputError(f"cannot create {what} {path}: {_strerror(exc)}.") from None
    return fd
