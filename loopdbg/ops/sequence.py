"""Sequence ops: ReverseSequence, Reverse, Roll and GatherTree (the CTC ops are in ``ctc``).

* ReverseSequence-1 reverses the first ``seq_lengths[b]`` elements along ``seq_axis`` of each
  item ``b`` along ``batch_axis``; a length of 0 leaves the item as it is (as 1 would), a length
  past the axis is an error. Lengths may be given as floats; they are truncated.
* Reverse-1 flips the axes given as indices (``mode="index"``) or as a boolean mask.
* Roll-7 shifts cyclically; a scalar shift applies to every axis, repeated axes add their shifts.
* GatherTree-1 walks the parent pointers of a beam search back from each beam's last step
  (``min(max_seq_len[b], T)``), fills the steps past that with ``end_token``, and after the first
  ``end_token`` of a beam fills the rest with it.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import axis_of, choice, int_attr, ints
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import same

# ---- ReverseSequence -------------------------------------------------------------------------

@op("ReverseSequence", versions=(1,), shape=same)
def _reverse_sequence(layer: Layer):
    batch_attr = int_attr(layer, "batch_axis", 0)
    seq_attr = int_attr(layer, "seq_axis", 1)

    def reverse_sequence(x, seq_lengths):
        x = np.asarray(x)
        b_ax, s_ax = axis_of(batch_attr, x.ndim), axis_of(seq_attr, x.ndim)
        if b_ax == s_ax:
            raise ValueError(f"batch_axis and seq_axis are the same axis {b_ax}")
        n, t = x.shape[b_ax], x.shape[s_ax]
        lengths = np.asarray(seq_lengths).reshape(-1)
        if lengths.size != n:
            raise ValueError(f"seq_lengths has {lengths.size} elements for a batch of {n}")
        lengths = lengths.astype(np.int64)
        if lengths.size and (lengths.max() > t or lengths.min() < 0):
            raise ValueError(f"a sequence length in {lengths.tolist()} is outside [0, {t}]")
        lengths = np.maximum(lengths, 1)[:, None]
        pos = np.arange(t)[None, :]
        src = np.where(pos < lengths, lengths - 1 - pos, pos)          # [n, t]
        shape = [1] * x.ndim
        shape[b_ax], shape[s_ax] = n, t
        if b_ax > s_ax:
            src = src.T
        src = np.broadcast_to(src.reshape(shape), x.shape)
        return np.take_along_axis(x, src, axis=s_ax)

    return reverse_sequence


# ---- Reverse, Roll ---------------------------------------------------------------------------

@op("Reverse", versions=(1,), shape=same)
def _reverse(layer: Layer):
    by_mask = choice(layer, "mode", ("index", "mask")) == "mask"

    def reverse(x, axes):
        x = np.asarray(x)
        axes = np.asarray(axes).reshape(-1)
        if by_mask:
            if axes.size != x.ndim:
                raise ValueError(f"the mask has {axes.size} elements for rank {x.ndim}")
            chosen = tuple(int(i) for i in np.flatnonzero(axes))
        else:
            chosen = tuple(sorted({axis_of(int(a), x.ndim) for a in axes}))
        return np.flip(x, chosen).copy() if chosen else x.copy()

    return reverse


@op("Roll", versions=(7,), shape=same,
    notes="a scalar shift applies to every axis, as specified; OpenVINO's CPU plugin refuses a "
          "scalar shift with several axes")
def _roll(layer: Layer):
    def roll(x, shift, axes):
        x = np.asarray(x)
        ax = [axis_of(a, x.ndim) for a in ints(axes)]
        sh = ints(shift)
        if len(sh) == 1 and len(ax) > 1:
            sh = sh * len(ax)
        if len(sh) != len(ax):
            raise ValueError(f"{len(sh)} shifts for {len(ax)} axes")
        if not ax:
            return x.copy()
        return np.roll(x, sh, axis=ax)

    return roll


# ---- GatherTree --------------------------------------------------------------------------------

def _index(v) -> int:
    return int(np.trunc(v)) if np.issubdtype(np.asarray(v).dtype, np.floating) else int(v)


@op("GatherTree", versions=(1,), shape=same,
    notes="beams of a batch item whose max_seq_len is 0 are all end_token, as specified; "
          "OpenVINO's CPU plugin leaves them unwritten")
def _gather_tree(layer: Layer):
    def gather_tree(step_ids, parent_ids, max_seq_len, end_token):
        step_ids, parent_ids = np.asarray(step_ids), np.asarray(parent_ids)
        if step_ids.ndim != 3 or parent_ids.shape != step_ids.shape:
            raise ValueError(f"step_ids {step_ids.shape} and parent_ids {parent_ids.shape} must "
                             f"be 3-D and of one shape")
        t_max, batch, width = step_ids.shape
        lengths = np.asarray(max_seq_len).reshape(-1)
        if lengths.size != batch:
            raise ValueError(f"max_seq_len has {lengths.size} elements for a batch of {batch}")
        end = np.asarray(end_token).reshape(-1)
        if end.size != 1:
            raise ValueError("end_token must be a scalar")
        end_value = end.astype(step_ids.dtype)[0]
        end_index = _index(end_value)
        out = np.full(step_ids.shape, end_value, step_ids.dtype)
        for b in range(batch):
            steps = min(t_max, max(_index(lengths[b]), 0))
            for w in range(width):
                if steps == 0:
                    continue
                out[steps - 1, b, w] = step_ids[steps - 1, b, w]
                parent = _index(parent_ids[steps - 1, b, w])
                for level in range(steps - 2, -1, -1):
                    if not 0 <= parent < width:
                        raise ValueError(f"parent index {parent} is outside the beam width "
                                         f"{width}")
                    out[level, b, w] = step_ids[level, b, parent]
                    parent = _index(parent_ids[level, b, parent])
                column = np.array([_index(v) for v in out[:steps, b, w]])
                hits = np.flatnonzero(column == end_index)
                if hits.size:
                    out[hits[0] + 1:steps, b, w] = end_value
        return out

    return gather_tree
