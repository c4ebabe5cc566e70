"""The backend on hostile models: trip counts past INT32_MAX saturate (never wrap), and layer and
tensor names stay unique however the model names its nodes.

Trip counts go through the real ``loopc run``; the oracle is onnxruntime where the loop ends by
its condition, and the ONNX Loop semantics worked out by hand where only the count stops it
(onnxruntime would run 2**62 trips).
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from loopc.backend.trt import to_network
from loopc.errors import BackendError
from loopc.frontend.onnx import import_model
from loopc.ir import Graph, Loop, LoopOutput, Model, Node, Recurrence, Value
from loopc.passes import PassManager, default_passes
from loopc.sim import simulate
from tests.backend.trt.oracle import build_and_simulate

INT32_MAX = 2**31 - 1
HUGE = [INT32_MAX, 2**31, 2**32 + 3, 2**62]
NEGATIVE = [-1, -(2**40)]


def loopc(*args: str) -> subprocess.CompletedProcess[str]:
    exe = pathlib.Path(sys.executable).with_name("loopc")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)


def counting_loop(stop_by_condition: bool, scan: bool) -> onnx.ModelProto:
    """``for i < M [while f < lim]: f += 1; s += 1 [; scans.append(s)]`` with M a graph input.

    The condition reads a float, so no pass can turn it into a trip count: the loop keeps both limits.
    """
    nodes = [h.make_node("Add", ["s_in", "one"], ["s_out"]), h.make_node("Add", ["f_in", "onef"], ["f_out"])]
    if stop_by_condition:
        nodes.append(h.make_node("Less", ["f_out", "lim"], ["c_out"]))
    else:
        nodes.append(h.make_node("Identity", ["c_in"], ["c_out"]))
    outs = [h.make_tensor_value_info(n, t, []) for n, t in (("c_out", T.BOOL), ("f_out", T.FLOAT), ("s_out", T.INT64))]
    results = [h.make_tensor_value_info("f", T.FLOAT, []), h.make_tensor_value_info("s", T.INT64, [])]
    if scan:
        nodes.append(h.make_node("Identity", ["s_in"], ["scan"]))
        outs.append(h.make_tensor_value_info("scan", T.INT64, []))
        results.append(h.make_tensor_value_info("scans", T.INT64, [None]))
    body = h.make_graph(
        nodes, "body",
        [h.make_tensor_value_info(n, t, []) for n, t in (("i", T.INT64), ("c_in", T.BOOL), ("f_in", T.FLOAT),
                                                         ("s_in", T.INT64))],
        outs, [h.make_tensor("one", T.INT64, [], [1]), h.make_tensor("onef", T.FLOAT, [], [1.0])])
    inputs = [h.make_tensor_value_info("M", T.INT64, [])]
    if stop_by_condition:
        inputs.append(h.make_tensor_value_info("lim", T.FLOAT, []))
    graph = h.make_graph(
        [h.make_node("Loop", ["M", "c0", "f0", "s0"], [r.name for r in results], body=body, name="count")],
        "g", inputs, results,
        [h.make_tensor("c0", T.BOOL, [], [True]), h.make_tensor("s0", T.INT64, [], [0]),
         h.make_tensor("f0", T.FLOAT, [], [0.0])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def run_cli(tmp_path: pathlib.Path, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
            *flags: str) -> tuple[subprocess.CompletedProcess[str], dict[str, np.ndarray]]:
    path, inputs, out = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    proc = loopc("run", str(path), "-i", str(inputs), "-o", str(out), *flags)
    got = dict(np.load(out)) if proc.returncode == 0 else {}
    return proc, got


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


@pytest.mark.parametrize("m", HUGE + NEGATIVE)
def test_runtime_trip_count_stopped_by_condition_matches_onnxruntime(tmp_path, m):
    # a wrapped M ran 3 trips (2**32+3) or none (2**31, 2**62); the condition stops the loop at 8
    model = counting_loop(stop_by_condition=True, scan=False)
    feeds = {"M": np.array(m, np.int64), "lim": np.array(7.5, np.float32)}
    proc, got = run_cli(tmp_path, model, feeds)
    assert proc.returncode == 0, proc.stderr
    want = onnxruntime_outputs(model, feeds)
    assert got["s"] == want["s"] and got["f"] == want["f"], (got, want)
    assert int(want["s"]) == (8 if m > 0 else 0)


@pytest.mark.parametrize("m", NEGATIVE)
def test_negative_trip_count_runs_no_trips_with_scan_output(tmp_path, m):
    # ONNX's M is "the maximum trip count": M < 0 runs nothing, as onnxruntime does; the scan output is
    # empty (its length was a negative INT32 before)
    model = counting_loop(stop_by_condition=True, scan=True)
    feeds = {"M": np.array(m, np.int64), "lim": np.array(7.5, np.float32)}
    proc, got = run_cli(tmp_path, model, feeds)
    assert proc.returncode == 0, proc.stderr
    want = onnxruntime_outputs(model, feeds)
    assert got["scans"].shape == want["scans"].shape == (0,)
    assert got["s"] == want["s"] == 0


@pytest.mark.parametrize("m", NEGATIVE)
def test_negative_trip_count_counted_loop(tmp_path, m):
    proc, got = run_cli(tmp_path, counting_loop(stop_by_condition=False, scan=True), {"M": np.array(m, np.int64)})
    assert proc.returncode == 0, proc.stderr
    assert got["s"] == 0 and got["scans"].shape == (0,)


@pytest.mark.parametrize("m", HUGE)
def test_huge_trip_count_is_not_wrapped(tmp_path, m):
    # Without a condition the loop runs M trips: at least 2**31 - 1 of them, never 3 or 0. The
    # simulator's iteration bound shows it kept going.
    proc, _ = run_cli(tmp_path, counting_loop(stop_by_condition=False, scan=False), {"M": np.array(m, np.int64)},
                      "--max-iterations", "50")
    assert proc.returncode == 1, proc.stderr
    assert "did not end within 50 trips" in proc.stderr


@pytest.mark.parametrize("m", [2**31, 2**62])
def test_huge_trip_count_as_scan_length_is_refused_before_allocating(tmp_path, m):
    # The scan output's length is the (saturated) trip count: TensorRT allocates all of it, and so
    # would the simulator; loopc says so instead of allocating 16 GiB
    model = counting_loop(stop_by_condition=True, scan=True)
    feeds = {"M": np.array(m, np.int64), "lim": np.array(7.5, np.float32)}
    proc, _ = run_cli(tmp_path, model, feeds)
    assert proc.returncode == 1, proc.stderr
    assert f"padded to its length {INT32_MAX}" in proc.stderr
    assert "--max-tensor-size" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -- names ------------------------------------------------------------------------------------------

NAMINGS = {
    "distinct": lambda k: f"loop{k}",
    "equal": lambda k: "loop",
    "none": lambda k: "",
    # names that are other nodes' helper layers ("<node>/count") or TensorRT's derived output names
    "helper-like": lambda k: ["a/count", "a", "a/recurrence0", "a_output", "x1", "a.1"][k % 6],
}


def sequential_loops(n: int, naming: str) -> onnx.ModelProto:
    """``n`` Loops one after the other, each ``3 trips: s += 1`` with a scan output, named by ``naming``
    (the Loop and the nodes of its body alike)."""
    name = NAMINGS[naming]
    nodes = []
    for k in range(n):
        body = h.make_graph(
            [h.make_node("Add", ["s", "one"], ["s_next"], name=name(k)),
             h.make_node("Identity", ["c"], ["c_out"], name=name(k)),
             h.make_node("Identity", ["s"], ["scan"], name=name(k))],
            f"body{k}",
            [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
             h.make_tensor_value_info("s", T.FLOAT, [2])],
            [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("s_next", T.FLOAT, [2]),
             h.make_tensor_value_info("scan", T.FLOAT, [2])])
        nodes.append(h.make_node("Loop", ["M", "", f"x{k}"], [f"x{k + 1}", f"scans{k}"], body=body, name=name(k)))
    graph = h.make_graph(
        nodes, "sequential", [h.make_tensor_value_info("x0", T.FLOAT, [2])],
        [h.make_tensor_value_info(f"x{n}", T.FLOAT, [2]), h.make_tensor_value_info(f"scans{n - 1}", T.FLOAT, [3, 2]),
         h.make_tensor_value_info("scans0", T.FLOAT, [3, 2])],
        [h.make_tensor("M", T.INT64, [], [3]), h.make_tensor("one", T.FLOAT, [], [1.0])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def without_node_names(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    stack = [copy.graph]
    while stack:
        for node in stack.pop().node:
            node.name = ""
            stack.extend(a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH)
    return copy


def network_names(network: Any) -> tuple[list[str], list[str]]:
    layers = [network.get_layer(i) for i in range(network.num_layers)]
    tensors = [lay.get_output(j).name for lay in layers for j in range(lay.num_outputs)]
    return [lay.name for lay in layers], tensors


def convert(model: onnx.ModelProto) -> tuple[Any, Any]:
    ir = import_model(model)
    ir.graph = PassManager(default_passes()).run(ir.graph)
    return to_network(ir)


@pytest.mark.parametrize("naming", NAMINGS)
def test_thousand_sequential_loops_have_unique_names_and_match_onnxruntime(naming):
    model = sequential_loops(1000, naming)
    session, network = convert(model)
    assert not session.errors  # TensorRT refused no name ("... as the new name is already in use")
    layers, tensors = network_names(network)
    assert len(set(layers)) == len(layers) and len(set(tensors)) == len(tensors)
    assert not [n for n in layers + tensors if n.startswith("(Unnamed Layer")]
    x = np.array([0.5, -1.0], np.float32)
    got = simulate(network, {"x0": x})
    # onnxruntime refuses equal node names in one graph; names do not change what a model computes
    want = onnxruntime_outputs(without_node_names(model), {"x0": x})
    assert sorted(got) == sorted(want)
    for name, expected in want.items():
        np.testing.assert_array_equal(got[name], expected, err_msg=name)


def test_names_are_deterministic_and_start_with_the_node_name():
    first = network_names(convert(sequential_loops(12, "helper-like"))[1])
    second = network_names(convert(sequential_loops(12, "helper-like"))[1])
    assert first == second
    layers = first[0]
    # every layer of the loop named "a/count" (the frontend names loops <node>__<n>) starts with it
    assert any(n.startswith("a/count__") and n.endswith("/trip_count") for n in layers)
    # the Adds named "a" (trips 1 and 7) and "a.1" (trips 5 and 11), in order: a name taken gets the first free .N
    assert [n for n in layers if re.fullmatch(r"a(\.\d+)*", n)] == ["a", "a.1", "a.2", "a.1.1"]


def test_sequential_loops_with_colliding_names_build():
    # TensorRT's builder accepts the network (names checked above; building 1,000 loops takes minutes)
    model = sequential_loops(24, "helper-like")
    ir = import_model(model)
    x = np.array([0.5, -1.0], np.float32)
    ir.graph = PassManager(default_passes()).run(ir.graph)
    network, got = build_and_simulate(ir, {"x0": x})
    np.testing.assert_array_equal(got["x24"], x + 3 * 24)


def test_output_named_like_an_input_is_refused():
    graph = h.make_graph([], "passthrough", [h.make_tensor_value_info("x", T.FLOAT, [2])],
                         [h.make_tensor_value_info("x", T.FLOAT, [2])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    with pytest.raises(BackendError, match="output 'x' has the name of an input"):
        to_network(import_model(model))


# -- TensorRT's refusals, by node ---------------------------------------------------------------------

F32, I64 = np.dtype(np.float32), np.dtype(np.int64)


def ir_const(graph: Graph, name: str, array: Any) -> Value:
    array = np.asarray(array)
    value = Value(name, array.dtype, tuple(array.shape))
    graph.add(Node("Constant", [], [value], {"value": array}, name=name))
    return value


def test_reshape_to_another_element_count_names_the_node():
    # TensorRT only logs this, and only when a shape is asked for: it surfaced later as
    # "RuntimeError: Could not get tensor shape" from whichever layer came next
    x = Value("x", F32, (3,))
    main = Graph("main", [x])
    shape = ir_const(main, "target", np.array([2], np.int64))
    reshaped, doubled = Value("reshaped", F32, None), Value("doubled", F32, None)
    main.add(Node("Reshape", [x, shape], [reshaped], name="squash", origin="node 'squash' (Reshape, opset 17)"))
    main.add(Node("Add", [reshaped, reshaped], [doubled], name="after"))
    main.set_outputs([doubled])
    with pytest.raises(BackendError) as caught:
        to_network(Model(main))
    assert (caught.value.node, caught.value.op, caught.value.opset) == ("squash", "Reshape", 17)
    assert "TensorRT rejected the Reshape layer" in str(caught.value) and "Reshaping [3] to [2]" in str(caught.value)
    assert "/_src/" not in str(caught.value)  # TensorRT's source location is not the user's business


def test_matmul_of_scalars_inside_a_loop_names_the_node():
    a = Value("a", F32, ())
    main = Graph("main", [a])
    body = Graph("body")
    state, product = Value("s", F32, ()), Value("p", F32, ())
    body.add(Node("MatMul", [state, a], [product], name="dot", origin="node 'dot' (MatMul, opset 17)"))
    trips = ir_const(main, "trips", np.array(2, np.int64))
    result = Value("result", F32, ())
    main.add(Loop(body, trip_count=trips, recurrences=[Recurrence(state, a, product)],
                  loop_outputs=[LoopOutput("last", state, result)], name="loop"))
    main.set_outputs([result])
    with pytest.raises(BackendError) as caught:
        to_network(Model(main))
    assert caught.value.node == "dot" and "TensorRT rejected the MatMul layer" in str(caught.value)


def test_a_carried_value_whose_shape_changes_otherwise_is_refused_by_name(tmp_path):
    # grows through a Relu between two Concats: no pass can make it a concatenated output
    body = h.make_graph(
        [h.make_node("Concat", ["c", "a"], ["c1"], axis=0), h.make_node("Relu", ["c1"], ["r"]),
         h.make_node("Concat", ["r", "a"], ["c2"], axis=0), h.make_node("Identity", ["cond"], ["cond_out"])], "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond", T.BOOL, []),
         h.make_tensor_value_info("c", T.FLOAT, [None])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("c2", T.FLOAT, [None])])
    graph = h.make_graph([h.make_node("Loop", ["M", "", "c0"], ["c_final"], body=body, name="grow")], "g",
                         [h.make_tensor_value_info("c0", T.FLOAT, [2])],
                         [h.make_tensor_value_info("c_final", T.FLOAT, [None])],
                         [h.make_tensor("M", T.INT64, [], [3]), h.make_tensor("a", T.FLOAT, [1], [1.0])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    proc, _ = run_cli(tmp_path, model, {"c0": np.zeros(2, np.float32)})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("loopc: error: node 'grow' (Loop, opset 17): carried value 'c' has shape [2] when "
                                  "the loop starts and [4] after a trip"), proc.stderr


def test_folded_bfloat16_constant_matches_onnxruntime():
    # Cast(k, BFLOAT16) folds to an ml_dtypes bfloat16 array, which TensorRT's add_constant refused
    # ("Could not implicitly convert NumPy data type"); k's values are not exact in bfloat16
    graph = h.make_graph(
        [h.make_node("Cast", ["k"], ["kb"], to=T.BFLOAT16), h.make_node("Cast", ["x"], ["xb"], to=T.BFLOAT16),
         h.make_node("Concat", ["xb", "kb"], ["yb"], axis=0), h.make_node("Cast", ["yb"], ["y"], to=T.FLOAT)], "bf16",
        [h.make_tensor_value_info("x", T.FLOAT, [3])], [h.make_tensor_value_info("y", T.FLOAT, [6])],
        [h.make_tensor("k", T.FLOAT, [3], [1.3, -2.2, 3.01])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    ir = import_model(model)
    ir.graph = PassManager(default_passes()).run(ir.graph)
    assert any(n.op == "Constant" and n.attrs["value"].dtype.name == "bfloat16" for n in ir.graph.nodes)
    x = np.array([1.0, 2.5, -3.0], np.float32)
    _, got = build_and_simulate(ir, {"x": x})
    np.testing.assert_array_equal(got["y"], onnxruntime_outputs(model, {"x": x})["y"])


def test_cumsum_without_its_axis_names_the_node():
    x = Value("x", F32, (3,))
    main = Graph("main", [x])
    y = Value("y", F32, (3,))
    main.add(Node("CumSum", [x, None], [y], name="running", origin="node 'running' (CumSum, opset 17)"))
    main.set_outputs([y])
    with pytest.raises(BackendError, match="needs its axis input") as caught:
        to_network(Model(main))
    assert caught.value.node == "running"


def test_a_missing_required_input_names_the_node():
    x = Value("x", F32, (3,))
    main = Graph("main", [x])
    y = Value("y", F32, (3,))
    main.add(Node("Add", [x, None], [y], name="half_add", origin="node 'half_add' (Add, opset 17)"))
    main.set_outputs([y])
    with pytest.raises(BackendError, match="an input this op needs is missing") as caught:
        to_network(Model(main))
    assert caught.value.node == "half_add"
