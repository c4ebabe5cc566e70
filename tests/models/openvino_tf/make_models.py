"""Make the OpenVINO IR corpus from TensorFlow: ``tf.scan``, a Keras GRU with masking and a greedy decoder in a
``tf.while_loop``, read by OpenVINO's TensorFlow frontend (``openvino.convert_model`` on the TF object, then ``openvino.save_model``), as users do.

Run outside the test suite, in a venv of its own (loopc never depends on TensorFlow):

    python3 -m venv venv-ov-tf
    venv-ov-tf/bin/pip install -r tests/models/openvino_tf/requirements.txt
    venv-ov-tf/bin/python tests/models/openvino_tf/make_models.py

Weights are random from fixed seeds and saved as f32 (``compress_to_fp16=False``). For each case the script writes
``<case>.xml`` + ``<case>.bin``, ``<case>.inputs.npz`` (keyed by the IR's input tensor names),
``<case>.expected.npz`` (TensorFlow's eager outputs, keyed by the IR's output tensor names) and ``cases.toml``.
Each IR is read back and run by OpenVINO's CPU plugin (f32 inference precision) on the example and once more at
another batch and time, so that an IR baked to the example's sizes fails here.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import dataclasses
import importlib.metadata
import pathlib
from typing import Callable

import numpy as np
import openvino as ov
import tensorflow as tf

HERE = pathlib.Path(__file__).resolve().parent
F, H = 4, 8  # features per step, hidden size
TOOL = (f"TF {tf.__version__}, OpenVINO {ov.__version__.split('-')[0]} TensorFlow frontend"
        " (openvino.convert_model, then openvino.save_model with compress_to_fp16=False)")


@dataclasses.dataclass
class Case:
    name: str
    about: str
    #: loopc's refusal, for a case at a known limit of loopc (the corpus test checks it is stated)
    refusal: str | None = None


CASES: list[Case] = []


def _uniform(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.6, 0.6, shape).astype(np.float32)


def _sequence(seed: int, batch: int, time: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, time, F)).astype(np.float32)


def _run_openvino(model: ov.Model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled.create_infer_request().infer({p.get_any_name(): feeds[p.get_any_name()] for p in compiled.inputs})
    return {p.get_any_name(): np.asarray(result[p]) for p in compiled.outputs}


def save_case(name: str, about: str, converted: ov.Model, eager: Callable[[dict[str, np.ndarray]], list[np.ndarray]],
              feeds: dict[str, np.ndarray], other: dict[str, np.ndarray], refusal: str | None = None,
              names: tuple[str, ...] | None = None) -> None:
    """Save the IR, read it back, and check OpenVINO's CPU plugin against TF eager on both inputs."""
    # The frontend also returns the TensorList placeholder it made for tf.scan's TensorArray (a [T, 1, 1]
    # Broadcast, not an output of the TF function): dropped, so that the IR has the function's outputs only.
    outputs = len(eager(feeds))
    for result in converted.get_results()[outputs:]:
        converted.remove_result(result)
    # It names each output by every TF tensor it stands for (``Identity:0``, ``transpose_1:0``; which one
    # ``get_any_name`` returns is not fixed); one name each keeps the corpus keyed stably.
    for k, port in enumerate(converted.outputs):
        port.get_tensor().set_names({names[k] if names else "y" if len(converted.outputs) == 1 else f"y{k}"})
    xml = HERE / f"{name}.xml"
    ov.save_model(converted, xml, compress_to_fp16=False)
    model = ov.Core().read_model(xml)
    in_names = sorted(p.get_any_name() for p in model.inputs)
    if in_names != sorted(feeds):
        raise RuntimeError(f"{name}: IR inputs {in_names}, example inputs {sorted(feeds)}")
    out_names = [p.get_any_name() for p in model.outputs]
    expected: dict[str, np.ndarray] = {}
    for inputs in (feeds, other):
        want = dict(zip(out_names, eager(inputs)))
        got = _run_openvino(model, inputs)
        for out in out_names:
            if got[out].shape != want[out].shape:
                raise RuntimeError(f"{name}: OpenVINO gives {out} {got[out].shape}, TF {want[out].shape}")
            np.testing.assert_allclose(got[out], want[out], rtol=1e-4, atol=1e-5, err_msg=f"{name}: {out}")
        expected = expected or want
    np.savez(HERE / f"{name}.inputs.npz", **feeds)
    np.savez(HERE / f"{name}.expected.npz", **expected)
    CASES.append(Case(name, f"{about}, {TOOL}", refusal))
    shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in expected.items())
    print(f"{name}: ok against OpenVINO's CPU plugin; outputs {shapes}; also at "
          + ", ".join(f"{k}{list(v.shape)}" for k, v in other.items()))


def tf_scan_rnn() -> None:
    """An Elman RNN over time written with ``tf.scan`` (time-major), dynamic batch and time."""
    w, u, b = _uniform(1, F, H), _uniform(2, H, H), _uniform(3, H)

    @tf.function(input_signature=[tf.TensorSpec([None, None, F], tf.float32, name="x")])
    def fn(x: tf.Tensor) -> tf.Tensor:
        xt = tf.transpose(x, [1, 0, 2])
        h0 = tf.zeros([tf.shape(x)[0], H])
        hs = tf.scan(lambda h, xi: tf.tanh(xi @ w + h @ u + b), xt, initializer=h0)
        return tf.transpose(hs, [1, 0, 2])

    feeds = {"x": _sequence(10, 2, 5)}
    save_case("tf_scan_rnn",
              "Elman RNN (h = tanh(x W + h U + b), hidden 8) over time with tf.scan on the time-major input, every"
              " state stacked, a tf.function with dynamic batch and time",
              ov.convert_model(fn), lambda f: [fn(tf.constant(f["x"])).numpy()], feeds,
              {"x": _sequence(11, 3, 7)})


def tf_scan_pair() -> None:
    """``tf.scan`` carrying a pair of states (an Elman RNN beside a running sum of the projected inputs), hidden 6:
    two TensorLists whose placeholders, ``[T, 1, 1]`` with T dynamic, the frontend broadcasts to one shared target
    (``[T, batch, 6]``)."""
    hidden = 6
    w, u = _uniform(50, F, hidden), _uniform(51, hidden, hidden)

    @tf.function(input_signature=[tf.TensorSpec([None, None, F], tf.float32, name="x")])
    def fn(x: tf.Tensor) -> tf.Tensor:
        xt = tf.transpose(x, [1, 0, 2])
        h0 = tf.zeros([tf.shape(x)[0], hidden])
        hs, sums = tf.scan(lambda s, xi: (tf.tanh(xi @ w + s[0] @ u), s[1] + xi @ w), xt, initializer=(h0, h0))
        return tf.transpose(hs + sums, [1, 0, 2])

    save_case("tf_scan_pair",
              "tf.scan carrying a pair of states (h = tanh(x W + h U) and a running sum of x W, hidden 6) over time on"
              " the time-major input, both stacked and added; two TensorList placeholders [T, 1, 1] broadcast to one"
              " shared target [T, batch, 6]; a tf.function with dynamic batch and time",
              ov.convert_model(fn), lambda f: [fn(tf.constant(f["x"])).numpy()], {"x": _sequence(52, 3, 5)},
              {"x": _sequence(53, 2, 7)})


def keras_gru_masking() -> None:
    """``Masking(0.0)`` then ``GRU(8, return_sequences=True)``, rows zero-padded after their lengths."""
    tf.keras.utils.set_random_seed(20)
    x = tf.keras.Input((None, F), name="x")
    y = tf.keras.layers.GRU(H, return_sequences=True)(tf.keras.layers.Masking(0.0)(x))
    model = tf.keras.Model(x, y, name="keras_gru_masking")
    rng = np.random.default_rng(20)
    model.set_weights([rng.uniform(-0.6, 0.6, w.shape).astype(w.dtype) for w in model.get_weights()])

    # The model itself, as OpenVINO documents: wrapped in a tf.function instead, the frontend finds a TensorList op
    # it has no conversion rule for. Its input is named after a Keras tensor; "x" keeps the corpus keyed stably.
    converted = ov.convert_model(model)
    converted.inputs[0].get_tensor().set_names({"x"})

    def padded(seed: int, batch: int, time: int, lengths: list[int]) -> dict[str, np.ndarray]:
        x = _sequence(seed, batch, time)
        for row, length in enumerate(lengths):
            x[row, length:] = 0.0
        return {"x": x}

    save_case("keras_gru_masking",
              "Keras Masking(0.0) -> GRU(8, return_sequences=True) (reset_after, the Keras default), rows zero-padded"
              f" after their lengths, Keras {importlib.metadata.version('keras')} functional model,"
              " convert_model on the model itself, dynamic batch and time",
              converted, lambda f: [np.asarray(model(f["x"], training=False))], padded(21, 3, 6, [6, 4, 2]),
              padded(22, 2, 9, [5, 9]))


def tf_while_greedy() -> None:
    """A batched greedy decoder (a tanh RNN cell over embedded tokens, argmax) in a ``tf.while_loop`` until every row
    has emitted EOS or ``STEPS`` tokens are out, each step's tokens written to a ``TensorArray``; dynamic batch."""
    vocab, embed, steps, eos = 10, 6, 8, 0
    table, w_x, w_h = _uniform(30, vocab, embed), _uniform(31, embed, H), _uniform(32, H, H)
    w_out = np.random.default_rng(33).uniform(-1.0, 1.0, (H, vocab)).astype(np.float32)
    b_out = np.zeros(vocab, np.float32)
    b_out[eos] = 1.0  # so that rows end within the steps

    @tf.function(input_signature=[tf.TensorSpec([None, H], tf.float32, name="h0"),
                                  tf.TensorSpec([None], tf.int32, name="start")])
    def fn(h0: tf.Tensor, start: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        def cond(i: tf.Tensor, h: tf.Tensor, token: tf.Tensor, done: tf.Tensor, tokens: tf.TensorArray) -> tf.Tensor:
            return tf.logical_and(i < steps, tf.logical_not(tf.reduce_all(done)))

        def body(i: tf.Tensor, h: tf.Tensor, token: tf.Tensor, done: tf.Tensor, tokens: tf.TensorArray) -> tuple:
            h = tf.tanh(tf.gather(table, token) @ w_x + h @ w_h)
            token = tf.where(done, eos, tf.cast(tf.argmax(h @ w_out + b_out, axis=-1), tf.int32))
            return i + 1, h, token, tf.logical_or(done, token == eos), tokens.write(i, token)

        init = (0, h0, start, tf.zeros([tf.shape(start)[0]], tf.bool), tf.TensorArray(tf.int32, size=steps))
        i, _, _, _, tokens = tf.while_loop(cond, body, init)
        return tf.transpose(tokens.stack()), i

    def feeds(seed: int, batch: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {"h0": rng.standard_normal((batch, H)).astype(np.float32),
                "start": rng.integers(1, vocab, batch).astype(np.int32)}

    def stops_early(seed: int, batch: int) -> dict[str, np.ndarray] | None:
        example = feeds(seed, batch)
        _, trips = fn(tf.constant(example["h0"]), tf.constant(example["start"]))
        return example if 2 <= int(trips) < steps else None

    example = next(f for f in (stops_early(seed, 3) for seed in range(40, 400)) if f is not None)
    save_case("tf_while_greedy",
              f"batched greedy decoder (tanh RNN cell, hidden {H}, vocab {vocab}, argmax) in a tf.while_loop until every"
              f" row has emitted EOS or {steps} tokens are out, each step's tokens written to a TensorArray of"
              f" {steps} (a [{steps}, 1] placeholder the first trip broadcasts to [{steps}, batch]), finished rows emit"
              " EOS; returns the tokens and the steps run; a tf.function with dynamic batch",
              ov.convert_model(fn), lambda f: [t.numpy() for t in fn(tf.constant(f["h0"]), tf.constant(f["start"]))], example,
              feeds(41, 5), names=("tokens", "steps"))


def write_toml() -> None:
    lines = ["# Made by make_models.py; one table per case (see README.md). OpenVINO IR: path is the .xml.", ""]
    for case in CASES:
        lines += ["[[model]]", f'name = "{case.name}"', f'path = "{case.name}.xml"',
                  f'inputs = "{case.name}.inputs.npz"', f'expected = "{case.name}.expected.npz"',
                  "about = " + '"' + case.about.replace('"', '\\"') + '"']
        if case.refusal is not None:
            lines.append(f'loopc-refuses = "{case.refusal}"')
        lines.append("")
    (HERE / "cases.toml").write_text("\n".join(lines))


def main() -> None:
    tf_scan_rnn()
    tf_scan_pair()
    keras_gru_masking()
    tf_while_greedy()
    write_toml()


if __name__ == "__main__":
    main()
