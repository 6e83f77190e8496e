"""``.npz`` files of named values: how sequences and ml_dtypes arrays are stored.

Reading is ``loopdbg.engine.inputs.load_npz`` (``loopdbg.files.read``: budgeted, never unpickles);
the CLI writes through ``loopdbg.files.Output.write_npz(entries(values))``.

numpy's own ``savez`` writes an ml_dtypes array (bfloat16, float8, int4 ...) as raw bytes
(``|V2``), losing its type, and cannot write a sequence at all. loopdbg's convention:

* an ml_dtypes array is written with its dtype's name in the ``.npy`` header (``bfloat16``):
  ``numpy.load`` reads it back as that type when ml_dtypes is imported (and says it does not
  understand the type when it is not); raw-bytes arrays that numpy's ``savez`` wrote are taken as
  the type the model declares when their widths agree (``loopdbg.engine.inputs``);
* strings are numpy unicode arrays, as numpy writes them;
* a sequence ``s`` is written as ``s[0]``, ``s[1]``, ... and an empty one as ``s[]`` (a 0-length
  float32 array); an empty optional is left out.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Mapping

import numpy as np

from loopdbg.errors import InputError
from loopdbg.files.write import write_npy


def entries(values: Mapping[str, object]) -> dict[str, np.ndarray]:
    """The arrays an .npz holds for ``values`` (sequences spread out, empty optionals left out)."""
    out: dict[str, np.ndarray] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            if not value:
                out[f"{name}[]"] = np.zeros(0, np.float32)
            for k, item in enumerate(value):
                out[f"{name}[{k}]"] = np.asarray(item)
            continue
        out[name] = np.asarray(value)
    return out


def save_npz(path: str | Path, values: Mapping[str, object]) -> None:
    """Write ``values`` as an .npz numpy reads, for the Python API (see the module docstring for
    ml_dtypes types and sequences); never pickles (an object array is an error)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in entries(values).items():
            if arr.dtype.hasobject:
                raise InputError(f"'{name}' holds Python objects, which loopdbg does not save.")
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                write_npy(f, arr)
