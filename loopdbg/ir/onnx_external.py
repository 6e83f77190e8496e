"""The files an ONNX model pulls in besides itself: its external data (weights kept beside
``model.onnx`` and named by a tensor's ``location``).

A command must never write over one of them (``loopdbg.files``), so the reader lists them before
onnx loads their bytes (loading them forgets where they came from).
"""

from __future__ import annotations

import os


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
