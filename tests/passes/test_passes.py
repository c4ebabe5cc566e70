"""Each canonicalization pass on small hand-built loops: what it changes and what it must keep."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.errors import PassError
from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Node, Recurrence, Value, verify
from loopc.passes import DeadCode, GatherToIterator, Invariants, PassManager, TripLimits, default_passes

F32, I64, BOOL = np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)


def const(graph: Graph, name: str, value: object, dtype: np.dtype) -> Value:
    array = np.array(value, dtype=dtype)
    out = Value(name, dtype, array.shape)
    graph.add(Node("Constant", [], [out], {"value": array}))
    return out


def loop_graph(*, unused_carry: bool = False, constant_carry: bool = False, gather: bool = False) -> Graph:
    """sum over rows of x (by Gather(x, i) or an iterator), optionally with extra carries."""
    main = Graph("main")
    x = Value("x", F32, (4, 3))
    main.inputs = [x]
    n = const(main, "n", 4, I64)
    zeros = const(main, "zeros", [0, 0, 0], F32)
    body = Graph("body")
    i = Value("i", I64, ())
    state, nxt = Value("s", F32, (3,)), Value("s_next", F32, (3,))
    iterators = []
    if gather:
        row = Value("row", F32, (3,))
        body.add(Node("Gather", [x, i], [row], {"axis": 0}))
    else:
        row = Value("row", F32, (3,))
        iterators.append(LoopIterator(row, x, 0))
    body.add(Node("Add", [state, row], [nxt]))
    recurrences = [Recurrence(state, zeros, nxt)]
    outputs = [LoopOutput("last", state, Value("total", F32, (3,)))]
    if unused_carry:
        k, k_next = Value("k", F32, (3,)), Value("k_next", F32, (3,))
        body.add(Node("Mul", [k, row], [k_next]))
        recurrences.append(Recurrence(k, zeros, k_next))
    if constant_carry:
        c = Value("c", F32, (3,))
        scaled = Value("scaled", F32, (3,))
        body.add(Node("Mul", [c, row], [scaled]))
        recurrences.append(Recurrence(c, zeros, c))
        outputs.append(LoopOutput("concat", scaled, Value("scaled_all", F32, (4, 3))))
    loop = Loop(body, trip_count=n, counter=i, iterators=iterators, recurrences=recurrences, loop_outputs=outputs)
    main.add(loop)
    main.outputs = [o.result for o in outputs]
    verify(main)
    return main


def the_loop(graph: Graph) -> Loop:
    return next(node for _, node in graph.walk() if isinstance(node, Loop))


def test_dead_code_removes_an_unused_carry_and_the_unused_counter() -> None:
    graph = loop_graph(unused_carry=True)
    result = DeadCode()(graph)
    verify(graph)
    loop = the_loop(graph)
    assert result.stats == {"nodes": 1, "recurrences": 1, "counters": 1}
    assert [r.state.name for r in loop.recurrences] == ["s"]
    assert loop.counter is None
    assert [n.op for n in loop.body.nodes] == ["Add"]


def test_dead_code_keeps_everything_live() -> None:
    graph = loop_graph(gather=True)
    result = DeadCode()(graph)
    assert not result.modified
    assert the_loop(graph).counter is not None  # read by the Gather


def test_invariant_carry_becomes_a_direct_read_of_its_initial_value() -> None:
    graph = loop_graph(constant_carry=True)
    result = Invariants()(graph)
    verify(graph)
    loop = the_loop(graph)
    assert result.stats == {"recurrences": 1}
    mul = next(n for n in loop.body.nodes if n.op == "Mul")
    assert mul.inputs[0] is loop.inputs[-1] or mul.inputs[0].name == "zeros"


def test_gather_by_counter_becomes_an_iterator() -> None:
    graph = loop_graph(gather=True)
    result = GatherToIterator()(graph)
    verify(graph)
    loop = the_loop(graph)
    assert result.stats == {"iterators": 1}
    assert [(it.source.name, it.axis, it.reverse) for it in loop.iterators] == [("x", 0, False)]
    assert all(n.op != "Gather" for n in loop.body.nodes)


def test_pipeline_settles_and_drops_the_counter_after_the_gather_rewrite() -> None:
    graph = loop_graph(gather=True, unused_carry=True)
    manager = PassManager(default_passes())
    graph = manager.run(graph)
    loop = the_loop(graph)
    assert loop.counter is None and len(loop.iterators) == 1 and len(loop.recurrences) == 1
    assert manager.stats["gather-to-iterator.iterators"] == 1


def test_always_true_condition_is_dropped_from_a_counted_loop() -> None:
    graph = loop_graph()
    loop = the_loop(graph)
    true = const(graph, "true", True, BOOL)
    graph.insert_before(graph.nodes[0], [graph.nodes[-1]])  # the constant before the loop
    loop.condition = true
    result = TripLimits()(graph)
    verify(graph)
    assert result.stats == {"conditions_dropped": 1} and loop.condition is None


def test_trip_count_beyond_int32_is_refused() -> None:
    graph = loop_graph()
    loop = the_loop(graph)
    loop.trip_count.producer.attrs["value"] = np.array(2**40, np.int64)
    with pytest.raises(PassError, match="exceeds TensorRT's INT32 limit"):
        TripLimits()(graph)


def test_list_append_then_stack_becomes_a_concatenate_output() -> None:
    """rows = []; for i: h = relu(x[i]); rows.append(h); stack(rows, dim=0) — as PyTorch exports it."""
    main = Graph("main")
    x = Value("x", F32, (4, 3))
    main.inputs = [x]
    n = const(main, "n", 4, I64)
    empty = Value("empty", None, None)
    main.add(Node("SequenceEmpty", [], [empty], {"dtype": 1}))
    body = Graph("body")
    row, h, seq, seq_next = Value("row", F32, (3,)), Value("h", F32, (3,)), Value("seq"), Value("seq_next")
    body.add(Node("Relu", [row], [h]))
    body.add(Node("SequenceInsert", [seq, h], [seq_next]))
    final = Value("final")
    loop = Loop(body, trip_count=n, iterators=[LoopIterator(row, x)], recurrences=[Recurrence(seq, empty, seq_next)],
                loop_outputs=[LoopOutput("last", seq, final)])
    main.add(loop)
    stacked = Value("stacked", F32, None)
    main.add(Node("ConcatFromSequence", [final], [stacked], {"axis": 0, "new_axis": 1}))
    main.outputs = [stacked]
    verify(main)

    graph = PassManager(default_passes()).run(main)

    loop = the_loop(graph)
    assert [(o.kind, o.value.name, o.axis) for o in loop.loop_outputs] == [("concat", "h", 0)]
    assert loop.recurrences == []
    assert [n.op for n in graph.nodes] == ["Constant", "Loop"]
    assert graph.outputs[0] is loop.loop_outputs[0].result


def test_carried_always_true_flag_is_no_while_limit() -> None:
    graph = loop_graph()
    loop = the_loop(graph)
    true = const(graph, "true", True, BOOL)
    graph.insert_before(graph.nodes[0], [graph.nodes[-1]])
    flag, flag_next = Value("flag", BOOL, ()), Value("flag_next", BOOL, ())
    body_true = Value("body_true", BOOL, ())
    loop.body.insert_before(loop.body.nodes[0], [Node("Constant", [], [body_true], {"value": np.array(True)}),
                                                 Node("Identity", [body_true], [flag_next])])
    loop.recurrences.append(Recurrence(flag, true, flag_next))
    loop.condition = flag
    verify(graph)
    graph = PassManager(default_passes()).run(graph)
    loop = the_loop(graph)
    assert loop.condition is None and [r.state.name for r in loop.recurrences] == ["s"]


def growing(trips: int, read_inside: bool) -> Graph:
    """acc = cat([acc, 2*x[i]]) over trips; optionally also reads acc inside the loop."""
    main = Graph("main")
    x = Value("x", F32, (trips, 1, 3))
    main.inputs = [x]
    n = const(main, "n", trips, I64)
    empty = const(main, "empty", np.zeros((0, 3)), F32)
    body = Graph("body")
    row, acc, grown = Value("row", F32, (1, 3)), Value("acc", F32, (None, 3)), Value("grown", F32, (None, 3))
    two = Value("two", F32, ())
    body.add(Node("Constant", [], [two], {"value": np.array(2, np.float32)}))
    piece = Value("piece", F32, (1, 3))
    body.add(Node("Mul", [row, two], [piece]))
    body.add(Node("Concat", [acc, piece], [grown], {"axis": 0}))
    outputs = [LoopOutput("last", acc, Value("result", F32, (None, 3)))]
    if read_inside:
        total = Value("total", F32, ())
        body.add(Node("ReduceSum", [acc], [total], {"keepdims": 0}))
        outputs.append(LoopOutput("concat", total, Value("totals", F32, (trips,))))
    loop = Loop(body, trip_count=n, iterators=[LoopIterator(row, x)], recurrences=[Recurrence(acc, empty, grown)],
                loop_outputs=outputs)
    main.add(loop)
    main.outputs = [o.result for o in outputs]
    verify(main)
    return main


def test_growing_carry_read_by_nothing_else_becomes_a_concatenate_output() -> None:
    graph = PassManager(default_passes()).run(growing(trips=3, read_inside=False))
    loop = the_loop(graph)
    assert loop.recurrences == []
    assert [(o.kind, o.value.name, o.axis) for o in loop.loop_outputs] == [("concat", "piece", 0)]
    assert graph.outputs[0].producer.op == "Reshape"  # the stacked pieces merged back into axis 0


def test_growing_carry_read_inside_with_constant_trips_is_unrolled() -> None:
    graph = PassManager(default_passes()).run(growing(trips=3, read_inside=True))
    assert not any(isinstance(n, Loop) for _, n in graph.walk())
    assert sum(n.op == "Concat" for n in graph.nodes) == 3 + 1  # one per trip, one joining the totals
