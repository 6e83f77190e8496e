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

import os
import zipfile

import numpy as np

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
                for key, arr in _arrays(reader, wanted, outputs):
                    with zf.open(key + ".npy", "w", force_zip64=True) as f:
                        np.lib.format.write_array(f, np.asarray(arr), allow_pickle=False)
                    count += 1
            os.replace(tmp, out)
        except OSError as exc:
            raise F.TraceError(f"cannot write {out}: {exc.strerror or exc}.") from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return count


def _arrays(reader: TraceReader, wanted, outputs: bool):
    for rec in reader.records():
        kind = rec.kind
        if kind == F.ITERATION:
            f = rec.meta
            if wanted is not None and f.path not in wanted:
                continue
            base = f"{loop_key(f.path, f.outer)}/{f.iteration}"
            seen = set()
            for group, name, arr in rec.arrays:
                if group in _BARE and name not in seen:
                    seen.add(name)
                    yield f"{base}/{name}", arr
                else:
                    yield f"{base}/{F.GROUP_NAMES[group]}/{name}", arr
        elif kind == F.LOOP_FINISH:
            m = rec.meta
            if wanted is not None and m["path"] not in wanted:
                continue
            for _, name, arr in rec.arrays:
                yield f"{loop_key(m['path'], tuple(m['outer']))}/outputs/{name}", arr
        elif kind == F.INPUTS and outputs and wanted is None:
            for _, name, arr in rec.arrays:
                yield f"inputs/{name}", arr
        elif kind == F.RUN_FINISH and outputs and wanted is None:
            for _, name, arr in rec.arrays:
                yield f"outputs/{name}", arr
