"""ONNX operators whose output is random: Dropout (in training mode), Bernoulli, RandomNormal,
RandomUniform, their ``Like`` forms, and Multinomial.

No two runtimes draw the same numbers, so loopdbg cannot match onnxruntime here; it runs them
*seeded* and says so, never silently. Each call draws from a fresh ``numpy.random.RandomState``
seeded with the node's ``seed`` attribute, or with 0 when the model gives none, the way
onnx.reference draws: a seeded node gives the values onnx.reference gives, and the same values on
every call (every iteration of a loop) and in every run, so a debugging session that re-runs the
model sees the same values again. The kernel's ``notice`` says which seed, and the engine reports
it once per run (a Notice event before the first iteration).
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ir.onnx_names import ONNX_TYPES
from loopdbg.ops.args import a, declared_outputs, opset
from loopdbg.ops.registry import op

DIFFERS = "onnxruntime draws other numbers"


def _seed(layer: Layer, what: str) -> tuple[int, str]:
    """The seed a random node draws with, and the sentence saying so."""
    given = a(layer, "seed")
    seed = 0 if given is None else int(given)
    whence = f"seed {seed}, the node's" if given is not None else \
        "seed 0, as the node gives no seed"
    return seed, (f"{what} from numpy's RandomState({whence}), afresh on every call: every "
                  f"call and every run gives the same values; {DIFFERS}")


def _dtype(layer: Layer, default: np.dtype | None) -> np.dtype | None:
    """The ``dtype`` attribute (an ONNX type code) as a numpy dtype; ``default`` when absent."""
    code = a(layer, "dtype")
    if code is None:
        return default
    name = ONNX_TYPES.get(int(code))
    dtype = elements.numpy_dtype(name) if name else None
    if dtype is None or dtype.kind not in "biuf":
        raise ValueError(f"dtype={code} is not a numeric ONNX element type")
    return dtype


def _random(fn, notice: str):
    fn.notice = notice
    return fn


# ---- Dropout -----------------------------------------------------------------------------------


@op("onnx.Dropout", versions=(1, 12), outputs=declared_outputs)
def _dropout(layer: Layer):
    """Before opset 12: inference, the input unchanged (and an all-true mask). From 12: the
    ``training_mode`` input decides; in training mode, a seeded mask scaled by 1/(1-ratio)."""
    two = declared_outputs(layer) > 1

    def inference(x):
        return (x, np.ones(np.shape(x), dtype=bool)) if two else x

    if opset(layer) < 12:
        return lambda x, *_: inference(x)
    seed, said = _seed(layer, "in training mode it draws its mask")

    def dropout(x, ratio=None, training_mode=None):
        if training_mode is None or not bool(np.asarray(training_mode).reshape(-1)[0]):
            return inference(x)
        r = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
        if not 0 <= r < 1:
            raise ValueError(f"ratio {r} is not in [0, 1)")
        if r == 0:
            return inference(x)
        mask = np.random.RandomState(seed).uniform(0, 1.0, np.shape(x)) >= r
        y = (mask * x * (1 / (1 - r))).astype(x.dtype, copy=False)
        return (y, mask) if two else y

    if len(layer.inputs) > 2:           # a training_mode input: the mode may be training
        return _random(dropout, said)
    return dropout


# ---- Bernoulli, RandomNormal/Uniform[Like], Multinomial ----------------------------------------


@op("onnx.Bernoulli", versions=(15, 22))
def _bernoulli(layer: Layer):
    seed, said = _seed(layer, "it draws")
    fixed = _dtype(layer, None)

    def bernoulli(x):
        p = np.asarray(x)
        if p.size and (np.nanmin(p) < 0 or np.nanmax(p) > 1 or np.isnan(p).any()):
            raise ValueError("the probabilities are not all in [0, 1]")
        return np.random.RandomState(seed).binomial(1, p=p).astype(fixed or p.dtype)

    return _random(bernoulli, said)


def _shape(layer: Layer) -> tuple[int, ...]:
    shape = a(layer, "shape")
    if shape is None:
        raise KeyError("attribute 'shape' is missing")
    shape = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in shape):
        raise ValueError(f"shape {list(shape)} has a negative dimension")
    return shape


def _normal(state, shape, dtype, layer: Layer) -> np.ndarray:
    res = state.randn(*shape).astype(dtype)
    res *= dtype.type(a(layer, "scale", 1.0))
    res += dtype.type(a(layer, "mean", 0.0))
    return res


def _uniform(state, shape, dtype, layer: Layer) -> np.ndarray:
    low, high = float(a(layer, "low", 0.0)), float(a(layer, "high", 1.0))
    res = state.rand(*shape).astype(dtype)
    res *= dtype.type(high - low)
    res += dtype.type(low)
    return res


def _generator(draw, like: bool):
    def factory(layer: Layer):
        seed, said = _seed(layer, "it draws")
        if like:
            fixed = _dtype(layer, None)

            def random_like(x):
                dtype = fixed or np.asarray(x).dtype
                if dtype.kind != "f":
                    raise ValueError(f"cannot draw {dtype} values: give a float dtype")
                return draw(np.random.RandomState(seed), np.shape(x), dtype, layer)

            return _random(random_like, said)
        shape, dtype = _shape(layer), _dtype(layer, np.dtype(np.float32))

        def random(*_):
            return draw(np.random.RandomState(seed), shape, dtype, layer)

        return _random(random, said)

    return factory


for _name, _draw in (("RandomNormal", _normal), ("RandomUniform", _uniform)):
    op(f"onnx.{_name}", versions=(1, 22))(_generator(_draw, False))
    op(f"onnx.{_name}Like", versions=(1, 22))(_generator(_draw, True))


@op("onnx.Multinomial", versions=(7, 22))
def _multinomial(layer: Layer):
    """``sample_size`` class indices per batch row, drawn with the probabilities softmax(row)."""
    seed, said = _seed(layer, "it draws")
    size = int(a(layer, "sample_size", 1))
    dtype = _dtype(layer, np.dtype(np.int32))
    if dtype not in (np.int32, np.int64):
        raise ValueError(f"dtype {dtype} is neither int32 nor int64")

    def multinomial(x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2:
            raise ValueError(f"input of shape {x.shape} is not [batch_size, class_size]")
        p = np.exp(x - x.max(axis=1, keepdims=True))
        cum = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
        u = np.random.RandomState(seed).rand(x.shape[0], size)
        out = np.stack([np.searchsorted(cum[b], u[b], side="right") for b in range(x.shape[0])])
        return np.minimum(out, x.shape[1] - 1).astype(dtype).reshape(x.shape[0], size)

    return _random(multinomial, said)
