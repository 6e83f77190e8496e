"""Pieces shared by the texts of ``check`` and ``check --against``: tables, numbers, values side by
side, and ``lines``, which joins a report's lines with every unprintable character escaped.

Each element of a report's line list is one line by construction; a newline inside one can only
come from a name in a file, so ``lines`` escapes it (``loopdbg.text.safe``) with the rest.
"""

from __future__ import annotations

import numpy as np

from loopdbg.check.compare import errors, fmt_err, fmt_shape
from loopdbg.text import safe as printable

SIDE_BY_SIDE = 8          # values shown around the largest error


def lines(parts: list[str]) -> str:
    return "\n".join(printable(p) for p in parts)


def table(header, rows, indent: int = 2) -> list[str]:
    rows = [tuple(printable(str(x)) for x in row) for row in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    pad = " " * indent
    out = []
    for row in (header, *rows):
        cells = [str(x).ljust(w) for x, w in zip(row, widths)]
        out.append((pad + "  ".join(cells)).rstrip())
    return out


def difference_lines(c, ours, theirs, left: str, right: str, others=()) -> list[str]:
    """What differs in a comparison ``c``, the values side by side, the other tensors."""
    if c.max_abs is not None:
        out = [f"  {c.why}: max abs error {fmt_err(c.max_abs)}, max rel error "
               f"{fmt_err(c.max_rel)}"]
    else:
        out = [f"  {c.why}"]
    out += side_by_side(ours, theirs, left, right)
    if others:
        more = ", ".join(others[:6]) + (", ..." if len(others) > 6 else "")
        out.append(f"  also different in this iteration: {more}")
    return out


def side_by_side(ours, theirs, left: str = "loopdbg", right: str = "OpenVINO") -> list[str]:
    """The values around the largest difference: index, ``left``'s, ``right``'s, |difference|."""
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape or a.size == 0:
        width = max(len(left), len(right)) + 1
        return [f"  {(left + ':').ljust(width)} {a.dtype} {fmt_shape(a.shape)} {few(a)}",
                f"  {(right + ':').ljust(width)} {b.dtype} {fmt_shape(b.shape)} {few(b)}"]
    fa = a.astype(np.float64) if a.dtype.kind in "biu" else a
    fb = b.astype(np.float64) if b.dtype.kind in "biu" else b
    diff, _ = errors(fa, fb)
    flat = diff.reshape(-1)
    worst = int(np.argmax(flat))
    lo = max(0, min(worst - SIDE_BY_SIDE // 2, flat.size - SIDE_BY_SIDE))
    rows = []
    for k in range(lo, min(lo + SIDE_BY_SIDE, flat.size)):
        idx = np.unravel_index(k, a.shape) if a.ndim else ()
        mark = "  <- largest" if k == worst and flat[k] > 0 else ""
        rows.append(("[" + ", ".join(map(str, idx)) + "]", num(a.reshape(-1)[k]),
                     num(b.reshape(-1)[k]), fmt_err(float(flat[k])) + mark))
    return table(("index", left, right, "|difference|"), rows, indent=4)


def value_range(a: np.ndarray) -> str:
    if a.size == 0:
        return "empty"
    if a.dtype.kind not in "biuf":
        return few(a)
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        finite = a[np.isfinite(a)]
        nan = int(np.isnan(a).sum())
        inf = int(np.isinf(a).sum())
        head = f"{num(finite.min())} .. {num(finite.max())}" if finite.size else "no finite"
        return f"{head} ({nan} NaN, {inf} inf)"
    return f"{num(a.min())} .. {num(a.max())}"


def num(x) -> str:
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.9g}"
    if isinstance(x, (np.bool_, bool)):
        return "true" if x else "false"
    return str(x)


def few(a: np.ndarray) -> str:
    if a.size == 0:
        return "empty"
    flat = a.reshape(-1)[:SIDE_BY_SIDE]
    text = ", ".join(num(x) for x in flat)
    return f"[{text}{', ...' if a.size > SIDE_BY_SIDE else ''}]"


def short_version(v: str) -> str:
    return v.split("-")[0] if v else "?"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
