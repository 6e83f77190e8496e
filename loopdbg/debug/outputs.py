"""What a loop and the model have output so far: the UI's Outputs tab reads it from here.

A loop's output is its last value (what the Result holds after the current iteration, which is
the output if the loop ends here) or its concatenation so far (the pieces of the iterations run);
once the loop has ended, the values it gave. The model's outputs exist once the run has ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopdbg.ir.model import LAST_VALUE


@dataclass(frozen=True)
class OutputValue:
    """An output of a loop or of the model, and how far its value is."""

    name: str
    owner: str                 # "loop 'path'" or "model"
    state: str                 # how far the value is: "so far (...)", "final", "not yet"
    value: Any = None          # None while there is none ("not yet")


def loop_outputs(event, loop_end=None) -> list[OutputValue]:
    """The outputs of ``event``'s loop execution after that iteration (final ones when
    ``loop_end``, its LoopFinished, is given)."""
    if event is None:
        return []
    spec, owner = event.spec, f"loop '{event.path}'"
    if loop_end is not None:
        return [OutputValue(name, owner, "final", value)
                for name, value in loop_end.outputs.items()]
    out = []
    for o in spec.outputs:
        if o.kind == LAST_VALUE:
            out.append(OutputValue(o.name, owner, f"last value so far (iteration "
                                   f"{event.iteration})", event.body_out[o.result_pos]))
        else:
            out.append(OutputValue(o.name, owner, f"concatenated so far ({event.iteration + 1} "
                                   f"piece{'s' * (event.iteration != 0)})",
                                   event.partial(o.name)))
    return out


def model_outputs(names, finished=None) -> list[OutputValue]:
    """The model's outputs: their values once the run has ``finished`` (a RunFinished)."""
    if finished is not None:
        return [OutputValue(name, "model", "final", value)
                for name, value in finished.outputs.items()]
    return [OutputValue(name, "model", "not yet: the run has not ended") for name in names]
