"""The onnx.reference operators that could hang on a few hundred bytes, made to end.

onnx.reference runs what loopdbg hands it without any of the run's limits: a Loop inside a
SequenceMap body would be iterated by onnx.reference's own Loop, past ``--max-iterations``, and
RegexFullMatch compiles its pattern with Python's backtracking ``re``, where ``(a+)+b`` against a
few dozen ``a`` takes longer than the universe. So:

* an operator that onnx.reference runs with a subgraph (SequenceMap) is refused when the subgraph
  holds, at any depth, a Loop or Scan (their iterations would escape ``--max-iterations``) or a
  RegexFullMatch (it would run with ``re``);
* RegexFullMatch runs on RE2 (the ``google-re2`` package, which ONNX's specification names for
  the pattern's syntax): matching takes time linear in the text, compiling is bounded by
  ``MAX_PROGRAM`` bytes of RE2 program, and a pattern RE2 cannot compile (backreferences,
  lookaround) is refused in one sentence.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import op

# Operators onnx.reference must not run inside a subgraph it runs, and why.
NOT_IN_BODIES = {
    "Loop": "its iterations would run inside onnx.reference, past --max-iterations",
    "Scan": "its iterations would run inside onnx.reference, past --max-iterations",
    "RegexFullMatch": "onnx.reference would match it with Python's backtracking re",
}
MAX_PROGRAM = 8 << 20        # bytes of memory RE2 may use for one compiled pattern


def check_subgraphs(layer: Layer, node) -> None:
    """UnsupportedOperation when a subgraph of ``node`` (a NodeProto onnx.reference is about to
    run) holds an operator of ``NOT_IN_BODIES``, at any depth."""
    todo = [a for a in node.attribute]
    while todo:
        at = todo.pop()
        graphs = [at.g] if at.type == at.GRAPH else list(at.graphs) if at.type == at.GRAPHS else []
        for g in graphs:
            for inner in g.node:
                why = NOT_IN_BODIES.get(inner.op_type) if inner.domain in ("", "ai.onnx") \
                    else None
                if why is not None:
                    raise UnsupportedOperation(
                        f"{layer.describe()} has a {inner.op_type} in its '{at.name}' subgraph, "
                        f"which loopdbg refuses: {why}.")
                todo.extend(inner.attribute)


def _re2():
    try:
        import re2
    except ImportError:
        raise UnsupportedOperation("RegexFullMatch needs the google-re2 package (pip install "
                                   "'loopdbg[onnx]'): loopdbg matches patterns only with RE2, "
                                   "which cannot backtrack for ever") from None
    return re2


@op("onnx.RegexFullMatch", versions=(20,))
def regex_full_match(layer: Layer) -> Callable:
    """RegexFullMatch-20: whether each string of the input matches ``pattern`` as a whole."""
    re2 = _re2()
    pattern = layer.data.get("pattern")
    if not isinstance(pattern, str):
        raise ValueError("it has no text attribute 'pattern'")
    options = re2.Options()
    options.log_errors = False               # RE2 would print its own lines to stderr
    options.max_mem = MAX_PROGRAM
    try:
        regex = re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        detail = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        raise ValueError(f"its pattern is not one RE2 can run ({detail})") from None
    match = regex.fullmatch

    def kernel(x):
        x = np.asarray(x)
        if x.dtype.kind not in "US":
            raise ValueError(f"its input is {x.dtype}, not a string tensor")
        flat = x.reshape(-1).tolist()
        out = np.empty(len(flat), dtype=bool)
        for k, s in enumerate(flat):
            if isinstance(s, bytes):
                s = s.decode("utf-8", "surrogateescape")
            try:
                out[k] = match(s) is not None
            except UnicodeEncodeError:
                raise ValueError(f"string {k} of its input is not valid UTF-8 text") from None
        return out.reshape(x.shape)

    return kernel
