"""Stacks of ONNX LSTM/GRU/RNN layers, compiled and simulated against onnxruntime: the models the
recurrent optimizations are tested on."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from loopc.compiler import compile
from loopc.ir import Loop
from loopc.sim import simulate

SEQ, BATCH, INPUT, HIDDEN = 7, 2, 3, 5
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def stack(op: str, layers: int, *, lbr: int = 0, direction: str = "forward", lens: bool = False,
          between: str = "reshape", chained_state: bool = False) -> onnx.ModelProto:
    """``layers`` stacked ``op`` nodes on X [SEQ, BATCH, INPUT]; every layer's Y, Y_h (and Y_c) is an output.

    ``between``: how a layer's Y [seq, dirs, batch, H] becomes the next one's X — ``reshape`` (row-wise),
    or ``flip`` (the sequence reversed: not row-wise). ``chained_state``: a layer starts from the one
    below's final state (its Y_h), which depends on all of the lower layer's trips."""
    rng = np.random.default_rng(len(op) + layers)
    dirs = 2 if direction == "bidirectional" else 1
    gates = GATES[op]
    nodes, inits, outputs = [], [], []
    x, width = "X", INPUT
    for k in range(layers):
        for name, shape in ((f"W{k}", [dirs, gates * HIDDEN, width]), (f"R{k}", [dirs, gates * HIDDEN, HIDDEN]),
                            (f"B{k}", [dirs, 2 * gates * HIDDEN])):
            inits.append(numpy_helper.from_array(rng.normal(scale=0.5, size=shape).astype(np.float32), name))
        attrs: dict[str, Any] = {"hidden_size": HIDDEN, "direction": direction}
        if op == "GRU":
            attrs["linear_before_reset"] = lbr
        results = [f"Y{k}", f"Yh{k}"] + ([f"Yc{k}"] if op == "LSTM" else [])
        initial_h = f"Yh{k - 1}" if chained_state and k else ""
        inputs = [x, f"W{k}", f"R{k}", f"B{k}", "lens" if lens else "", initial_h]
        nodes.append(helper.make_node(op, inputs, results, name=f"{op.lower()}{k}", **attrs))
        outputs += results
        inits.append(numpy_helper.from_array(np.array([0, 0, -1], np.int64), f"shape{k}"))
        nodes.append(helper.make_node("Transpose", [f"Y{k}"], [f"Yt{k}"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"Yt{k}", f"shape{k}"], [f"H{k}"]))
        if between == "flip":
            inits.append(numpy_helper.from_array(np.arange(SEQ - 1, -1, -1, dtype=np.int64), f"back{k}"))
            nodes.append(helper.make_node("Gather", [f"H{k}", f"back{k}"], [f"F{k}"], axis=0))
            x = f"F{k}"
        else:
            x = f"H{k}"
        width = dirs * HIDDEN
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [SEQ, BATCH, INPUT])]
    if lens:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]))
    graph = helper.make_graph(nodes, "stack", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run(model: onnx.ModelProto, tmp_path: Any, disabled: tuple[str, ...] = ()) -> tuple[list[Loop], int]:
    """Compile ``model``, compare all its outputs with onnxruntime's; returns the top-level loops."""
    path = tmp_path / "stack.onnx"
    onnx.save(model, str(path))
    feeds = {"X": np.random.default_rng(7).normal(size=(SEQ, BATCH, INPUT)).astype(np.float32)}
    if any(i.name == "lens" for i in model.graph.input):
        feeds["lens"] = np.array([SEQ, SEQ - 3], np.int32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    compiled = compile(str(path), disabled=disabled)
    got = simulate(compiled.network, feeds)
    for out, expected in zip(model.graph.output, want):
        np.testing.assert_allclose(got[out.name].reshape(expected.shape), expected, rtol=1e-5, atol=1e-5,
                                   err_msg=out.name)
    loops = [node for node in compiled.model.graph.nodes if isinstance(node, Loop)]
    outside = sum(node.op == "MatMul" for node in compiled.model.graph.nodes)
    return loops, outside
