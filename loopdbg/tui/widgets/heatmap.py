"""A heat map of one tensor in coloured blocks, with its axes labelled and its scale.

What is shown: the first concatenated output as it stands (the rows so far), else the largest
value carried by a back edge (the loop's state, a 1 MiB vector too). A tensor of more than two
dimensions shows its last two at index 0 of the others (said in the title); one larger than the
room is shown as the mean of blocks of elements (said too), never cropped silently. Cells grow
to use the room when the tensor is small.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from loopdbg.text import safe

RAMP = ["#0d0887", "#5302a3", "#8b0aa5", "#b83289", "#db5c68", "#f48849", "#febd2a", "#f0f921"]
LABEL = 8                   # columns of the row labels


def subject(view) -> tuple[str, np.ndarray] | None:
    """(what, tensor) the heat map shows at this stop, or None."""
    e = view.event
    if e is None:
        return None
    spec = e.spec
    if spec.concats:
        o = spec.concats[0]
        return f"{o.name} so far", np.asarray(e.partial(o.name))
    best = None
    for p, r in spec.back_edge_view:
        a = np.asarray(e.body_out[r])
        if a.dtype.kind in "biuf" and a.size > 1 and (best is None or a.size > best[1].size):
            best = (f"{p} (carried to the next iteration)", a)
    return best


def _as_matrix(a: np.ndarray) -> tuple[np.ndarray, str]:
    """A 2-D view of ``a`` and what was taken: ``[0, :, :]`` or a folding of a long vector."""
    note = ""
    if a.ndim > 2:
        lead = a.ndim - 2
        a = a[(0,) * lead] if all(d > 0 for d in a.shape[:lead]) else a.reshape(a.shape[-2:])
        note = "[" + "0, " * lead + ":, :]"
    if a.ndim == 0:
        a = a.reshape(1, 1)
    if a.ndim == 1:
        a = a[None, :]
    return a, note


def _blocks(a: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, int, int]:
    """``a`` averaged over blocks so that it has at most ``rows`` × ``cols`` cells."""
    br = -(-a.shape[0] // rows)
    bc = -(-a.shape[1] // cols)
    if br == 1 and bc == 1:
        return a, 1, 1
    r, c = -(-a.shape[0] // br), -(-a.shape[1] // bc)
    padded = np.full((r * br, c * bc), np.nan)
    padded[: a.shape[0], : a.shape[1]] = a
    with np.errstate(all="ignore"):
        blocks = padded.reshape(r, br, c, bc)
        finite = np.isfinite(blocks)
        sums = np.where(finite, blocks, 0.0).sum(axis=(1, 3))
        counts = finite.sum(axis=(1, 3))
        out = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return out, br, bc


def heatmap_text(what: str, value, width: int = 60, height: int = 10) -> Text:
    t = Text()
    a = np.asarray(value)
    if a.size == 0 or a.dtype.kind not in "biuf":
        t.append(f"{safe(what)}: {a.shape} {a.dtype}, nothing to colour\n", style="dim")
        return t
    shape = tuple(a.shape)
    m, note = _as_matrix(a.astype(np.float64))
    rows_room = max(height - 3, 1)               # title, column labels, scale
    cols_room = max((width - LABEL) // 2, 1)
    row_step = None
    if m.shape[0] == 1 and m.shape[1] > cols_room:      # a long vector: rows of cells, each
        n = m.shape[1]                                   # the mean of consecutive values
        chunk = -(-n // (rows_room * cols_room))
        cells = -(-n // chunk)
        padded = np.full(-(-cells // cols_room) * cols_room * chunk, np.nan)
        padded[:n] = m[0]
        with np.errstate(all="ignore"):
            blocks = padded.reshape(-1, chunk)
            finite = np.isfinite(blocks)
            sums = np.where(finite, blocks, 0.0).sum(axis=1)
            means = np.where(finite.any(axis=1), sums / np.maximum(finite.sum(axis=1), 1),
                             np.nan)
        m = means.reshape(-1, cols_room)
        br, bc, row_step = 1, chunk, cols_room * chunk
        note += ", row by row" + (f", each cell the mean of {chunk} values" if chunk > 1 else "")
    else:
        m, br, bc = _blocks(m, rows_room, cols_room)
        if br > 1 or bc > 1:
            note += f", each cell the mean of a {br}×{bc} block"
    finite = m[np.isfinite(m)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = hi - lo or 1.0
    cell = max(2, min(6, (width - LABEL) // max(m.shape[1], 1)))
    if row_step is not None:
        cell = 2
    t.append(f"{safe(what)} {shape}{note}\n", style="bold")
    step = max(1, 8 // cell)                    # a column label every few cells
    span_width = cell * m.shape[1]
    labels = "".join(f"{j * bc:<{cell * step}}" for j in range(0, m.shape[1], step)
                     if j * cell + len(str(j * bc)) <= span_width)       # whole labels only
    t.append(" " * LABEL + labels[:span_width] + "\n", style="dim")
    for i, row in enumerate(m):
        t.append(f"{i * (row_step or br):>{LABEL - 1}} ", style="dim")
        for v in row:
            if not np.isfinite(v):
                t.append("×" * cell, style="bold red")
                continue
            k = int((v - lo) / span * (len(RAMP) - 1) + 0.5)
            t.append(" " * cell, style=f"on {RAMP[k]}")
        t.append("\n")
    t.append(" " * LABEL + f"{lo:.4g} ", style="dim")
    for colour in RAMP:
        t.append(" ", style=f"on {colour}")
    t.append(f" {hi:.4g}\n", style="dim")
    return t


def heatmap(view, width: int = 60, height: int = 10) -> Text:
    found = subject(view)
    if found is None:
        return Text()
    return heatmap_text(*found, width=width, height=height)
