"""Reading an .onnx file: its bytes, within the memory budget, then the Model kept from the same
bytes by an earlier run (``model_cache``) or, when there is none, the file translated by
``onnx_reader`` (which is imported only then, with onnx and protobuf)."""

from __future__ import annotations

import os
from pathlib import Path

from loopdbg.errors import ModelError
from loopdbg.files.read import map_regular, open_regular, read_regular
from loopdbg.ir import model_cache
from loopdbg.ir.model import Model
from loopdbg.text import byte_size

ONNX_LIMIT = 2**31       # protobuf's own limit on one message: bigger weights are external data
READ_FACTOR = 6          # what reading an .onnx takes, in times its size (``read_within``)
READ_SLACK = 32 << 20    # ... allowed over the budget (ops.budget.SLACK; ir stands below ops)


def read_onnx(path: str | Path, limit: int | None = None) -> Model:
    """Read ``path`` (an ONNX model) into a ``Model`` with ``format="onnx"``; with ``limit``
    (the memory budget), a file whose reading would take more is refused before it is read.
    A model read before from the same bytes under the same path is read back from the cache
    (``model_cache``), without importing onnx."""
    path = Path(path)
    read_within(path, limit)
    info = _stat(path)                  # before the bytes are read: what they are noted under
    model = model_cache.recall(str(path), info)
    if model is None:
        model = _kept(path, info)
    if model is not None:
        return model
    data = read_regular(path, ModelError, "the model", ONNX_LIMIT)    # a FIFO: refused, not read
    if not data:
        raise ModelError(f"{path} is empty (0 bytes), not an ONNX model.")
    kept = model_cache.key(data, str(path))         # of the bytes read: those translated
    from loopdbg.ir.onnx_reader import from_bytes

    held = [data]
    del data
    model = from_bytes(held, path)
    model_cache.store(kept, model)
    model_cache.note(str(path), info, kept)
    return model


def _stat(path: Path) -> os.stat_result | None:
    """The file's stat as of now: taken on the file opened (an NFS client revalidates a file's
    attributes when it is opened; a bare ``os.stat`` may give those it cached seconds ago)."""
    try:
        with open_regular(path, ModelError, "the model") as fh:
            return os.fstat(fh.fileno())
    except (ModelError, OSError):       # read_regular says what is wrong with it
        return None


def _kept(path: Path, info: os.stat_result | None) -> Model | None:
    """The Model kept from the bytes ``path`` holds, if any: the file is mapped, not read, to
    find it (a model kept was read whole before; a file changing meanwhile hashes to no key
    kept, and is then read as any other); found, it is noted under ``info``."""
    try:
        view = map_regular(path, ModelError, "the model")
    except ModelError:                  # read_regular says what is wrong with it
        return None
    try:
        name = model_cache.key(view, str(path)) if len(view) else None
        model = model_cache.load(name)
    finally:
        view.release()
    if model is not None:
        model_cache.note(str(path), info, name)
    return model


def read_within(path: Path, limit: int | None) -> None:
    """Refuse an .onnx whose own bytes (its inline tensors: initializers, Constant and other
    attribute values, every one a protobuf copy) would take more than ``limit`` to read: the
    file's bytes, the parsed message, shape inference's copies and the arrays made from them
    peak at about READ_FACTOR times the file's size (measured: 5.1x for a 256 MiB initializer
    or Constant), with READ_SLACK allowed over the budget, as the run's checks allow its own
    (a small model's structure is not its tensors). External data is mapped, not read, and is
    not counted here."""
    try:
        size = path.stat().st_size
    except OSError:
        return                        # read_regular says what is wrong with it
    if limit is not None and size * READ_FACTOR > limit + READ_SLACK:
        raise ModelError(f"{path} holds {byte_size(size)} of its own (inline tensors), and "
                         f"reading it takes about {byte_size(size * READ_FACTOR)}, past the "
                         f"memory budget of {byte_size(limit)} (--max-memory).")
