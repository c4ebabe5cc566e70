"""The test project's own model and its variants: an RNN step in a counted loop, h = tanh(h·R + b), 6 trips.

``python make_models.py`` writes ``rnn.onnx``, ``rnn_inputs.npz`` and ``rnn_golden.npz`` (its outputs as
onnxruntime computes them: the golden reference the manifest names). The variants compute the
same numbers with a changed engine, which is what the regression tests need:

- :func:`unrolled`: the 6 trips written out, no loop;
- :func:`wider`: one more H×H product per trip (by the identity), so H² more MACs per iteration;
- :func:`reweighted`: one weight changed, so the numbers differ.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, TRIPS = 16, 6
HERE = pathlib.Path(__file__).parent


def _weights() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return ((rng.standard_normal((HIDDEN, HIDDEN)) / 4).astype(np.float32),
            rng.standard_normal((1, HIDDEN)).astype(np.float32))


def _step(h: str, out: str, extra_identity: bool = False, suffix: str = "") -> list[onnx.NodeProto]:
    nodes = []
    if extra_identity:
        nodes.append(helper.make_node("MatMul", [h, "I"], [f"hi{suffix}"]))
        h = f"hi{suffix}"
    return nodes + [helper.make_node("MatMul", [h, "R"], [f"hr{suffix}"]),
                    helper.make_node("Add", [f"hr{suffix}", "B"], [f"s{suffix}"]),
                    helper.make_node("Tanh", [f"s{suffix}"], [out])]


def _model(nodes: list[onnx.NodeProto], r: np.ndarray, b: np.ndarray, extra: list[onnx.TensorProto]) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "rnn",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, HIDDEN])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, HIDDEN])],
        [numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B"), *extra],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def looped(extra_identity: bool = False, r: np.ndarray | None = None) -> onnx.ModelProto:
    weights, bias = _weights()
    body = helper.make_graph(
        _step("h_in", "h_out", extra_identity) + [helper.make_node("Identity", ["c_in"], ["c_out"])],
        "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, HIDDEN])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, HIDDEN])],
    )
    extra = [numpy_helper.from_array(np.array(TRIPS, np.int64), "M"), numpy_helper.from_array(np.array(True), "cond")]
    if extra_identity:
        extra.append(numpy_helper.from_array(np.eye(HIDDEN, dtype=np.float32), "I"))
    loop = helper.make_node("Loop", ["M", "cond", "h0"], ["h"], body=body, name="rnn_loop")
    return _model([loop], weights if r is None else r, bias, extra)


def unrolled() -> onnx.ModelProto:
    weights, bias = _weights()
    nodes, h = [], "h0"
    for k in range(TRIPS):
        out = "h" if k == TRIPS - 1 else f"h{k + 1}"
        nodes += _step(h, out, suffix=f"_{k}")
        h = out
    return _model(nodes, weights, bias, [])


def wider() -> onnx.ModelProto:
    return looped(extra_identity=True)


def reweighted() -> onnx.ModelProto:
    weights, _ = _weights()
    changed = weights.copy()
    changed[0, 0] += 0.5
    return looped(r=changed)


if __name__ == "__main__":
    onnx.save(looped(), HERE / "rnn.onnx")
    h0 = np.random.default_rng(1).standard_normal((1, HIDDEN)).astype(np.float32)
    np.savez(HERE / "rnn_inputs.npz", h0=h0)
    import onnxruntime

    session = onnxruntime.InferenceSession(str(HERE / "rnn.onnx"), providers=["CPUExecutionProvider"])
    np.savez(HERE / "rnn_golden.npz", h=session.run(["h"], {"h0": h0})[0])
