"""Export a trace as a plain .npz, one array per (loop, iteration, tensor); no pickles.

Keys::

    inputs/NAME                  the model inputs
    LOOP/K/NAME                  iteration K of LOOP: back edges, scan slices, sliced inputs
    LOOP/K/inputs/NAME           every body input (recorded in iteration 0)
    LOOP/K/nodes/NAME            every body node (traces recorded with --trace-all)
    LOOP/outputs/NAME            the loop's last-value outputs
    outputs/NAME                 the model outputs

A nested loop's LOOP carries the iterations of its enclosing loops: ``outer/inner[2]/3/h`` is
iteration 3 of ``outer/inner`` while ``outer`` was in its iteration 2. A bare NAME that would
collide with another tensor of the same iteration is written ``GROUP/NAME`` instead. The archive
is written one array at a time, so memory stays flat for any trace size.
"""

from __future__ import annotations

import struct
import zipfile

from loopdbg.files import Output
from loopdbg.text import listing
from loopdbg.trace import format as fmt
from loopdbg.trace.reader import TraceReader
from loopdbg.trace.frames import iteration_fields

_BARE = (fmt.BACK_EDGES, fmt.SCAN_SLICES, fmt.SLICED_INPUTS)


def loop_key(path: str, outer: tuple) -> str:
    return f"{path}[{','.join(map(str, outer))}]" if outer else path


def export(trace: str, out, *, loops: list[str] | None = None, compress: bool = False,
           outputs: bool = True, skipped: list | None = None) -> int:
    """Write ``out`` (a path, or a ``loopdbg.files.Output``: never the trace itself, only a
    regular file, through a temporary file); return the number of arrays written.

    Every array is checked (``format.npy_layout``: no object dtype, sizes that match its frame)
    before its bytes are copied; a trace holding anything else is refused, nothing written. A
    damaged frame (its checksum fails) cannot be read at all: it is stepped over, and its
    sentence added to ``skipped`` (the caller says the export is incomplete)."""
    skipped = [] if skipped is None else skipped
    if not isinstance(out, Output):
        out = Output(out, [("the trace", trace)], npz=True, what="the export")
    wanted = set(loops) if loops else None
    mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    count = 0
    with TraceReader(trace) as reader:
        if wanted is not None:
            missing = wanted - set(reader.paths())
            if missing:
                known = listing(f"'{p}'" for p in reader.paths()) or "none"
                raise fmt.TraceError(f"{trace}: no loop {listing(map(repr, sorted(missing)))} in "
                                   f"this trace; its loops: {known}.")

        def fill(f):
            nonlocal count
            keys = set()
            with zipfile.ZipFile(f, "w", compression=mode, allowZip64=True) as zf:
                del skipped[:]                  # (a retried write walks the file again)
                for key, data, (a, b) in _arrays(reader, wanted, outputs, skipped):
                    info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
                    if info.filename != key + ".npy" or key in keys:
                        raise fmt.TraceError(f"{reader.path}: the array '{key}' cannot be exported "
                                           f"under its own name (" + ("another array has it"
                                           if key in keys else "a zip member name cannot hold "
                                           "it") + "); nothing was written.")
                    keys.add(key)
                    info.compress_type = mode
                    info.file_size = b - a
                    with zf.open(info, "w", force_zip64=b - a > 1 << 30) as member:
                        member.write(memoryview(data)[a:b])    # the trace's own, checked bytes
                    count += 1

        out.write(fill)
    return count


def _arrays(reader: TraceReader, wanted, outputs: bool, skipped: list):
    """(key, frame bytes, (start, end) of the .npy) of every array to export, in file order."""
    for off, kind, data in reader.raw(skipped):
        if kind not in (fmt.ITERATION, fmt.LOOP_FINISH, fmt.INPUTS, fmt.RUN_FINISH):
            continue
        try:
            meta, arrays = fmt.parse_body(data, fmt.HEAD.size, len(data) - fmt.CRC.size, raw=True)
            if kind == fmt.ITERATION:
                path, outer, iteration = iteration_fields(meta)[:3]
            elif kind == fmt.LOOP_FINISH:
                m = fmt.check_meta(kind, fmt.load_json(meta))
                path, outer = m["path"], tuple(m["outer"])
        except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
            raise fmt.TraceError(f"{reader.path}: the {fmt.KIND_NAMES.get(kind)} frame at byte {off} "
                               f"cannot be exported: {exc}; nothing was written.") from None
        if kind == fmt.ITERATION:
            if wanted is not None and path not in wanted:
                continue
            base = f"{loop_key(path, outer)}/{iteration}"
            seen = set()
            for group, name, span in arrays:
                if group in _BARE and name not in seen:
                    seen.add(name)
                    yield f"{base}/{name}", data, span
                else:
                    yield f"{base}/{_group(group)}/{name}", data, span
        elif kind == fmt.LOOP_FINISH:
            if wanted is not None and path not in wanted:
                continue
            for _, name, span in arrays:
                yield f"{loop_key(path, outer)}/outputs/{name}", data, span
        elif outputs and wanted is None:
            prefix = "inputs" if kind == fmt.INPUTS else "outputs"
            for _, name, span in arrays:
                yield f"{prefix}/{name}", data, span


def _group(group: int) -> str:
    return fmt.GROUP_NAMES[group] if group < len(fmt.GROUP_NAMES) else f"group{group}"
