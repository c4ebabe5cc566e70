"""Make the tf2onnx corpus: Keras recurrent layers and TF while loops, exported as users export them.

Each case is built from scratch with fixed seeds, exported with ``tf2onnx.convert.from_keras`` or
``from_function`` with dynamic batch/time axes, and its expected outputs come from TF's own eager run.
Every export is checked once against onnxruntime so that a broken export fails here, not in a test.

Run outside the test suite, in a venv of its own (the exporter is never a loopc dependency):

    python3 -m venv venv-tf
    venv-tf/bin/pip install -r tests/models/tf2onnx/requirements.txt
    venv-tf/bin/python tests/models/tf2onnx/make_models.py

It writes ``<case>.onnx``, ``<case>.inputs.npz``, ``<case>.expected.npz`` and ``cases.toml`` beside
itself, and prints the sorted ONNX op types of each model (loop bodies included). The ``keras2_*`` cases
are Keras 2 models (tf_keras, ``TF_USE_LEGACY_KERAS=1``, which must be set before TensorFlow is imported):
the script makes them in a child process of itself. Re-running gives the same numbers; tf2onnx's node
names and the order of some nodes may differ from run to run. ``--only tf_while_nested_rnn ...`` makes
only those tf.function cases (the other files and ``cases.toml`` entries stay as they are).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
LEGACY_KERAS = "--legacy-keras" in sys.argv
if LEGACY_KERAS:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"

import dataclasses
import importlib.metadata
import json
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import tensorflow as tf
import tf2onnx

HERE = Path(__file__).resolve().parent
F = 4  # features per time step
H = 8  # hidden size
L = tf.keras.layers


@dataclasses.dataclass
class Case:
    name: str
    about: str
    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    max_trips: int | None = None


def _randomize(model: tf.keras.Model, seed: int) -> None:
    """Give every weight (biases too) a nonzero value, as a trained model has."""
    rng = np.random.default_rng(seed)
    model.set_weights([rng.uniform(-0.6, 0.6, w.shape).astype(w.dtype) for w in model.get_weights()])


def _sequence(seed: int, batch: int, time: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, time, F)).astype(np.float32)


def functional(build: Callable[[tf.Tensor], object]) -> Callable[[str], tf.keras.Model]:
    """A functional Keras model on x[batch, time, F] (Keras 3's from_keras needs one: see README)."""

    def make(name: str) -> tf.keras.Model:
        x = tf.keras.Input((None, F), name="x")
        return tf.keras.Model(x, build(x), name=name)

    return make


def keras_case(name: str, about: str, make: Callable[[str], tf.keras.Model], opset: int,
               seed: int, batch: int = 3, time: int = 7, lengths: list[int] | None = None) -> Case:
    """A Keras model on x[batch, time, F], exported with from_keras and a dynamic signature.

    ``lengths`` zero-pads each sequence after its length (the padding Keras' Masking layer skips).
    """
    tf.keras.backend.clear_session()
    tf.keras.utils.set_random_seed(seed)
    model = make(name)
    _randomize(model, seed)
    spec = [tf.TensorSpec([None, None, F], tf.float32, name="x")]
    proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=opset)
    feed = {"x": _sequence(seed + 100, batch, time)}
    for row, length in enumerate(lengths or []):
        feed["x"][row, length:] = 0.0
    eager = model(feed["x"], training=False)
    eager = eager if isinstance(eager, (list, tuple)) else [eager]
    # from_keras keeps the model's output order (names from model.output_names, made unique);
    # the onnxruntime check below catches a mismatch.
    names = [o.name for o in proto.graph.output]
    assert len(names) == len(eager), (name, names)
    expected = {n: np.asarray(v) for n, v in zip(names, eager)}
    keras = "tf_keras" if LEGACY_KERAS else "keras"
    return Case(name, f"{about}, {keras} {importlib.metadata.version(keras)}, from_keras, "
                f"tf2onnx {tf2onnx.__version__}, opset {opset}, dynamic batch and time", proto, feed, expected)


def function_case(name: str, about: str, fn: tf.types.experimental.GenericFunction,
                  spec: list[tf.TensorSpec], feed: dict[str, np.ndarray], opset: int | None,
                  dynamic: str, max_trips: int | None = None) -> Case:
    """A tf.function returning a dict of outputs, exported with from_function."""
    proto, _ = tf2onnx.convert.from_function(fn, input_signature=spec, opset=opset)
    eager = fn(**{k: tf.constant(v) for k, v in feed.items()})
    expected = {k: v.numpy() for k, v in eager.items()}
    used = f"opset {opset}" if opset else f"opset {proto.opset_import[0].version} (tf2onnx's default)"
    return Case(name, f"{about}, TF {tf.__version__}, from_function, tf2onnx {tf2onnx.__version__}, {used}, "
                f"{dynamic}", proto, feed, expected, max_trips)


class MinimalCell(L.Layer):
    """A hand-written recurrent cell (Keras' own RNN guide): h' = tanh(x W + h U + b)."""

    def __init__(self, units: int, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape: tuple[int, ...]) -> None:
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.recurrent = self.add_weight(shape=(self.units, self.units), name="recurrent")
        self.bias = self.add_weight(shape=(self.units,), name="bias")

    def call(self, inputs: tf.Tensor, states: list[tf.Tensor]) -> tuple[tf.Tensor, list[tf.Tensor]]:
        h = tf.tanh(tf.matmul(inputs, self.kernel) + tf.matmul(states[0], self.recurrent) + self.bias)
        return h, [h]


def keras_cases() -> list[Case]:
    """Keras 3 (tf.keras in TF 2.16+) recurrent layers."""
    lstm = functional(lambda x: L.LSTM(H, return_sequences=True, name="lstm")(x))
    gru = functional(lambda x: L.GRU(H, return_sequences=True, reset_after=True, name="gru")(x))
    backwards = functional(lambda x: L.SimpleRNN(H, return_sequences=True, go_backwards=True, name="rnn")(x))
    bilstm = functional(lambda x: L.Bidirectional(L.LSTM(H, return_sequences=True), name="bilstm")(x))
    stacked = functional(lambda x: L.Dense(3, name="head")(
        L.LSTM(H, name="lstm")(L.GRU(H, return_sequences=True, name="gru")(x))))
    masked = functional(lambda x: L.LSTM(H, return_sequences=True, name="lstm")(L.Masking(0.0, name="mask")(x)))
    custom = functional(lambda x: L.RNN(MinimalCell(H), return_sequences=True, return_state=True, name="rnn")(x))
    return [
        keras_case("keras_lstm", "Keras LSTM(8, return_sequences=True)", lstm, opset=17, seed=1),
        keras_case("keras_gru_reset_after", "Keras GRU(8, reset_after=True, the default, return_sequences=True)",
                   gru, opset=17, seed=2),
        keras_case("keras_simplernn_go_backwards",
                   "Keras SimpleRNN(8, go_backwards=True, return_sequences=True): the output sequence is reversed",
                   backwards, opset=17, seed=3, batch=2, time=9),
        keras_case("keras_bidirectional_lstm", "Keras Bidirectional(LSTM(8, return_sequences=True)), concat merge",
                   bilstm, opset=17, seed=4),
        keras_case("keras_stacked", "Keras GRU(8, return_sequences=True) -> LSTM(8) last state -> Dense(3)",
                   stacked, opset=13, seed=5, batch=4, time=6),
        keras_case("keras_lstm_masking", "Keras Masking(0.0) -> LSTM(8, return_sequences=True) on zero-padded "
                   "sequences: the mask keeps the LSTM a loop", masked, opset=17, seed=7, lengths=[7, 4, 2]),
        keras_case("keras_custom_cell", "Keras RNN(hand-written cell, return_sequences=True, return_state=True): "
                   "a loop tf2onnx cannot fuse", custom, opset=17, seed=6, batch=2, time=5),
    ]


def legacy_keras_cases() -> list[Case]:
    """Keras 2 (tf_keras), as older code and TF_USE_LEGACY_KERAS=1 users have it: tf2onnx fuses its GRU."""

    def sequential(*layers: L.Layer) -> Callable[[str], tf.keras.Model]:
        return lambda name: tf.keras.Sequential([tf.keras.Input((None, F), name="x"), *layers], name=name)

    return [
        keras_case("keras2_gru_reset_after", "Keras 2 Sequential GRU(8, reset_after=True, the default, "
                   "return_sequences=True)", sequential(L.GRU(H, return_sequences=True, name="gru")),
                   opset=17, seed=8),
        keras_case("keras2_bidirectional_gru", "Keras 2 Sequential Bidirectional(GRU(8, return_sequences=True)) "
                   "-> Dense(3) per step", sequential(L.Bidirectional(L.GRU(H, return_sequences=True)),
                                                      L.Dense(3, name="head")),
                   opset=13, seed=9, batch=2, time=5),
    ]


def _weights(seed: int, *shapes: tuple[int, ...]) -> list[tf.Variable]:
    rng = np.random.default_rng(seed)
    return [tf.Variable(rng.uniform(-0.6, 0.6, s).astype(np.float32)) for s in shapes]


def tf_while_tensorarray() -> Case:
    """tf.while_loop over time: reads an unstacked input TensorArray forwards and backwards, writes one."""
    w, u, v = _weights(17, (F, H), (H, H), (F, H))

    @tf.function
    def fn(x: tf.Tensor) -> dict[str, tf.Tensor]:
        xt = tf.transpose(x, [1, 0, 2])
        steps, batch = tf.shape(xt)[0], tf.shape(xt)[1]
        ta_in = tf.TensorArray(tf.float32, size=steps).unstack(xt)
        ta_out = tf.TensorArray(tf.float32, size=steps)

        def body(i: tf.Tensor, h: tf.Tensor, out: tf.TensorArray) -> tuple:
            h = tf.tanh(ta_in.read(i) @ w + ta_in.read(steps - 1 - i) @ v + h @ u)
            return i + 1, h, out.write(i, h)

        _, h, ta_out = tf.while_loop(lambda i, h, out: i < steps, body, [0, tf.zeros([batch, H]), ta_out])
        return {"y": tf.transpose(ta_out.stack(), [1, 0, 2]), "h": h}

    spec = [tf.TensorSpec([None, None, F], tf.float32, name="x")]
    return function_case("tf_while_tensorarray",
                         "tf.while_loop writing a TensorArray (stack) and reading an unstacked input at i and T-1-i",
                         fn, spec, {"x": _sequence(107, 3, 6)}, opset=17, dynamic="dynamic batch and time")


def tf_while_strided_rnn() -> Case:
    """An RNN over time in a tf.while_loop reading ``x[:, i, :]`` (a strided slice, not a TensorArray) and
    writing its states to a TensorArray."""
    w, u = _weights(19, (F, H), (H, H))

    @tf.function
    def fn(x: tf.Tensor) -> dict[str, tf.Tensor]:
        steps, batch = tf.shape(x)[1], tf.shape(x)[0]
        ta_out = tf.TensorArray(tf.float32, size=steps)

        def step(i: tf.Tensor, h: tf.Tensor, out: tf.TensorArray) -> tuple:
            h = tf.tanh(x[:, i, :] @ w + h @ u)
            return i + 1, h, out.write(i, h)

        _, h, ta_out = tf.while_loop(lambda i, h, out: i < steps, step, [0, tf.zeros([batch, H]), ta_out])
        return {"y": tf.transpose(ta_out.stack(), [1, 0, 2]), "h": h}

    spec = [tf.TensorSpec([None, None, F], tf.float32, name="x")]
    return function_case("tf_while_strided_rnn",
                         "tf.while_loop RNN reading x[:, i, :] (a strided slice by the counter) and writing a "
                         "TensorArray", fn, spec, {"x": _sequence(112, 3, 7)}, opset=17,
                         dynamic="dynamic batch and time")


def tf_while_nested_rnn() -> Case:
    """An RNN over time (tf.while_loop + TensorArray) run twice by an outer tf.while_loop, the second pass
    over the first's outputs: a loop in a loop, the inner one bounded by the time length."""
    w, u = _weights(18, (F, H), (H, H))

    @tf.function
    def fn(x: tf.Tensor) -> dict[str, tf.Tensor]:
        xt = tf.transpose(x, [1, 0, 2]) @ w
        steps, batch = tf.shape(xt)[0], tf.shape(xt)[1]

        def layer(k: tf.Tensor, seq: tf.Tensor) -> tuple:
            ta_in = tf.TensorArray(tf.float32, size=steps).unstack(seq)
            ta_out = tf.TensorArray(tf.float32, size=steps)

            def step(i: tf.Tensor, h: tf.Tensor, out: tf.TensorArray) -> tuple:
                h = tf.tanh(ta_in.read(i) + h @ u)
                return i + 1, h, out.write(i, h)

            _, _, ta_out = tf.while_loop(lambda i, h, out: i < steps, step, [0, tf.zeros([batch, H]), ta_out])
            return k + 1, ta_out.stack()

        _, y = tf.while_loop(lambda k, seq: k < 2, layer, [0, xt])
        return {"y": tf.transpose(y, [1, 0, 2])}

    spec = [tf.TensorSpec([None, None, F], tf.float32, name="x")]
    return function_case("tf_while_nested_rnn",
                         "tf.while_loop + TensorArray RNN over time, run twice by an outer tf.while_loop "
                         "(the second pass reads the first's outputs)",
                         fn, spec, {"x": _sequence(111, 3, 6)}, opset=17, dynamic="dynamic batch and time")


def tf_scan() -> Case:
    """tf.scan over time with a tuple state: a decayed running sum and a running max."""

    @tf.function
    def fn(x: tf.Tensor) -> dict[str, tf.Tensor]:
        xt = tf.transpose(x, [1, 0, 2])
        zeros = tf.zeros_like(xt[0])

        def step(acc: tuple, xi: tf.Tensor) -> tuple:
            total, peak = acc
            return 0.9 * total + xi, tf.maximum(peak, xi)

        totals, peaks = tf.scan(step, xt, initializer=(zeros, zeros - 1e9))
        return {"total": tf.transpose(totals, [1, 0, 2]), "peak": tf.transpose(peaks, [1, 0, 2])}

    spec = [tf.TensorSpec([None, None, F], tf.float32, name="x")]
    return function_case("tf_scan", "tf.scan with a tuple state (decayed cumulative sum, running max)",
                         fn, spec, {"x": _sequence(108, 2, 8)}, opset=13, dynamic="dynamic batch and time")


def tf_while_data_dependent() -> Case:
    """x = f(x) until ||x|| <= eps or i == n: the trip count depends on the data and on an input."""

    @tf.function
    def fn(x: tf.Tensor, n: tf.Tensor, eps: tf.Tensor) -> dict[str, tf.Tensor]:
        def cond(i: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
            return tf.logical_and(i < n, tf.norm(v) > eps)

        def body(i: tf.Tensor, v: tf.Tensor) -> tuple:
            return i + 1, 0.5 * v + 0.1 * tf.sin(v)

        steps, y = tf.while_loop(cond, body, [tf.constant(0), x])
        return {"y": y, "steps": steps}

    spec = [tf.TensorSpec([None, F], tf.float32, name="x"), tf.TensorSpec([], tf.int32, name="n"),
            tf.TensorSpec([], tf.float32, name="eps")]
    rng = np.random.default_rng(109)
    feed = {"x": rng.standard_normal((3, F)).astype(np.float32), "n": np.array(40, np.int32),
            "eps": np.array(1e-2, np.float32)}
    return function_case("tf_while_data_dependent",
                         "tf.while_loop until norm(x) <= eps or i == n (n, eps inputs); returns x and the trip count",
                         fn, spec, feed, opset=17, dynamic="dynamic batch")


def tf_while_growing() -> Case:
    """A while loop that collects every iterate in a dynamic_size TensorArray: its length is data-dependent."""

    @tf.function
    def fn(x: tf.Tensor, eps: tf.Tensor) -> dict[str, tf.Tensor]:
        trace = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

        def body(i: tf.Tensor, v: tf.Tensor, trace: tf.TensorArray) -> tuple:
            v = 0.5 * v + 0.1 * tf.sin(v)
            return i + 1, v, trace.write(i, v)

        _, y, trace = tf.while_loop(lambda i, v, trace: tf.norm(v) > eps, body, [tf.constant(0), x, trace])
        return {"y": y, "trace": trace.stack()}

    spec = [tf.TensorSpec([None, F], tf.float32, name="x"), tf.TensorSpec([], tf.float32, name="eps")]
    rng = np.random.default_rng(110)
    feed = {"x": rng.standard_normal((2, F)).astype(np.float32), "eps": np.array(1e-2, np.float32)}
    return function_case("tf_while_growing",
                         "tf.while_loop until norm(x) <= eps, writing each iterate to a dynamic_size TensorArray",
                         fn, spec, feed, opset=None, dynamic="dynamic batch, unbounded trips", max_trips=64)


def tf_while_greedy() -> Case:
    """Batched greedy decoding with a GRU cell: a tf.while_loop until every row has emitted EOS or max_len tokens are
    out, each step's tokens written to a TensorArray (stacked after the loop)."""
    vocab, eos, max_len = 12, 0, 12
    embed, w_x, w_h, b, w_out, b_out = _weights(19, (vocab, H), (H, 3 * H), (H, 3 * H), (3 * H,), (H, vocab),
                                               (vocab,))
    w_out.assign(w_out * 4.0)

    @tf.function
    def fn(h0: tf.Tensor, start: tf.Tensor) -> dict[str, tf.Tensor]:
        def cond(i: tf.Tensor, h: tf.Tensor, token: tf.Tensor, done: tf.Tensor, out: tf.TensorArray) -> tf.Tensor:
            return tf.logical_and(i < max_len, tf.logical_not(tf.reduce_all(done)))

        def body(i: tf.Tensor, h: tf.Tensor, token: tf.Tensor, done: tf.Tensor, out: tf.TensorArray) -> tuple:
            gx = tf.gather(embed, token) @ w_x + b
            gh = h @ w_h
            r = tf.sigmoid(gx[:, :H] + gh[:, :H])
            z = tf.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
            n = tf.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
            h = (1.0 - z) * n + z * h
            token = tf.where(done, eos, tf.argmax(h @ w_out + b_out, axis=1, output_type=tf.int32))
            return i + 1, h, token, tf.logical_or(done, token == eos), out.write(i, token)

        out = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        steps, h, _, _, out = tf.while_loop(cond, body, [0, h0, start, tf.zeros_like(start, tf.bool), out])
        return {"tokens": tf.transpose(out.stack()), "h": h, "steps": steps}

    def example(seed: int, batch: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {"h0": rng.standard_normal((batch, H)).astype(np.float32),
                "start": rng.integers(1, vocab, size=batch).astype(np.int32)}

    def search(batch: int) -> dict[str, np.ndarray]:
        for seed in range(500):
            feed = example(seed, batch)
            if 4 <= int(fn(**{k: tf.constant(v) for k, v in feed.items()})["steps"]) <= 9:
                return feed
        raise RuntimeError(f"tf_while_greedy: no example of batch {batch} stops early")

    spec = [tf.TensorSpec([None, H], tf.float32, name="h0"), tf.TensorSpec([None], tf.int32, name="start")]
    case = function_case("tf_while_greedy",
                         "batched greedy decoder (hand-written GRU cell, hidden 8, vocab 12, argmax, finished rows emit"
                         " EOS) in a tf.while_loop until every row has emitted EOS or 12 tokens are out, each step's"
                         " tokens written to a dynamic_size TensorArray and stacked after the loop; outputs tokens,"
                         " the last h and the steps run", fn, spec, search(2), opset=17, dynamic="dynamic batch")
    # Once more at another batch (it may run to max_len), so that an export baked to the example's batch fails here.
    other = example(1000, 5)
    check_with_onnxruntime(Case(case.name, case.about, case.model, other,
                                {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in other.items()}).items()}))
    return case


def op_types(graph: onnx.GraphProto) -> set[str]:
    """The op types of a graph and of every graph nested in its nodes' attributes."""
    ops: set[str] = set()
    for node in graph.node:
        ops.add(node.op_type)
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                ops |= op_types(sub)
    return ops


def check_with_onnxruntime(case: Case) -> None:
    """The export is only kept if onnxruntime agrees with TF eager on it."""
    session = ort.InferenceSession(case.model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, case.inputs)))
    for name, want in case.expected.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, (case.name, name)
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=f"{case.name}:{name}")


def check_declared(case: Case) -> None:
    """Inputs are keyed and typed exactly as the graph declares; every dynamic dim is in 1..64."""
    declared = {i.name: i.type.tensor_type for i in case.model.graph.input}
    assert set(declared) == set(case.inputs), (case.name, list(declared), list(case.inputs))
    for name, value in case.inputs.items():
        dtype = onnx.helper.tensor_dtype_to_np_dtype(declared[name].elem_type)
        assert value.dtype == dtype and value.ndim == len(declared[name].shape.dim), (case.name, name)
        assert all(1 <= d <= 64 for d in value.shape), (case.name, name, value.shape)
    assert [o.name for o in case.model.graph.output] and set(case.expected) == {
        o.name for o in case.model.graph.output}, case.name


def check_pins() -> None:
    """Say so when the installed exporter differs from requirements.txt (the corpus would differ too)."""
    for line in (HERE / "requirements.txt").read_text().split():
        package, _, version = line.partition("==")
        installed = importlib.metadata.version(package)
        if installed != version:
            print(f"warning: {package} {installed} is installed, requirements.txt pins {version}")


def save(case: Case) -> dict[str, object]:
    """Check the case, write its three files, and return its cases.toml entry."""
    check_declared(case)
    check_with_onnxruntime(case)
    size = len(case.model.SerializeToString())
    assert size < 300_000, (case.name, size)
    print(f"{case.name}: {size} bytes, ops {' '.join(sorted(op_types(case.model.graph)))}", flush=True)
    onnx.save(case.model, HERE / f"{case.name}.onnx")
    np.savez(HERE / f"{case.name}.inputs.npz", **case.inputs)
    np.savez(HERE / f"{case.name}.expected.npz", **case.expected)
    entry: dict[str, object] = {"name": case.name, "path": f"{case.name}.onnx",
                                "inputs": f"{case.name}.inputs.npz", "expected": f"{case.name}.expected.npz",
                                "about": case.about}
    if case.max_trips is not None:
        entry["max-trips"] = case.max_trips
    return entry


def legacy_keras_entries() -> list[dict[str, object]]:
    """Make the Keras 2 cases in a child process (the Keras version is chosen when TF is imported)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "entries.json"
        subprocess.run([sys.executable, __file__, "--legacy-keras", str(out)], check=True)
        return json.loads(out.read_text())


def write_toml(entries: list[dict[str, object]]) -> None:
    lines = ["# Made by make_models.py (TF eager outputs are the expected values). Do not edit by hand.", ""]
    for entry in entries:
        lines.append("[[model]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in entry.items()]
        lines.append("")
    (HERE / "cases.toml").write_text("\n".join(lines))


FUNCTION_CASES = (tf_while_tensorarray, tf_while_strided_rnn, tf_while_nested_rnn, tf_scan, tf_while_data_dependent,
                  tf_while_growing, tf_while_greedy)


def remake(names: list[str]) -> None:
    """Make only the named tf.function cases, keeping every other case's files and entry as they are."""
    made = {case.__name__: case for case in FUNCTION_CASES}
    unknown = sorted(set(names) - set(made))
    assert not unknown, f"--only takes {', '.join(made)}, not {', '.join(unknown)}"
    entries = tomllib.loads((HERE / "cases.toml").read_text())["model"]
    for name in names:
        entry = save(made[name]())
        at = next((k for k, e in enumerate(entries) if e["name"] == entry["name"]), None)
        if at is None:
            entries.append(entry)
        else:
            entries[at] = entry
    write_toml(entries)


def main() -> None:
    if LEGACY_KERAS:
        Path(sys.argv[-1]).write_text(json.dumps([save(case) for case in legacy_keras_cases()]))
        return
    check_pins()
    if "--only" in sys.argv:
        remake(sys.argv[sys.argv.index("--only") + 1:])
        return
    entries = [save(case) for case in keras_cases()]
    entries += legacy_keras_entries()
    entries += [save(case()) for case in FUNCTION_CASES]
    write_toml(entries)


if __name__ == "__main__":
    main()
