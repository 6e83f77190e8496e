"""Shapes as the model files write them: ``"2,3"``, ``"?"``, ``"1..10"``, ``"..."``.

Plain text parsing with no reader attached, so the engine (which checks Parameter shapes against
inputs) and the readers share one definition without the engine depending on a file format.
"""

from __future__ import annotations

MAX_RANK = 64              # numpy's limit on the number of dimensions of an array
MAX_DIM = 2**63 - 1        # numpy's limit on one dimension (a shape "0,10**20" holds no bytes)


def parse_shape(text: str) -> tuple[int, ...] | None:
    """Parse a Parameter/Const ``shape`` string; ``None`` means dynamic rank.

    ``""`` is a scalar, ``"2,3"`` / ``"2, 3"`` static, ``"?"`` or ``"-1"`` a dynamic dim, and a
    bounded dim ``"1..10"`` is treated as dynamic (-1) because values, not bounds, decide shapes at
    run time. ``"..."`` is dynamic rank. Anything else raises ``ValueError``.
    """
    text = text.strip()
    if text == "":
        return ()
    if text == "...":
        return None
    parts = text.split(",")
    if len(parts) > MAX_RANK:
        raise ValueError(f"rank {len(parts)} is more than the {MAX_RANK} dimensions numpy supports")
    return tuple(parse_dim(part) for part in parts)


def parse_dim(text: str) -> int:
    """One dimension of a shape (or the text of a ``<dim>``): -1 when dynamic or bounded."""
    text = text.strip()
    if text in ("?", "-1"):
        return -1
    if ".." in text:
        low, _, high = text.partition("..")
        for bound in (low, high):
            if bound.strip() and not bound.strip().isdigit():
                raise ValueError(f"bad dimension '{text}'")
        return -1
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"bad dimension '{text}'")
    if len(text) > 18 and int(text) > MAX_DIM:
        raise ValueError(f"dimension {text[:30]} is past the largest numpy holds")
    return int(text)
