"""Connectionist temporal classification: CTCGreedyDecoder, CTCGreedyDecoderSeqLen, CTCLoss.

* The greedy decoders take the first maximal class of every step, drop the blank (the last class
  for CTCGreedyDecoder-1; input 2, default the last class, for CTCGreedyDecoderSeqLen-6) and, with
  merge_repeated, a class equal to the previous step's (blank steps included: "a blank a" keeps
  both). Unused places hold -1. CTCGreedyDecoder-1 reads [T, N, C] and stops a sequence at its
  first 0 in the mask; its output is [N, T, 1, 1] in the data's type.
* CTCLoss-4 is the negative log-likelihood of the labels under the softmax of the logits, summed
  over every alignment (the forward algorithm, in float64 log space). The labels are first reduced
  to their distinct values in order of first appearance (``unique``) or have their runs collapsed
  (``preprocess_collapse_repeated``). With ``ctc_merge_repeated`` a label may span several steps
  and two equal labels in a row need a blank between them; without it every label takes exactly
  one step. No possible alignment gives +inf.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import flag, index_dtype, scalar
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _greedy(classes: np.ndarray, length: int, blank: int, merge: bool) -> list[int]:
    out, previous = [], -1
    for c in classes[:length].tolist():
        if c != blank and not (merge and c == previous):
            out.append(c)
        previous = c
    return out


def _greedy1_shape(layer: Layer, ins, consts):
    """[N, T, 1, 1] in the data's type."""
    s = ins[0].shape
    return TensorInfo(ins[0].type, None if s is None else (s[1], s[0], 1, 1))


@op("CTCGreedyDecoder", versions=(1,), shape=_greedy1_shape)
def _ctc_greedy_decoder(layer: Layer):
    merge = flag(layer, "ctc_merge_repeated", True)

    def ctc_greedy_decoder(data, mask):
        data, mask = np.asarray(data), np.asarray(mask)
        t_max, n, c = data.shape
        if mask.shape != (t_max, n):
            raise ValueError(f"the sequence mask has shape {mask.shape}, expected {(t_max, n)}")
        best = np.argmax(data, axis=2) if c else np.zeros((t_max, n), np.int64)
        out = np.full((n, t_max, 1, 1), -1, data.dtype)
        for b in range(n):
            zeros = np.flatnonzero(mask[:, b] == 0)
            length = int(zeros[0]) if zeros.size else t_max
            found = _greedy(best[:, b], length, c - 1, merge)
            out[b, :len(found), 0, 0] = found
        return out

    return ctc_greedy_decoder


def _seq_len_shape(layer: Layer, ins, consts):
    """[N, T] classes and [N] lengths, in classes_index_type and sequence_length_type."""
    s = ins[0].shape
    return [TensorInfo(layer.data.get("classes_index_type", "i32"), None if s is None else s[:2]),
            TensorInfo(layer.data.get("sequence_length_type", "i32"),
                       None if s is None else s[:1])]


@op("CTCGreedyDecoderSeqLen", versions=(6,), outputs=2, shape=_seq_len_shape)
def _ctc_greedy_decoder_seq_len(layer: Layer):
    merge = flag(layer, "merge_repeated", True)
    class_type = index_dtype(layer, "classes_index_type", "i32")
    length_type = index_dtype(layer, "sequence_length_type", "i32")

    def ctc_greedy_decoder_seq_len(data, seq_len, blank_index=None):
        data = np.asarray(data)
        n, t_max, c = data.shape
        lengths = np.asarray(seq_len).reshape(-1)
        if lengths.size != n:
            raise ValueError(f"sequence_length has {lengths.size} elements for a batch of {n}")
        blank = c - 1 if blank_index is None else scalar(blank_index)
        best = np.argmax(data, axis=2) if c else np.zeros((n, t_max), np.int64)
        classes = np.full((n, t_max), -1, class_type)
        found_lengths = np.zeros(n, length_type)
        for b in range(n):
            length = int(lengths[b])
            if not 0 <= length <= t_max:
                raise ValueError(f"sequence length {length} is outside [0, {t_max}]")
            found = _greedy(best[b], length, blank, merge)
            classes[b, :len(found)] = found
            found_lengths[b] = len(found)
        return classes, found_lengths

    return ctc_greedy_decoder_seq_len


# ---- CTCLoss ---------------------------------------------------------------------------------

def _decoded(labels: list[int], unique: bool, collapse: bool) -> list[int]:
    if unique:
        return list(dict.fromkeys(labels))
    if collapse:
        return [v for k, v in enumerate(labels) if k == 0 or v != labels[k - 1]]
    return labels


def _neg_log_likelihood(logp: np.ndarray, target: list[int], blank: int, merge: bool) -> float:
    """-log of the total probability of ``target`` over the log-probabilities [T, C]."""
    t_len = logp.shape[0]
    states = [blank]
    for label in target:
        states += [label, blank]
    s_len = len(states)
    is_label = np.arange(s_len) % 2 == 1
    ext = np.array(states)
    skip = is_label.copy()                         # from s-2 (over a blank) into a label
    skip[:2] = False
    if merge:
        skip[2:] &= ext[2:] != ext[:-2]
    stay = ~is_label if not merge else np.ones(s_len, bool)
    alpha = np.full(s_len, -np.inf)
    if t_len == 0:
        return 0.0 if not target else np.inf
    alpha[0] = logp[0, blank]
    if s_len > 1:
        alpha[1] = logp[0, states[1]]
    for t in range(1, t_len):
        step = np.where(stay, alpha, -np.inf)
        step[1:] = np.logaddexp(step[1:], alpha[:-1])
        step[2:] = np.logaddexp(step[2:], np.where(skip[2:], alpha[:-2], -np.inf))
        alpha = step + logp[t, ext]
    total = np.logaddexp(alpha[-1], alpha[-2]) if s_len > 1 else alpha[-1]
    return float(-total)


@op("CTCLoss", versions=(4,), shape=lambda layer, ins, consts: TensorInfo(
        ins[0].type, None if ins[0].shape is None else ins[0].shape[:1]))
def _ctc_loss(layer: Layer):
    collapse = flag(layer, "preprocess_collapse_repeated", False)
    merge = flag(layer, "ctc_merge_repeated", True)
    unique = flag(layer, "unique", False)

    def ctc_loss(logits, logit_length, labels, label_length, blank_index=None):
        logits = np.asarray(logits)
        n, t_max, c = logits.shape
        blank = c - 1 if blank_index is None else scalar(blank_index)
        logit_len = np.asarray(logit_length).reshape(-1)
        label_len = np.asarray(label_length).reshape(-1)
        labels = np.asarray(labels)
        x = logits.astype(np.float64)
        logp = x - np.logaddexp.reduce(x, axis=2, keepdims=True)
        out = np.empty(n, logits.dtype)
        for b in range(n):
            tl, ll = int(logit_len[b]), int(label_len[b])
            if not 0 <= tl <= t_max or not 0 <= ll <= tl:
                raise ValueError(f"batch item {b}: logit length {tl} and label length {ll} must "
                                 f"satisfy 0 <= label length <= logit length <= {t_max}")
            target = _decoded(labels[b, :ll].tolist(), unique, collapse)
            if any(not 0 <= v < c for v in target) or not 0 <= blank < c:
                raise ValueError(f"batch item {b}: a label or the blank index is outside "
                                 f"[0, {c})")
            out[b] = _neg_log_likelihood(logp[b, :tl], target, blank, merge)
        return out

    return ctc_loss
