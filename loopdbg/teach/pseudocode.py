"""A loop written as C-like pseudo-code with the model's own names, one phase per line.

Each line carries the phase of the loop it belongs to, so a face can highlight where a stop is:
``init`` (before the first iteration), ``test`` (the trip-count / condition test), ``feed`` (slices
and the counter), ``body``, ``collect`` (scan pieces), ``cond`` (the body condition), ``carry``
(back edges), ``output`` (after the loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from loopdbg.engine.loopspec import LoopSpec
from loopdbg.ir import model as irm


@dataclass(frozen=True)
class Line:
    phase: str
    text: str
    indent: int = 0

    def render(self) -> str:
        return "    " * self.indent + self.text


def _slice_text(f) -> str:
    order = "forward" if f.stride > 0 else "backward"
    return (f"{f.name} = chunk i of input {f.ext} along axis {f.axis} "
            f"({order}; start={f.start}, end={f.end}, stride={f.stride}, part_size={f.part_size})")


def pseudocode(spec: LoopSpec, trip_text: str = "trip_count", cond_text: str = "execution_condition"
               ) -> list[Line]:
    """The pseudo-code of one Loop/TensorIterator (see the module docstring for the phases)."""
    lines: list[Line] = []
    names = spec.param_names
    results = spec.result_names
    for pos, ext in spec.invariant:
        lines.append(Line("init", f"{names[pos]} = input {ext};  // invariant"))
    for pos, ext in spec.merged:
        lines.append(Line("init", f"{names[pos]} = input {ext};  // initial value, carried"))
    for o in spec.concats:
        lines.append(Line("init", f"{o.name} = [];  // concatenated on axis {o.axis}"
                                  + (", reversed" if o.stride < 0 else "")))
    if spec.kind == "Loop":
        i = names[spec.current_iteration] if spec.current_iteration is not None else "i"
        lines.append(Line("init", f"cond = {cond_text};"))
        lines.append(Line("test", f"for ({i} = 0; {i} < {trip_text} && cond; {i}++) {{"))
    else:
        lines.append(Line("test", "for (i = 0; i < N; i++) {  // N = number of slices"))
    for f in spec.sliced:
        lines.append(Line("feed", _slice_text(f) + ";", 1))
    param_list = ", ".join(names)
    body_results = ", ".join(results)
    lines.append(Line("body", f"({body_results}) = body({param_list});", 1))
    for o in spec.concats:
        lines.append(Line("collect", f"{o.name}.append({results[o.result_pos]});", 1))
    if spec.kind == "Loop" and spec.cond_result is not None:
        lines.append(Line("cond", f"cond = {results[spec.cond_result]};"
                                  "  // false: this iteration still counts, then stop", 1))
    for p, r in spec.back_edges:
        lines.append(Line("carry", f"{names[p]} <- {results[r]};", 1))
    lines.append(Line("test", "}"))
    for o in spec.outputs:
        if o.kind == irm.CONCAT:
            lines.append(Line("output", f"output {o.index} = concat({o.name}, axis={o.axis});"))
        else:
            lines.append(Line("output", f"output {o.index} = {results[o.result_pos]};"
                                        "  // value of the last iteration"))
    return lines
