"""Make the jax2onnx corpus: a greedy decoder written with ``lax.while_loop``, exported by jax2onnx.

Run outside the test suite, in a venv of its own (loopc never depends on JAX):

    python3 -m venv venv-jax
    venv-jax/bin/pip install -r tests/models/jax2onnx/requirements.txt
    venv-jax/bin/python tests/models/jax2onnx/make_models.py

Weights are random from a fixed seed and closed over by the function (they become initializers). For each case
the script writes ``<case>.onnx``, ``<case>.inputs.npz`` (keyed by graph input name), ``<case>.expected.npz``
(JAX's own outputs, keyed by graph output name) and ``cases.toml``; each export is checked against onnxruntime on
the example and once more at another batch, so that an export baked to the example's batch fails here.
"""

from __future__ import annotations

import pathlib
from importlib.metadata import version

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnxruntime as ort
from jax import lax
from jax2onnx import to_onnx

HERE = pathlib.Path(__file__).resolve().parent
VOCAB, EMBED, HIDDEN, MAX_LEN, EOS = 12, 8, 16, 12, 0
TOOL = f"jax2onnx {version('jax2onnx')} (jax {jax.__version__}), its default opset 23"

#: loopc's refusal for a case at a known limit (the corpus test checks it is stated); none today.
REFUSALS: dict[str, str] = {}


def _weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def w(*shape: int, scale: float = 0.5) -> np.ndarray:
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    weights = {"embed": w(VOCAB, EMBED, scale=1.0), "w_x": w(EMBED, 3 * HIDDEN), "w_h": w(HIDDEN, 3 * HIDDEN),
               "b": w(3 * HIDDEN), "w_out": w(HIDDEN, VOCAB, scale=1.0), "b_out": w(VOCAB)}
    weights["b_out"][EOS] += 0.3
    return weights


W = _weights(7)


def greedy(h0: jax.Array, start: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Batched greedy decoding with a GRU cell: ``lax.while_loop`` until every row has emitted EOS or MAX_LEN
    tokens are out, each step's tokens written into a preallocated ``[MAX_LEN, batch]`` buffer with
    ``.at[i].set``. Returns the buffer (EOS after a row's end) and the number of steps run."""
    embed, w_x, w_h, b = jnp.asarray(W["embed"]), jnp.asarray(W["w_x"]), jnp.asarray(W["w_h"]), jnp.asarray(W["b"])
    w_out, b_out = jnp.asarray(W["w_out"]), jnp.asarray(W["b_out"])

    def cond(state: tuple) -> jax.Array:
        i, _, _, done, _ = state
        return jnp.logical_and(i < MAX_LEN, jnp.logical_not(jnp.all(done)))

    def body(state: tuple) -> tuple:
        i, h, token, done, tokens = state
        gx = embed[token] @ w_x + b
        gh = h @ w_h
        r = jax.nn.sigmoid(gx[:, :HIDDEN] + gh[:, :HIDDEN])
        z = jax.nn.sigmoid(gx[:, HIDDEN:2 * HIDDEN] + gh[:, HIDDEN:2 * HIDDEN])
        n = jnp.tanh(gx[:, 2 * HIDDEN:] + r * gh[:, 2 * HIDDEN:])
        h = (1.0 - z) * n + z * h
        token = jnp.where(done, EOS, jnp.argmax(h @ w_out + b_out, axis=-1).astype(jnp.int32))
        tokens = tokens.at[i].set(token)
        return i + 1, h, token, jnp.logical_or(done, token == EOS), tokens

    # Made by broadcasting against ``start``: jax2onnx's ``jnp.full``/``jnp.zeros`` refuse a symbolic batch.
    done = start < 0
    tokens = jnp.full((MAX_LEN, 1), EOS, jnp.int32) + 0 * start[None, :]
    init = (jnp.int32(0), h0, start, done, tokens)
    steps, _, _, _, tokens = lax.while_loop(cond, body, init)
    return tokens, steps


def _example(seed: int, batch: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"h0": rng.standard_normal((batch, HIDDEN)).astype(np.float32),
            "start": rng.integers(1, VOCAB, size=batch).astype(np.int32)}


def _stops_early(feeds: dict[str, np.ndarray]) -> bool:
    _, steps = greedy(*feeds.values())
    return 4 <= int(steps) <= 9


def _search(batch: int) -> dict[str, np.ndarray]:
    for seed in range(500):
        feeds = _example(seed, batch)
        if _stops_early(feeds):
            return feeds
    raise RuntimeError(f"no example input of batch {batch} stops early")


def _check(path: pathlib.Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """JAX's outputs keyed by the export's output names, after checking onnxruntime gives the same."""
    names = [o.name for o in onnx.load(str(path)).graph.output]
    expected = dict(zip(names, (np.asarray(v) for v in greedy(*feeds.values()))))
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    for name, value in zip(names, got):
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6, err_msg=f"{path.name}: {name}")
    return expected


def main() -> None:
    name = "jax_while_greedy"
    path = HERE / f"{name}.onnx"
    to_onnx(greedy, [jax.ShapeDtypeStruct(("B", HIDDEN), jnp.float32), jax.ShapeDtypeStruct(("B",), jnp.int32)],
            model_name=name, input_names=["h0", "start"], output_names=["tokens", "steps"],
            return_mode="file", output_path=str(path))
    feeds = _search(2)
    expected = _check(path, feeds)
    _check(path, _search(5))
    np.savez(HERE / f"{name}.inputs.npz", **feeds)
    np.savez(HERE / f"{name}.expected.npz", **expected)
    print(f"{name}: ok against onnxruntime at batch 2 and 5; steps {int(expected['steps'])}")
    about = ("batched greedy decoder (hand-written GRU cell, hidden 16, vocab 12, argmax) in a `lax.while_loop` until"
             " every row has emitted EOS or 12 tokens are out, each step's tokens written into a preallocated"
             f" [12, batch] buffer with `tokens.at[i].set(token)`; returns the buffer and the steps run; {TOOL},"
             " dynamic batch")
    lines = ["# Made by make_models.py; one table per case (see README.md).", "", "[[model]]", f'name = "{name}"',
             f'path = "{name}.onnx"', f'inputs = "{name}.inputs.npz"', f'expected = "{name}.expected.npz"',
             f'about = "{about}"']
    if name in REFUSALS:
        lines.append(f'loopc-refuses = "{REFUSALS[name]}"')
    (HERE / "cases.toml").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
