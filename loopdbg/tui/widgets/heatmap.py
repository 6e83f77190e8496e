"""A small heat map of a concatenated output so far (its last two dimensions), in coloured blocks."""

from __future__ import annotations

import numpy as np
from rich.text import Text

RAMP = ["#0d0887", "#5302a3", "#8b0aa5", "#b83289", "#db5c68", "#f48849", "#febd2a", "#f0f921"]


def heatmap(stop, max_rows: int = 16, max_cols: int = 48) -> Text:
    e = stop.event
    t = Text()
    if e is None or not e.spec.concats:
        return t
    o = e.spec.concats[0]
    a = np.asarray(e.partial(o.name))
    if a.size == 0 or a.dtype.kind not in "biuf":
        return t
    a = a.astype(np.float64)
    while a.ndim > 2:
        a = a[0] if a.shape[0] > 0 else a.reshape(a.shape[1:])
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim == 0:
        a = a.reshape(1, 1)
    a = a[:max_rows, :max_cols]
    finite = a[np.isfinite(a)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    span = hi - lo or 1.0
    t.append(f"{o.name}: last two dims, {lo:.3g} … {hi:.3g}\n", style="dim")
    for row in a:
        for v in row:
            if not np.isfinite(v):
                t.append("××", style="bold red")
                continue
            k = int((v - lo) / span * (len(RAMP) - 1) + 0.5)
            t.append("  ", style=f"on {RAMP[k]}")
        t.append("\n")
    return t
