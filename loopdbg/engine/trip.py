"""Trip counts that mean "no limit": how a trip count is said to a person.

An exporter writes a ``while`` loop as an ONNX/OpenVINO Loop whose trip count is the largest
integer of its type (TorchScript: INT64_MAX, some converters INT32_MAX): a bound no run reaches.
The engine runs it as the number it is; the faces say "no limit (while)" instead of the 19 digits.
"""

from __future__ import annotations

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
UNBOUNDED = {INT64_MAX: "INT64_MAX", INT32_MAX: "INT32_MAX"}


def is_unbounded(trip) -> bool:
    """True for no trip count (None) and for the largest int64/int32 (a while loop's)."""
    return trip is None or (not isinstance(trip, bool) and isinstance(trip, int)
                            and int(trip) in UNBOUNDED)


def trip_text(trip) -> str:
    """``"7"``, ``"no limit"`` (None: negative or absent), ``"no limit (while)"`` (INT64_MAX)."""
    if trip is None:
        return "no limit"
    if is_unbounded(int(trip)):
        return "no limit (while)"
    return str(trip)
