"""Keras and TensorFlow models with loops, converted by ``openvino.convert_model``
(see make_models.py).

Each builder returns ``(ov.Model, inputs, about)``: the converted model as OpenVINO's TensorFlow
frontend wrote it, seeded inputs by input name, and one line on what the model is. Keras 3 runs its
recurrent layers (LSTM, GRU, ConvLSTM2D, Bidirectional) as a ``tf.while_loop``, which the frontend
turns into a Loop; Keras weights are its own random initialisation (seeded), as a model under
training would have them.
"""

from __future__ import annotations

import os
from typing import NamedTuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import openvino as ov
import tensorflow as tf


class Built(NamedTuple):
    """What a builder returns (see make_models.py)."""

    model: object                  # the ov.Model convert_model made
    inputs: dict                   # seeded inputs by input name
    outputs: list | None           # the names to give the outputs, in order (None: keep them)
    about: str                     # one line on the architecture
    reference: dict                # the framework's own outputs on the inputs, by output name


def _keras(model, inputs: dict, names: list, about: str) -> Built:
    got = model(next(iter(inputs.values())))
    return Built(ov.convert_model(model), inputs, names, about, {names[0]: np.asarray(got)})


def crnn_text(rng):
    """A CRNN text-line recogniser: two conv/pool stages, columns as time steps, a
    Bidirectional LSTM, per-step character probabilities (what CTC decoding reads)."""
    keras.utils.set_random_seed(1)
    image = keras.Input((16, 48, 1), batch_size=1, name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(image)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(x)
    x = keras.layers.MaxPooling2D(2)(x)                    # (1, 4, 12, 16)
    x = keras.layers.Permute((2, 1, 3))(x)                 # columns first: (1, 12, 4, 16)
    x = keras.layers.Reshape((12, 4 * 16))(x)
    x = keras.layers.Bidirectional(keras.layers.LSTM(16, return_sequences=True))(x)
    probs = keras.layers.Dense(11, activation="softmax")(x)
    model = keras.Model(image, probs)
    inputs = {"image": rng.random((1, 16, 48, 1), dtype=np.float32)}
    return _keras(model, inputs, ["probs"],
                  "CRNN: Conv2D/MaxPool x2, Permute+Reshape to 12 steps, "
                  "Bidirectional(LSTM 16), Dense softmax")


def lstm_go_backwards(rng):
    """A Keras LSTM reading its sequence backwards (``go_backwards=True``), all steps returned."""
    keras.utils.set_random_seed(2)
    x = keras.Input((10, 6), batch_size=2, name="x")
    y = keras.layers.LSTM(12, go_backwards=True, return_sequences=True)(x)
    model = keras.Model(x, keras.layers.Dense(3)(y))
    inputs = {"x": rng.standard_normal((2, 10, 6)).astype(np.float32)}
    return _keras(model, inputs, ["y"],
                  "LSTM(12, go_backwards=True, return_sequences=True) over 10 steps, Dense(3)")


def speech_conv_gru(rng):
    """A DeepSpeech-like front end: strided Conv1D over MFCC frames, batch norm, a GRU, per-frame
    character log-probabilities."""
    keras.utils.set_random_seed(3)
    feats = keras.Input((40, 13), batch_size=1, name="features")
    x = keras.layers.Conv1D(16, 5, strides=2, activation="relu")(feats)
    bn = keras.layers.BatchNormalization()
    x = bn(x)
    x = keras.layers.GRU(24, return_sequences=True)(x)
    logp = keras.layers.Dense(29, activation="log_softmax")(x)
    model = keras.Model(feats, logp)
    # Trained statistics rather than the initial 0/1, so the normalisation does something.
    gamma, beta, mean, var = bn.get_weights()
    r = np.random.default_rng(30)
    bn.set_weights([gamma + r.normal(0, .1, gamma.shape), beta + r.normal(0, .1, beta.shape),
                    r.normal(0, .2, mean.shape), r.uniform(.5, 2, var.shape)])
    inputs = {"features": rng.standard_normal((1, 40, 13)).astype(np.float32)}
    return _keras(model, inputs, ["log_probs"],
                  "Conv1D(16, 5, stride 2)+BatchNorm, GRU(24) over 18 frames, "
                  "Dense(29) log_softmax")


def convlstm(rng):
    """A ConvLSTM2D next-frame model: five 8x8 frames in, a 1x1 conv on the last state out."""
    keras.utils.set_random_seed(4)
    frames = keras.Input((5, 8, 8, 2), batch_size=1, name="frames")
    x = keras.layers.ConvLSTM2D(4, 3, padding="same")(frames)
    model = keras.Model(frames, keras.layers.Conv2D(1, 1)(x))
    inputs = {"frames": rng.standard_normal((1, 5, 8, 8, 2)).astype(np.float32)}
    return _keras(model, inputs, ["next_frame"],
                  "ConvLSTM2D(4 filters, 3x3, same) over 5 frames of 8x8x2, Conv2D 1x1")


NMS_KEEP, NMS_IOU, NMS_SCORE = 8, 0.3, 0.6


def nms_loop(rng):
    """Per-class non-maximum suppression in a ``tf.while_loop``, as detection post-processing
    writes it: one NMS per class, the kept indices padded with -1 to a fixed count."""
    n_boxes, n_classes = 24, 3

    @tf.function(input_signature=[tf.TensorSpec([n_boxes, 4], tf.float32, name="boxes"),
                                  tf.TensorSpec([n_classes, n_boxes], tf.float32, name="scores")])
    def detect(boxes, scores):
        count = tf.shape(scores)[0]
        kept = tf.TensorArray(tf.int32, size=count)
        counts = tf.TensorArray(tf.int32, size=count)

        def body(c, kept, counts):
            # tf.gather, not scores[c]: OpenVINO's CPU plugin cannot run the StridedSlice the
            # frontend makes of scores[c] inside a loop ("doesn't have compiled executor").
            sel = tf.image.non_max_suppression(boxes, tf.gather(scores, c), NMS_KEEP,
                                               iou_threshold=NMS_IOU, score_threshold=NMS_SCORE)
            n = tf.shape(sel)[0]
            padded = tf.pad(sel, [[0, NMS_KEEP - n]], constant_values=-1)
            return c + 1, kept.write(c, padded), counts.write(c, n)

        _, kept, counts = tf.while_loop(lambda c, *_: c < count, body, [0, kept, counts])
        return {"selected": kept.stack(), "counts": counts.stack()}

    corner = rng.uniform(0, 0.6, (n_boxes, 2))
    size = rng.uniform(0.2, 0.4, (n_boxes, 2))
    boxes = np.concatenate([corner, corner + size], 1).astype(np.float32)
    scores = rng.uniform(0, 1, (n_classes, n_boxes)).astype(np.float32)
    got = {k: v.numpy() for k, v in detect(boxes, scores).items()}
    # Names are kept: the function's outputs are already called selected and counts.
    return Built(ov.convert_model(detect), {"boxes": boxes, "scores": scores}, None,
                 f"tf.while_loop over 3 classes, tf.image.non_max_suppression (keep {NMS_KEEP}, "
                 f"IoU {NMS_IOU}, score {NMS_SCORE}), indices padded with -1, TensorArray "
                 f"outputs", got)


BUILDERS = {"crnn_text": crnn_text, "lstm_go_backwards": lstm_go_backwards,
            "speech_conv_gru": speech_conv_gru, "convlstm": convlstm, "nms_loop": nms_loop}
