"""ONNX tensors whose bytes live in an external file beside the model: mapped, never read whole.

``onnx.load`` reads every external file into the protobuf, once per tensor that names it: 200
initializers pointing into one 4 MiB file cost 800 MiB, a sparse file of many GiB costs its
apparent size, and a location naming a FIFO or ``/dev/zero`` hangs the read. loopdbg reads the
model without its external data and gives each such tensor here:

* the location must be a relative path inside the model's folder (as ONNX's own checker asks),
  naming a regular file (``files.read.map_regular``: a FIFO or device is refused before it is
  opened for reading);
* each file is mapped read-only once, keyed by its identity (device, inode), however it is named;
* a tensor whose elements are stored as numpy holds them is a read-only view of the mapping: its
  pages are read when a kernel touches them, and count then in the run's resident size (so
  against ``--max-memory``); packed 4-bit and 2-bit types are unpacked into a copy;
* a tensor is made once per (file, offset, length, type, dims): initializers naming the same
  region share one array.

Offsets and lengths are checked against the file's size and the tensor's shape and type.
``external_files`` lists the files a model names before any is read: a command must never write
over one of them (``loopdbg.files``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from loopdbg.errors import ModelError
from loopdbg.files.read import map_regular
from loopdbg.ir import elements
from loopdbg.ir.onnx_names import ONNX_TYPES


class ExternalData:
    """The external files of one ONNX model (``folder``: the model's), mapped on first use."""

    def __init__(self, folder: Path | None, where: str):
        self.folder = folder.resolve() if folder is not None else None
        self.where = where
        self._maps: dict[tuple[int, int], memoryview] = {}
        self._arrays: dict[tuple, np.ndarray] = {}
        self.files: list[Path] = []             # every external file read, in order

    def array(self, t, what: str) -> np.ndarray:
        """The value of TensorProto ``t`` whose data location is external."""
        fail = f"{self.where}{what} has its data in an external file"
        info = {e.key: e.value for e in t.external_data}
        location = info.get("location", "")
        if self.folder is None:
            raise ModelError(f"{fail}, but the model was not read from a file.")
        if not location or os.path.isabs(location) or "\0" in location:
            raise ModelError(f"{fail} whose location {location!r} is not a path relative to the "
                             f"model's folder.")
        path = (self.folder / location).resolve()
        if self.folder not in path.parents:
            raise ModelError(f"{fail}, {location!r}, outside the model's folder; loopdbg reads "
                             f"external data only from the model's own folder.")
        try:
            offset = int(info.get("offset", "0"))
            length = int(info["length"]) if "length" in info else None
        except ValueError:
            raise ModelError(f"{fail} whose offset or length is not a whole number.") from None
        data, ident = self._map(path, location, what)
        dims = tuple(int(d) for d in t.dims)
        if any(d < 0 for d in dims):
            raise ModelError(f"{self.where}{what} has a negative dimension {dims}.")
        et = ONNX_TYPES.get(t.data_type)
        dtype = elements.numpy_dtype(et) if et and et != "string" else None
        if dtype is None:
            raise ModelError(f"{self.where}{what} has element type "
                             f"{ONNX_TYPES.get(t.data_type, t.data_type)}, which loopdbg does not "
                             f"read from external data.")
        count = 1
        for d in dims:
            count *= d
        bits = elements.bit_width(et)
        need = (count * bits + 7) // 8
        if length is None:
            length = need
        if offset < 0 or length != need or offset + length > len(data):
            raise ModelError(f"{fail}, {location}, at offset {offset} with length {length}, "
                             f"but its shape {dims} of {et} needs {need} bytes and the file has "
                             f"{len(data)}.")
        key = (ident, offset, length, t.data_type, dims)
        found = self._arrays.get(key)
        if found is not None:
            return found
        if bits == dtype.itemsize * 8:          # stored as numpy holds it: a view of the map
            value = np.frombuffer(data, dtype=dtype.newbyteorder("<"), count=count,
                                  offset=offset).reshape(dims)
        else:                                   # packed (int4, uint2 ...): unpacked, a copy
            value = elements.decode(bytes(data[offset:offset + length]), et, dims)
        value.flags.writeable = False
        self._arrays[key] = value
        return value

    def _map(self, path: Path, location: str, what: str) -> tuple[memoryview, tuple[int, int]]:
        try:
            st = path.stat()
        except OSError as exc:
            raise ModelError(f"{self.where}the external data file of {what}, {location}, cannot "
                             f"be read ({exc.strerror or exc}).") from None
        ident = (st.st_dev, st.st_ino)
        data = self._maps.get(ident)
        if data is None:
            data = map_regular(path, ModelError, "external data of the model")
            self._maps[ident] = data
            self.files.append(path)
        return data, ident


def external_files(proto, folder: str) -> tuple[str, ...]:
    """The external data files ``proto``'s tensors name, as paths under ``folder`` (the model's
    folder), each once, in order of first use: initializers, sparse initializers, tensors in node
    attributes, in every subgraph and function."""
    seen: dict[str, None] = {}
    for tensor in _tensors(proto):
        if tensor.data_location != tensor.EXTERNAL:
            continue
        for entry in tensor.external_data:
            if entry.key == "location" and entry.value:
                seen.setdefault(os.path.join(folder, entry.value))
    return tuple(seen)


def _tensors(proto):
    graphs = [proto.graph] + [f for f in proto.functions]
    while graphs:
        g = graphs.pop()
        for t in getattr(g, "initializer", ()):
            yield t
        for s in getattr(g, "sparse_initializer", ()):
            yield s.values
            yield s.indices
        for node in g.node:
            for a in node.attribute:
                if a.HasField("t"):
                    yield a.t
                yield from a.tensors
                if a.HasField("sparse_tensor"):
                    yield a.sparse_tensor.values
                    yield a.sparse_tensor.indices
                for s in a.sparse_tensors:
                    yield s.values
                    yield s.indices
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)
