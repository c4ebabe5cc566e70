"""The pass pipeline on hostile models: deep nesting settles; constant folding checks sizes first.

Deeply nested loops are checked against onnxruntime (ONNX models up to 30 levels, where protobuf's
own nesting limit still lets it read them) and, at 40 levels (past what protobuf reads), against
the loops' semantics restated in plain Python.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from loopc.backend.trt import to_network
from loopc.frontend.onnx import import_model
from loopc.ir import Graph, Loop, LoopOutput, Model, Node, Recurrence, Value, parse
from loopc.ir.interpret import interpret
from loopc.errors import InternalError, LimitError, PassError
from loopc.passes import PassManager, PassResult, default_passes
from loopc.sim import simulate
from tests.backend.trt.oracle import build_and_simulate

F32, I64 = np.dtype(np.float32), np.dtype(np.int64)


def trips_at(level: int) -> int:
    """Trips of the loop at ``level`` (0 is the outermost): a few levels run twice."""
    return 2 if level % 10 in (0, 3) else 1


def nested_onnx(depth: int) -> onnx.ModelProto:
    """``depth`` nested Loops carrying ``x`` and a dead value; each body holds a Constant, an
    Identity and reads its counter (``x += i * 0.5``); the innermost adds ``2 * x`` (outer x)."""

    def body(level: int) -> onnx.GraphProto:
        x_in, d_in, k = f"xs{level}", f"ds{level}", f"k{level}"
        nodes = [h.make_node("Constant", [], [k], value=h.make_tensor(k, T.FLOAT, [], [0.5])),
                 h.make_node("Cast", [f"i{level}"], [f"if{level}"], to=T.FLOAT),
                 h.make_node("Mul", [f"if{level}", k], [f"ik{level}"]),
                 h.make_node("Add", [d_in, k], [f"{d_in}_out"]),
                 h.make_node("Identity", [f"c{level}"], [f"cc{level}"])]
        if level == depth - 1:
            nodes += [h.make_node("Mul", ["x", "two"], ["twice"]), h.make_node("Add", [x_in, "twice"], [f"y{level}"])]
        else:
            trips = "two_i" if trips_at(level + 1) == 2 else "one_i"
            nodes.append(h.make_node("Loop", [trips, "", x_in, d_in], [f"y{level}", f"dd{level}"],
                                     body=body(level + 1), name=f"loop{level + 1}"))
        nodes.append(h.make_node("Add", [f"y{level}", f"ik{level}"], [f"{x_in}_out"]))
        return h.make_graph(
            nodes, f"body{level}",
            [h.make_tensor_value_info(f"i{level}", T.INT64, []), h.make_tensor_value_info(f"c{level}", T.BOOL, []),
             h.make_tensor_value_info(x_in, T.FLOAT, [3]), h.make_tensor_value_info(d_in, T.FLOAT, [])],
            [h.make_tensor_value_info(f"cc{level}", T.BOOL, []), h.make_tensor_value_info(f"{x_in}_out", T.FLOAT, [3]),
             h.make_tensor_value_info(f"{d_in}_out", T.FLOAT, [])])

    graph = h.make_graph(
        [h.make_node("Loop", ["two_i" if trips_at(0) == 2 else "one_i", "", "x", "d"], ["y", "dy"], body=body(0),
                     name="loop0")], "nested",
        [h.make_tensor_value_info("x", T.FLOAT, [3])], [h.make_tensor_value_info("y", T.FLOAT, [3])],
        [h.make_tensor("one_i", T.INT64, [], [1]), h.make_tensor("two_i", T.INT64, [], [2]),
         h.make_tensor("two", T.FLOAT, [], [2.0]), h.make_tensor("d", T.FLOAT, [], [0.0])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def compile_and_simulate(model: Model, inputs: dict[str, np.ndarray], build: bool = True) -> dict[str, np.ndarray]:
    """Passes, TensorRT network, the real builder (unless ``build`` is False), simulator."""
    model.graph = PassManager(default_passes()).run(model.graph)
    if build:
        return build_and_simulate(model, inputs)[1]
    return simulate(to_network(model)[1], inputs)


@pytest.mark.parametrize("depth", [24, 30])
def test_deeply_nested_onnx_loops_match_onnxruntime(depth):
    # was "passes did not settle after 8 rounds": constants left one loop level per round
    model = nested_onnx(depth)
    x = np.array([1.0, -2.0, 0.25], np.float32)
    got = compile_and_simulate(import_model(model), {"x": x})
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    np.testing.assert_allclose(got["y"], want, rtol=1e-6)
    assert not np.allclose(want, x)


def nested_ir(depth: int) -> Graph:
    """The same structure built directly in loopc's IR (ONNX's protobuf cannot nest 40 loops)."""
    x = Value("x", F32, (3,))
    main = Graph("main", [x])

    def const(graph: Graph, name: str, array: np.ndarray) -> Value:
        value = Value(name, array.dtype, tuple(array.shape))
        graph.add(Node("Constant", [], [value], {"value": array}, name=name))
        return value

    def level_loop(graph: Graph, level: int, init: Value, dead: Value) -> tuple[Value, Value]:
        body = Graph(f"body{level}")
        i, state, dstate = Value(f"i{level}", I64, ()), Value(f"xs{level}", F32, (3,)), Value(f"ds{level}", F32, ())
        half = const(body, f"k{level}", np.array(0.5, np.float32))
        i_f = Value(f"if{level}", F32, ())
        body.add(Node("Cast", [i], [i_f], {"to": T.FLOAT}))
        ik = Value(f"ik{level}", F32, ())
        body.add(Node("Mul", [i_f, half], [ik]))
        d_next = Value(f"ds{level}_out", F32, ())
        body.add(Node("Add", [dstate, half], [d_next]))
        if level == depth - 1:
            two = const(body, "two", np.array(2.0, np.float32))
            twice = Value("twice", F32, (3,))
            body.add(Node("Mul", [x, two], [twice]))
            inner = Value(f"y{level}", F32, (3,))
            body.add(Node("Add", [state, twice], [inner]))
        else:
            inner, _ = level_loop(body, level + 1, state, dstate)
        nxt = Value(f"xs{level}_out", F32, (3,))
        body.add(Node("Add", [inner, ik], [nxt]))
        count = const(graph, f"trips{level}", np.array(trips_at(level), np.int64))
        result = Value(f"y{level - 1}" if level else "y", F32, (3,))
        dead_result = Value(f"dd{level - 1}", F32, ())
        graph.add(Loop(body, trip_count=count, counter=i,
                       recurrences=[Recurrence(state, init, nxt), Recurrence(dstate, dead, d_next)],
                       loop_outputs=[LoopOutput("last", state, result), LoopOutput("last", dstate, dead_result)],
                       name=f"loop{level}"))
        return result, dead_result

    zero = const(main, "d", np.array(0.0, np.float32))
    y, _ = level_loop(main, 0, x, zero)
    main.set_outputs([y])
    return main


def nested_reference(depth: int, x: np.ndarray) -> np.ndarray:
    """The ONNX/IR loop semantics of :func:`nested_ir`, written as plain Python loops."""

    def run(level: int, state: np.ndarray) -> np.ndarray:
        for i in range(trips_at(level)):
            inner = state + 2 * x if level == depth - 1 else run(level + 1, state)
            state = inner + np.float32(i * 0.5)
        return state

    return run(0, x)


def test_forty_nested_loops_compile_and_match_the_loop_semantics():
    depth = 40
    x = np.array([1.0, -2.0, 0.25], np.float32)
    # not built: TensorRT's builder takes half a minute on 40 levels (the ONNX tests above build 30)
    got = compile_and_simulate(Model(nested_ir(depth)), {"x": x}, build=False)
    np.testing.assert_allclose(got["y"], nested_reference(depth, x), rtol=1e-6)


def test_deep_nesting_keeps_the_nesting_and_drops_the_dead_carries():
    graph = PassManager(default_passes()).run(nested_ir(40))
    loops = [node for _, node in graph.walk() if isinstance(node, Loop)]
    # the innermost levels run one trip each and are inlined, one level out per round, up to the
    # deepest level that runs twice
    assert len(loops) == 1 + max(level for level in range(40) if trips_at(level) > 1)
    assert all(len(loop.recurrences) == 1 for loop in loops)  # the dead value is gone at every level
    assert all(not any(n.op == "Constant" for n in loop.body.nodes) for loop in loops)  # hoisted all the way


class _Counting:
    """A pass that reports a change on its first ``calls`` calls (one level's worth of work each)."""

    name = "counting"

    def __init__(self, calls: int) -> None:
        self.left = calls

    def __call__(self, graph: Graph) -> PassResult:
        self.left -= 1
        return PassResult(graph, self.left >= 0)


def test_round_cap_grows_with_the_nesting_depth():
    graph = nested_ir(20)
    assert PassManager([_Counting(8 + 19)]).run(graph) is graph  # 8 rounds, plus one per level


def test_a_pass_that_never_settles_is_named():
    with pytest.raises(InternalError, match=r"did not settle after 8 rounds; still changing the graph: \['counting'\]"):
        PassManager([_Counting(10**6)]).run(Graph("empty"))


class _Waiting:
    """A pass that refuses until ``ready`` holds; ``edits``: it removes an input before refusing."""

    name = "waiting"

    def __init__(self, ready: Callable[[Graph], bool], edits: bool = False, waits: bool = True) -> None:
        self.ready, self.edits, self.refusals_wait = ready, edits, waits

    def __call__(self, graph: Graph) -> PassResult:
        if self.ready(graph):
            return PassResult(graph, False)
        if self.edits and graph.inputs:
            graph.set_inputs(graph.inputs[1:])
        raise PassError("not yet")


class _AddingInputs:
    """A pass that adds an input to the graph on each of its first ``calls`` calls."""

    name = "adding"

    def __init__(self, calls: int) -> None:
        self.left = calls

    def __call__(self, graph: Graph) -> PassResult:
        self.left -= 1
        if self.left < 0:
            return PassResult(graph, False)
        graph.add_input(Value(f"x{self.left}", np.dtype(np.float32), ()))
        return PassResult(graph, True)


def test_a_refusal_waits_for_what_a_later_pass_makes_knowable():
    """The refusing pass runs before the pass that enables it, in every round: it is asked again."""
    graph = PassManager([_Waiting(lambda g: len(g.inputs) >= 3), _AddingInputs(3)]).run(Graph("g"))
    assert len(graph.inputs) == 3


def test_a_refusal_is_raised_once_the_graph_settles():
    with pytest.raises(PassError, match="not yet"):
        PassManager([_Waiting(lambda g: len(g.inputs) >= 5), _AddingInputs(3)]).run(Graph("g"))


@pytest.mark.parametrize("edits, waits", [(True, True), (False, False)], ids=["edited-first", "does-not-wait"])
def test_a_refusal_is_raised_at_once_when_it_cannot_wait(edits: bool, waits: bool):
    adding = _AddingInputs(3)
    with pytest.raises(PassError, match="not yet"):
        PassManager([adding, _Waiting(lambda g: False, edits=edits, waits=waits)]).run(Graph("g"))
    assert adding.left == 2  # one round only


# -- carried values that grow ------------------------------------------------------------------------


def vi(name: str, elem: int = T.FLOAT, shape: list | None = None) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


def growing_loop(body_nodes: list[onnx.NodeProto], initializers: list[onnx.TensorProto]) -> onnx.ModelProto:
    """``c = body(c)`` three times from ``c0`` [2]; the body computes ``c2`` from ``c``."""
    body = h.make_graph(body_nodes + [h.make_node("Identity", ["cond"], ["cond_out"])], "body",
                        [vi("i", T.INT64, []), vi("cond", T.BOOL, []), vi("c", T.FLOAT, [None])],
                        [vi("cond_out", T.BOOL, []), vi("c2", T.FLOAT, [None])])
    graph = h.make_graph([h.make_node("Loop", ["M", "", "c0"], ["c_final"], body=body, name="grow")], "g",
                         [vi("c0", T.FLOAT, [2])], [vi("c_final", T.FLOAT, [None])],
                         [h.make_tensor("M", T.INT64, [], [3]), *initializers])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def check_against_onnxruntime(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> None:
    got = compile_and_simulate(import_model(model), inputs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for output, want in zip(session.get_outputs(), session.run(None, inputs)):
        np.testing.assert_array_equal(got[output.name], want, err_msg=output.name)


C0 = {"c0": np.array([0.5, -1.0], np.float32)}
PIECES = [h.make_tensor("a", T.FLOAT, [1], [1.0]), h.make_tensor("b", T.FLOAT, [2], [2.0, 3.0])]


def test_a_value_grown_by_two_concats_is_a_concatenated_output():
    # was an internal error in the simulator ("simulated output has shape (6,), TensorRT declares (3,)")
    check_against_onnxruntime(growing_loop([h.make_node("Concat", ["c", "a"], ["c1"], axis=0),
                                            h.make_node("Concat", ["c1", "b"], ["c2"], axis=0)], PIECES), C0)


def test_a_value_grown_by_one_concat_of_three_inputs_is_a_concatenated_output():
    model = growing_loop([h.make_node("Concat", ["c", "a", "b"], ["c2"], axis=-1)], PIECES)
    check_against_onnxruntime(model, C0)


def test_growth_read_inside_a_body_with_a_nested_loop_is_refused_by_carried_value():
    # c = concat(c, 1); c = concat(c, reduce_sum(inner_loop(c))): the grown value is read by the inner loop
    inner = h.make_graph([h.make_node("Mul", ["d", "two"], ["d2"]), h.make_node("Identity", ["ic"], ["ic_out"])],
                         "inner", [vi("j", T.INT64, []), vi("ic", T.BOOL, []), vi("d", T.FLOAT, [None])],
                         [vi("ic_out", T.BOOL, []), vi("d2", T.FLOAT, [None])])
    model = growing_loop([h.make_node("Concat", ["c", "a"], ["c1"], axis=0),
                          h.make_node("Loop", ["M", "", "c1"], ["r"], body=inner, name="inner"),
                          h.make_node("ReduceSum", ["r"], ["s"], keepdims=1),
                          h.make_node("Concat", ["c1", "s"], ["c2"], axis=0)],
                         [PIECES[0], h.make_tensor("two", T.FLOAT, [], [2.0])])
    with pytest.raises(PassError, match=r"node 'grow' \(Loop, opset 17\): TensorRT cannot build this loop: carried value 'c': grows on every trip"):
        compile_and_simulate(import_model(model), C0)


# -- constant folding checks sizes before computing --------------------------------------------------


def value_shaped(op: str, n: int) -> onnx.ModelProto:
    """``y = x + sum(op(...))`` where ``op`` makes ``n`` elements from small constants."""
    inits = [h.make_tensor("n", T.INT64, [1], [n]), h.make_tensor("half", T.FLOAT, [1], [0.5])]
    made = {
        "ConstantOfShape": h.make_node("ConstantOfShape", ["n"], ["c"], value=h.make_tensor("v", T.FLOAT, [1], [0.5])),
        "Expand": h.make_node("Expand", ["half", "n"], ["c"]),
        "Tile": h.make_node("Tile", ["half", "n"], ["c"]),
        "Range": h.make_node("Range", ["start", "stop", "step"], ["c"]),
    }[op]
    inits += [h.make_tensor("start", T.FLOAT, [], [0.0]), h.make_tensor("stop", T.FLOAT, [], [n / 2**20]),
              h.make_tensor("step", T.FLOAT, [], [2.0**-20])]
    graph = h.make_graph([made, h.make_node("ReduceSum", ["c"], ["total"], keepdims=0),
                          h.make_node("Add", ["total", "x"], ["y"])], "value_shaped",
                         [vi("x", T.FLOAT, [])], [vi("y", T.FLOAT, [])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


OPS = ["ConstantOfShape", "Expand", "Tile", "Range"]


@pytest.mark.parametrize("op", OPS)
def test_folding_a_result_above_the_tensor_limit_is_a_limit_error(op):
    # was a MemoryError (or the machine's memory): the reference evaluator computed 2**40 elements
    graph = import_model(value_shaped(op, 2**40)).graph
    with pytest.raises(LimitError, match=rf"node 'c' \({op}, opset 17\): folding its output 0 \('c'\): shape "
                                         r"\[1099511627776\] \(float32\) would take 4 TiB"):
        PassManager(default_passes()).run(graph)


@pytest.mark.parametrize("op", OPS)
def test_a_result_within_the_limit_but_too_big_to_fold_is_left_to_tensorrt(op):
    model = value_shaped(op, 2**21)
    ir = import_model(model)
    ir.graph = PassManager(default_passes()).run(ir.graph)
    assert [n.op for n in ir.graph.nodes if n.op == op] == [op]  # not folded into a 2**21-element constant
    x = np.array(1.0, np.float32)
    got = build_and_simulate(ir, {"x": x})[1]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got["y"], session.run(None, {"x": x})[0], rtol=1e-4)


def test_concat_from_sequence_with_new_axis_other_than_0_or_1_is_refused():
    # onnxruntime reads new_axis=7 as 1, ONNX's reference evaluator as 0: loopc guessed 0 silently
    body = h.make_graph([h.make_node("Cast", ["i"], ["f"], to=T.FLOAT),
                         h.make_node("Unsqueeze", ["f", "zero"], ["row"]),
                         h.make_node("SequenceInsert", ["seq", "row"], ["seq_next"]),
                         h.make_node("Identity", ["cond"], ["cond_out"])], "body",
                        [vi("i", T.INT64, []), vi("cond", T.BOOL, []),
                         h.make_tensor_sequence_value_info("seq", T.FLOAT, None)],
                        [vi("cond_out", T.BOOL, []), h.make_tensor_sequence_value_info("seq_next", T.FLOAT, None)])
    graph = h.make_graph(
        [h.make_node("SequenceEmpty", [], ["empty"], dtype=T.FLOAT),
         h.make_node("Loop", ["M", "", "empty"], ["seq_final"], body=body, name="collect"),
         h.make_node("ConcatFromSequence", ["seq_final"], ["stacked"], axis=0, new_axis=7, name="stack")],
        "g", [vi("x", T.FLOAT, [])], [vi("stacked", T.FLOAT, None)],
        [h.make_tensor("M", T.INT64, [], [3]), h.make_tensor("zero", T.INT64, [1], [0])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    with pytest.raises(PassError, match=r"node 'stack' \(ConcatFromSequence, opset 17\): new_axis is 7"):
        PassManager(default_passes()).run(import_model(model).graph)


def shape_chain(links: int) -> str:
    """IR text of ``links`` steps ``y_k = Reshape(y_k-1, Shape(y_k-1))`` whose shapes the frontend left unknown:
    each step's shape is known only once the Shape before it is (an FPN's ``Resize(x, sizes=Shape(y))``,
    level after level)."""
    lines = ["graph main(%y0: f32[4,3]) -> (%y" + str(links) + ") {"]
    for k in range(1, links + 1):
        lines.append(f"  %s{k}: i64[2] = Shape(%y{k - 1})")
        lines.append(f"  %y{k}: f32[?,?] = Reshape(%y{k - 1}, %s{k})")
    return "\n".join(lines + ["}"])


def test_shapes_learned_through_a_long_chain_of_shape_arithmetic_settle_in_one_round():
    # was "passes did not settle after 9 rounds; still changing the graph: ['shape-refinement', ...]" on
    # torchvision's Mask R-CNN and Keypoint R-CNN: one Shape folded, one level learned, per round
    graph = parse(shape_chain(12))
    manager = PassManager(default_passes())
    graph = manager.run(graph)
    assert graph.outputs[0].shape == (4, 3)
    assert manager.runs["shape-refinement"] <= 2
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(interpret(graph, {"y0": x})[0], x)  # reshaping to its own shape changes nothing
