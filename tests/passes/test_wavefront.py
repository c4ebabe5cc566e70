"""The wavefront schedule on stacks of ONNX LSTM/GRU/RNN layers: every output (each layer's Y, Y_h and
Y_c) simulated against onnxruntime with and without it, the stack fused into one loop, the trips at
its edges run outside it without the idle layer's work, and the stacks it must leave alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from loopc.compiler import compile
from loopc.ir import Loop, Node, Value
from loopc.passes._batching import row_wise
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


@pytest.mark.parametrize(("op", "lbr"), [("LSTM", 0), ("GRU", 0), ("GRU", 1), ("RNN", 0)])
@pytest.mark.parametrize("layers", [2, 3])
def test_a_forward_stack_runs_as_one_loop(op: str, lbr: int, layers: int, tmp_path: Any) -> None:
    fused, _ = run(stack(op, layers, lbr=lbr), tmp_path)
    plain, _ = run(stack(op, layers, lbr=lbr), tmp_path, disabled=("wavefront",))
    assert (len(fused), len(plain)) == (1, layers)
    # trips at the edges (where a layer idles) run outside: SEQ + layers − 1 trips, less 2·(layers − 1)
    assert fused[0].trip_count is not None and fused[0].trip_count.producer is not None
    assert int(fused[0].trip_count.producer.attrs["value"]) == SEQ - layers + 1


def test_edge_trips_do_no_idle_work(tmp_path: Any) -> None:
    """Of the products outside the loop, the edges hold only the working layers': trip 0 runs layer 0
    alone (h·R₀ᵀ), the last trip layer 1 alone (x·W₁ᵀ and h·R₁ᵀ); the rest is layer 0's batched X·W₀ᵀ."""
    _, outside = run(stack("LSTM", 2), tmp_path)
    assert outside == 1 + 1 + 2


def test_sequence_lens_and_the_counter(tmp_path: Any) -> None:
    """With sequence_lens each layer reads the loop counter (its step), which the skew offsets."""
    fused, _ = run(stack("LSTM", 2, lens=True), tmp_path)
    assert len(fused) == 1


@pytest.mark.parametrize(("kwargs", "loops"), [
    ({"direction": "bidirectional"}, 2),  # layer 2's first step needs layer 1's last reverse step
    ({"between": "flip"}, 2),  # the sequence reversed between the layers: not row by row
    ({"chained_state": True}, 2),  # layer 2 starts from layer 1's final state
])
def test_stacks_that_cannot_be_skewed_are_left_alone(kwargs: dict[str, Any], loops: int, tmp_path: Any) -> None:
    found, _ = run(stack("GRU", 2, **kwargs), tmp_path)
    assert len(found) == loops


def _node(op: str, shapes: list[tuple[int, ...] | None], out: tuple[int, ...], consts: dict[int, Any] | None = None,
          **attrs: Any) -> Node:
    """``op`` on values of ``shapes`` (``consts``: operands that are Constants, by position)."""
    inputs = []
    for k, shape in enumerate(shapes):
        value = Value(f"in{k}", np.dtype(np.float32), shape)
        if consts and k in consts:
            array = np.asarray(consts[k])
            value = Value(f"in{k}", array.dtype, array.shape)
            Node("Constant", [], [value], {"value": array})
        inputs.append(value)
    return Node(op, inputs, [Value("out", np.dtype(np.float32), out)], attrs)


@pytest.mark.parametrize(("node", "stacked", "expected"), [
    # elementwise: an operand without the trip axis broadcasts along the rows
    (_node("Add", [(7, 2, 4), (4,)], (7, 2, 4)), [True, False], True),
    (_node("Add", [(7, 2, 4), (1, 2, 4)], (7, 2, 4)), [True, False], True),
    (_node("Add", [(7, 2, 4), (7, 2, 4)], (7, 2, 4)), [True, False], False),  # row k meets the other's row k
    # MatMul by a matrix, not by a stack of them
    (_node("MatMul", [(7, 2, 4), (4, 5)], (7, 2, 5)), [True, False], True),
    (_node("MatMul", [(7, 4), (4, 5)], (7, 5)), [True, False], True),
    (_node("MatMul", [(3, 7), (7, 4)], (3, 4)), [False, True], False),  # sums over the rows
    (_node("Transpose", [(7, 2, 4)], (7, 4, 2), perm=[0, 2, 1]), [True], True),
    (_node("Transpose", [(7, 2, 4)], (2, 7, 4), perm=[1, 0, 2]), [True], False),
    (_node("Reshape", [(7, 2, 4), None], (7, 8), consts={1: np.array([0, -1], np.int64)}), [True, False], True),
    (_node("Reshape", [(7, 2, 4), None], (14, 4), consts={1: np.array([-1, 4], np.int64)}), [True, False], False),
    (_node("ReduceSum", [(7, 2, 4), None], (7, 2, 1), consts={1: np.array([2], np.int64)}), [True, False], True),
    (_node("ReduceSum", [(7, 2, 4), None], (1, 2, 4), consts={1: np.array([0], np.int64)}), [True, False], False),
    (_node("Softmax", [(7, 2, 4)], (7, 2, 4), axis=-1), [True], True),
    (_node("Softmax", [(7, 2, 4)], (7, 2, 4), axis=0), [True], False),
    (_node("Gather", [(7, 2, 4), None], (7, 2, 4), consts={1: np.arange(7)[::-1].copy()}, axis=0), [True, False], False),
])
def test_row_wise(node: Node, stacked: list[bool], expected: bool) -> None:
    assert row_wise(node, stacked) is expected
