"""``.npz`` files of named values, read and written without pickling anything.

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
from loopdbg.ir.elements import npy_descr


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Read an .npz of named arrays without ever unpickling anything."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file.")
    if not zipfile.is_zipfile(path):
        raise InputError(f"{path} is not an .npz file (numpy's zip of arrays).")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise InputError(f"{path} holds pickled Python objects, which loopdbg refuses to load; "
                             f"save plain numeric arrays with numpy.savez.") from None
        raise InputError(f"{path} could not be read as an .npz of arrays: {exc}.") from None
    except TypeError as exc:          # a dtype name numpy does not know
        raise InputError(f"{path} could not be read as an .npz of arrays: {exc}.") from None
    except (OSError, zipfile.BadZipFile, EOFError, MemoryError) as exc:
        raise InputError(f"{path} could not be read as an .npz of arrays: {exc}.") from None


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
    """Write ``values`` as an .npz numpy reads (see the module docstring for ml_dtypes types and
    sequences); never pickles (an object array is an error)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in entries(values).items():
            if arr.dtype.hasobject:
                raise InputError(f"'{name}' holds Python objects, which loopdbg does not save.")
            arr = arr if arr.flags.c_contiguous else arr.copy(order="C")   # keeps 0-d
            header = {"descr": npy_descr(arr.dtype), "fortran_order": False,
                      "shape": arr.shape}
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                try:
                    np.lib.format.write_array_header_1_0(f, header)
                except ValueError:
                    np.lib.format.write_array_header_2_0(f, header)
                f.write(arr.tobytes())
