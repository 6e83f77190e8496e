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

import json
import os
import struct
import zipfile

from loopdbg.trace import format as F
from loopdbg.trace.reader import TraceReader

_BARE = (F.BACK_EDGES, F.SCAN_SLICES, F.SLICED_INPUTS)


def loop_key(path: str, outer: tuple) -> str:
    return f"{path}[{','.join(map(str, outer))}]" if outer else path


def export(trace: str, out: str, *, loops: list[str] | None = None, compress: bool = False,
           outputs: bool = True) -> int:
    """Write ``out`` (.npz); return the number of arrays written."""
    wanted = set(loops) if loops else None
    count = 0
    tmp = f"{out}.partial"
    mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with TraceReader(trace) as reader:
        if wanted is not None:
            missing = wanted - set(reader.paths())
            if missing:
                known = ", ".join(f"'{p}'" for p in reader.paths()) or "none"
                raise F.TraceError(f"{trace}: no loop {', '.join(map(repr, sorted(missing)))} in "
                                   f"this trace; its loops: {known}.")
        try:
            with zipfile.ZipFile(tmp, "w", compression=mode, allowZip64=True) as zf:
                for key, data, (a, b) in _arrays(reader, wanted, outputs):
                    info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
                    info.compress_type = mode
                    info.file_size = b - a
                    with zf.open(info, "w", force_zip64=b - a > 1 << 30) as f:
                        f.write(memoryview(data)[a:b])      # the trace's own .npy bytes
                    count += 1
            os.replace(tmp, out)
        except OSError as exc:
            raise F.TraceError(f"cannot write {out}: {exc.strerror or exc}.") from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return count


def _arrays(reader: TraceReader, wanted, outputs: bool):
    """(key, frame bytes, (start, end) of the .npy) of every array to export, in file order."""
    for _, kind, data in reader.raw():
        if kind not in (F.ITERATION, F.LOOP_FINISH, F.INPUTS, F.RUN_FINISH):
            continue
        meta, arrays = F.parse_body(data, F.HEAD.size, len(data) - F.CRC.size, raw=True)
        if kind == F.ITERATION:
            path, outer, iteration = _iteration_key(meta)
            if wanted is not None and path not in wanted:
                continue
            base = f"{loop_key(path, outer)}/{iteration}"
            seen = set()
            for group, name, span in arrays:
                if group in _BARE and name not in seen:
                    seen.add(name)
                    yield f"{base}/{name}", data, span
                else:
                    yield f"{base}/{F.GROUP_NAMES[group]}/{name}", data, span
        elif kind == F.LOOP_FINISH:
            m = json.loads(meta)
            if wanted is not None and m["path"] not in wanted:
                continue
            for _, name, span in arrays:
                yield f"{loop_key(m['path'], tuple(m['outer']))}/outputs/{name}", data, span
        elif outputs and wanted is None:
            prefix = "inputs" if kind == F.INPUTS else "outputs"
            for _, name, span in arrays:
                yield f"{prefix}/{name}", data, span


def _iteration_key(meta: bytes) -> tuple[str, tuple, int]:
    it, _, _, _, n_outer, plen = F.ITER_META.unpack_from(meta, 0)
    pos = F.ITER_META.size
    outer = struct.unpack_from(f"<{n_outer}q", meta, pos)
    pos += 8 * n_outer
    return meta[pos:pos + plen].decode(), outer, it
