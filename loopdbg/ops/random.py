"""Random generation as OpenVINO does it: RandomUniform-8 and Multinomial-13.

RandomUniform is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"):
the key is ``global_seed``, the 128-bit counter starts as (0, ``op_seed``) and rises by one per
block of four 32-bit words, the key is reset for every block. The words become values as the
specification says: f32/f16 take the low 23/10 bits as a mantissa in [1, 2), minus 1, scaled to
[min, max) in that type; f64 takes 52 bits of two words; i32 is ``word % (max − min) + min``, i64
the same on two words (high second). Four values come from a block, two for 64-bit types.

A RandomUniform layer run again in the same run (in a loop body) continues its sequence: each
execution moves the counter on by 256 per value drawn, as OpenVINO's CPU plugin does. That state
is per run (``ctx.op_states``), so every run starts from the seeds again, as a fresh compiled
model does. Both seeds 0 ask OpenVINO for a fresh random seed each time: loopdbg refuses that
layer, as no run could be reproduced.

Multinomial draws as OpenVINO's CPU plugin does (its reference has no Multinomial): a 32-bit
Mersenne twister (C++'s ``std::mt19937``) seeded with ``std::seed_seq{global_seed, op_seed}``
gives one float32 ``word / (2³² − 1)`` per output, row by row; each row's probabilities (``exp``
of them with ``log_probs``) are summed into a float32 CDF scaled to end at 1, and a draw picks the
first class whose CDF reaches it. Without replacement the drawn class's probability is taken out
of the row's CDF, which is rescaled, after each draw. Every execution starts from the seeds.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import (
    choice,
    dtype_attr,
    flag,
    index_dtype,
    int_attr,
    ints,
    scalar,
)
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, dims

_M32 = 0xFFFFFFFF
_MUL_A, _MUL_B = 0xD2511F53, 0xCD9E8D57
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85


def philox_words(global_seed: int, op_seed: int, start: int, blocks: int) -> np.ndarray:
    """``blocks`` blocks of four uint32 words, the first at counter offset ``start``."""
    key_lo, key_hi = global_seed & _M32, (global_seed >> 32) & _M32
    out = np.empty(blocks * 4, np.uint32)
    counter = start
    high = op_seed & ((1 << 64) - 1)
    for b in range(blocks):
        c0, c1 = counter & _M32, (counter >> 32) & _M32
        c2, c3 = high & _M32, (high >> 32) & _M32
        k0, k1 = key_lo, key_hi
        for r in range(10):
            p0 = _MUL_A * c0
            p1 = _MUL_B * c2
            c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & _M32, p1 & _M32, \
                ((p0 >> 32) ^ c3 ^ k1) & _M32, p0 & _M32
            k0, k1 = (k0 + _KEY_A) & _M32, (k1 + _KEY_B) & _M32
        out[4 * b:4 * b + 4] = (c0, c1, c2, c3)
        counter += 1
        if counter >> 64:
            counter = 0
            high = (high + 1) & ((1 << 64) - 1)
    return out


def uniform_values(shape, low, high, dtype: np.dtype, global_seed: int, op_seed: int,
                   start: int = 0) -> np.ndarray:
    """RandomUniform's output for one execution whose counter starts at ``start``."""
    count = int(np.prod(shape, dtype=np.int64))
    wide = dtype.itemsize > 4
    per_block = 2 if wide else 4
    words = philox_words(global_seed, op_seed, start, -(-count // per_block))
    if dtype == np.float32 or dtype == np.float16:
        bits = 23 if dtype == np.float32 else 10
        unit = (np.uint32(127) << 23) | ((words & np.uint32((1 << bits) - 1)) << (23 - bits))
        u = unit.view(np.float32) - np.float32(1)
        if dtype == np.float16:
            lo, hi = np.float16(low), np.float16(high)
            vals = u.astype(np.float16) * (hi - lo) + lo
        else:
            lo, hi = np.float32(low), np.float32(high)
            vals = u * (hi - lo) + lo
    elif dtype == np.float64:
        pairs = words.reshape(-1, 2).astype(np.uint64)
        mantissa = ((pairs[:, 0] & np.uint64(0xFFFFF)) << np.uint64(32)) | pairs[:, 1]
        u = (np.uint64(1023 << 52) | mantissa).view(np.float64) - 1.0
        vals = u * (float(high) - float(low)) + float(low)
    elif dtype == np.int32:
        span = int(high) - int(low)
        if span <= 0:
            raise ValueError(f"max {high} must exceed min {low}")
        vals = ((words.astype(np.int64) % span) + int(low)).astype(np.int32)
    elif dtype == np.int64:
        span = int(high) - int(low)
        if span <= 0:
            raise ValueError(f"max {high} must exceed min {low}")
        pairs = words.reshape(-1, 2)
        united = [(int(h) << 32) + int(lo_) for lo_, h in pairs]
        vals = np.array([u % span + int(low) for u in united], np.int64)
    else:
        raise ValueError(f"RandomUniform does not generate {dtype}")
    return np.asarray(vals[:count], dtype).reshape(shape)


def _seeds(layer: Layer) -> tuple[int, int]:
    g, o = int_attr(layer, "global_seed", 0), int_attr(layer, "op_seed", 0)
    if g < 0 or o < 0:
        raise ValueError(f"seeds must not be negative, got global_seed={g}, op_seed={o}")
    if g == 0 and o == 0:
        raise ValueError("global_seed and op_seed are both 0, for which OpenVINO draws a fresh "
                         "random seed on every run; loopdbg cannot reproduce that")
    return g, o


def _uniform_shape(layer: Layer, ins, consts):
    """The shape given by input 0 (when constant), in output_type."""
    return TensorInfo(layer.data.get("output_type"), dims(consts[0]))


@op("RandomUniform", versions=(8,), shape=_uniform_shape,
    notes="alignment 'tensorflow' (the default) only; 'pytorch' is refused. f16, f64 and i64 "
          "follow the specification and OpenVINO's reference; the CPU plugin draws those as "
          "f32 or i32 and converts. Both seeds 0 are refused (OpenVINO reseeds at random)")
def _random_uniform(layer: Layer):
    dtype = dtype_attr(layer, "output_type")
    if dtype not in (np.float32, np.float16, np.float64, np.int32, np.int64):
        raise ValueError(f"output_type {dtype} is not one RandomUniform generates")
    if choice(layer, "alignment", ("tensorflow", "pytorch"), "tensorflow") == "pytorch":
        raise ValueError("alignment 'pytorch' (PyTorch's Mersenne twister) is not reproduced by "
                         "loopdbg")
    global_seed, op_seed = _seeds(layer)

    def random_uniform(ctx, shape, minval, maxval):
        out_shape = tuple(ints(shape))
        if any(d < 0 for d in out_shape):
            raise ValueError(f"shape {list(out_shape)} has a negative dimension")
        start = ctx.op_states.get(random_uniform, 0)
        low = np.asarray(minval).reshape(-1)[0]
        high = np.asarray(maxval).reshape(-1)[0]
        out = uniform_values(out_shape, low, high, dtype, global_seed, op_seed, start)
        ctx.op_states[random_uniform] = start + 256 * out.size
        return out

    random_uniform.needs_context = True
    return random_uniform


# ---- Multinomial -----------------------------------------------------------------------------

def _seed_seq(values: list[int], n: int = 624) -> list[int]:
    """C++'s ``std::seed_seq(values).generate`` of ``n`` words (the standard's algorithm)."""
    v = [x & _M32 for x in values]
    s = len(v)
    b = [0x8B8B8B8B] * n
    t = 11
    p = (n - t) // 2
    q = p + t
    m = max(s + 1, n)

    def mix(x: int) -> int:
        return x ^ (x >> 27)

    for k in range(m):
        r1 = (1664525 * mix(b[k % n] ^ b[(k + p) % n] ^ b[(k - 1) % n])) & _M32
        r2 = (r1 + (s if k == 0 else (k % n + v[k - 1] if k <= s else k % n))) & _M32
        b[(k + p) % n] = (b[(k + p) % n] + r1) & _M32
        b[(k + q) % n] = (b[(k + q) % n] + r2) & _M32
        b[k % n] = r2
    for k in range(m, m + n):
        r3 = (1566083941 * mix((b[k % n] + b[(k + p) % n] + b[(k - 1) % n]) & _M32)) & _M32
        r4 = (r3 - k % n) & _M32
        b[(k + p) % n] ^= r3
        b[(k + q) % n] ^= r4
        b[k % n] = r4
    return b


def mt19937_words(global_seed: int, op_seed: int, count: int) -> np.ndarray:
    """The first ``count`` outputs of ``std::mt19937`` seeded by ``seed_seq{g, o}``."""
    key = np.array(_seed_seq([global_seed, op_seed]), np.uint32)
    if not (key[0] & 0x7FFFFFFF) and not key[1:].any():
        key[0] = 0x80000000
    generator = np.random.MT19937()
    generator.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
    return generator.random_raw(count).astype(np.uint32)


def _multinomial_shape(layer: Layer, ins, consts):
    """[batch, num_samples] in convert_type."""
    batch = ins[0].shape[0] if ins[0].shape else -1
    n = int(np.ravel(consts[1])[0]) if consts[1] is not None else -1
    return TensorInfo(layer.data.get("convert_type", "i64"), (batch, n))


@op("Multinomial", versions=(13,), shape=_multinomial_shape,
    notes="draws as OpenVINO's CPU plugin does (std::mt19937 seeded by seed_seq{global_seed, "
          "op_seed}); OpenVINO's reference cannot run Multinomial. Both seeds 0 are refused")
def _multinomial(layer: Layer):
    out_type = index_dtype(layer, "convert_type", "i64")
    replace = flag(layer, "with_replacement", False)
    log_probs = flag(layer, "log_probs", False)
    global_seed, op_seed = _seeds(layer)

    def multinomial(probs, num_samples):
        probs = np.asarray(probs)
        if probs.ndim != 2:
            raise ValueError(f"probs must be [batch, classes], got shape {probs.shape}")
        t = probs.dtype if probs.dtype.kind == "f" else np.dtype(np.float32)
        n = scalar(num_samples)
        batch, classes = probs.shape
        if n < 0 or (not replace and n > classes):
            raise ValueError(f"cannot draw {n} samples of {classes} classes "
                             f"{'with' if replace else 'without'} replacement")
        weights = np.exp(probs.astype(t)) if log_probs else probs.astype(t)
        cdf = np.cumsum(weights, axis=1, dtype=t)
        top = np.maximum(cdf[:, -1:], np.finfo(t).tiny)
        cdf = (cdf / top).astype(t)
        words = mt19937_words(global_seed, op_seed, batch * n)
        draws = (words.astype(np.float32) / np.float32(4294967295.0)).astype(t).reshape(batch, n)
        out = np.zeros((batch, n), out_type)
        for b in range(batch):
            row = cdf[b].copy()
            for j in range(n):
                hit = np.flatnonzero(draws[b, j] <= row)
                if hit.size == 0:
                    continue
                c = int(hit[0])
                out[b, j] = c
                if not replace and j + 1 < n:
                    p = row[c] - (row[c - 1] if c else t.type(0))
                    row[c:] = row[c:] - p
                    with np.errstate(divide="ignore", invalid="ignore"):
                        row = (row / (t.type(1) - p)).astype(t)
        return out

    return multinomial
