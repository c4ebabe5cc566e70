"""The IR verifier: one IR per rule that breaks exactly that rule (the error names the rule, the node
and what ran last), well-formed IRs that pass, and every sample and ONNX loop conformance model
passing after import and after each pass of the default pipeline."""

from __future__ import annotations

import importlib
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest

from loopc.errors import LoopcError
from loopc.ir import Graph, If, Loop, LoopIterator, LoopOutput, Node, Recurrence, Use, Value, verify
from loopc.ir.loop import OutputKind
from loopc.ir.verify import VerificationError
from tests.onnx_cases import STRUCTURED_CASES, structured_cases

#: The verifier's module (``loopc.ir.verify`` as an attribute is the function).
verify_module = importlib.import_module("loopc.ir.verify")

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
ROOT = pathlib.Path(__file__).resolve().parents[2]


def broken(graph: Graph, rule: str, *fragments: str) -> str:
    """Verify ``graph`` after a named pass; it must fail by ``rule`` with ``fragments`` in the message."""
    with pytest.raises(VerificationError) as caught:
        verify(graph, after="pass demo")
    message = str(caught.value)
    assert caught.value.rule == rule, message
    assert message.startswith(f"IR check failed after pass demo (rule {rule}): "), message
    assert caught.value.after == "pass demo"
    for fragment in fragments:
        assert fragment in message, message
    return message


class RunningSum:
    """``sum = init; for row in x: sum = sum + row``, returning the final sum and every partial sum.

    Tests replace a piece (a value, a role) before calling :meth:`graph` to break one rule.
    """

    def __init__(self) -> None:
        self.x, self.n, self.init = Value("x", F32, (5, 3)), Value("n", I64, ()), Value("init", F32, (3,))
        self.row, self.state, self.next = Value("row", F32, (3,)), Value("sum", F32, (3,)), Value("sum_out", F32, (3,))
        self.total, self.partials = Value("total", F32, (3,)), Value("partials", F32, (5, 3))
        self.axis = 0

    def loop(self, *, body: list[Node] | None = None, **roles: Any) -> Loop:
        nodes = (body or []) + [Node("Add", [self.state, self.row], [self.next], name="add")]
        kw: dict[str, Any] = {
            "trip_count": self.n,
            "iterators": [LoopIterator(self.row, self.x, self.axis)],
            "recurrences": [Recurrence(self.state, self.init, self.next)],
            "loop_outputs": [LoopOutput("last", self.state, self.total),
                             LoopOutput("concat", self.next, self.partials, 0)],
            "name": "loop",
        }
        kw.update(roles)
        return Loop(Graph("body", nodes=nodes), **kw)

    def graph(self, *, before: list[Node] | None = None, after: list[Node] | None = None, **roles: Any) -> Graph:
        """The loop in a graph of its own, between ``before`` and ``after``."""
        return Graph("main", [self.x, self.n, self.init], [self.total, self.partials],
                     nodes=(before or []) + [self.loop(**roles)] + (after or []))


def loop_of(graph: Graph) -> Loop:
    return next(node for node in graph.nodes if isinstance(node, Loop))


# ------------------------------------------------------------------------------ well-formed IRs


def test_well_formed_loop_passes() -> None:
    verify(RunningSum().graph())


def test_what_the_semantics_allows_passes() -> None:
    """Outer invariants as a next value and as a stacked output's value, a body reading a value the
    enclosing graph defined before the loop, a while loop whose condition is a body result, a padded
    while loop bounded by max_trips, and a conditional whose branches yield outer values."""
    s = RunningSum()
    scale, limit = Value("scale", F32, (3,)), Value("limit", I64, ())
    scaled, keep_going, flags = Value("scaled", F32, (3,)), Value("go", BOOL, ()), Value("flags", F32, (5, 3))
    before = [Node("Neg", [s.init], [scale], name="neg"), Node("Identity", [s.n], [limit], name="limit")]
    counter, less = Value("i", I64, ()), Value("less", BOOL, ())
    body = [Node("Mul", [s.row, scale], [scaled], name="mul"), Node("Less", [counter, limit], [less], name="less"),
            Node("Identity", [less], [keep_going], name="go")]
    loop_outputs = [LoopOutput("last", s.state, s.total), LoopOutput("concat", scale, s.partials, 0),
                    LoopOutput("concat", scaled, flags, 0)]
    graph = s.graph(body=body, before=before, trip_count=None, condition=keep_going, counter=counter,
                    max_trips=limit, padded=True, loop_outputs=loop_outputs,
                    recurrences=[Recurrence(s.state, s.init, scale)])
    verify(graph)

    cond, a, b, picked = Value("c", BOOL, ()), Value("a", F32, (3,)), Value("b", F32, (3,)), Value("picked", F32, (3,))
    branch = If(cond, Graph("then", outputs=[a]), Graph("else", outputs=[b]), [picked], name="pick")
    verify(Graph("g", [cond, a, b], [picked], nodes=[branch]))


# ------------------------------------------------------------------------------------- SSA


def test_value_listed_twice_as_a_result() -> None:
    a, b = Value("a", F32, (2,)), Value("b", F32, (1,))
    graph = Graph("g", [a], [b], nodes=[Node("Split", [a], [b, b], {"axis": 0}, name="split")])
    broken(graph, "single-definition", "node 'split' (Split): value 'b' is defined twice")


def test_outer_value_reused_as_a_body_parameter() -> None:
    s = RunningSum()
    graph = s.graph()
    graph.set_inputs([*graph.inputs, s.state])  # the recurrence's state is also a graph input
    broken(graph, "single-definition", "graph 'body': value 'sum' is defined twice")


def test_read_of_a_value_defined_later_in_the_same_graph() -> None:
    a, b, c = Value("a", F32, (1,)), Value("b", F32, (1,)), Value("c", F32, (1,))
    graph = Graph("g", [a], [c], nodes=[Node("Neg", [b], [c], name="first"), Node("Abs", [a], [b], name="second")])
    broken(graph, "scope", "node 'first' (Neg): reads 'b' (the result of node 'second' (Abs)), which is not defined")


def test_read_of_a_value_never_defined() -> None:
    a, b = Value("a", F32, (1,)), Value("b", F32, (1,))
    graph = Graph("g", [a], [b], nodes=[Node("Neg", [Value("ghost", F32, (1,))], [b], name="neg")])
    broken(graph, "scope", "node 'neg' (Neg): reads 'ghost', which is not defined before it")


def test_body_reads_a_value_the_enclosing_graph_defines_after_the_loop() -> None:
    s = RunningSum()
    later, scaled = Value("later", F32, (3,)), Value("scaled", F32, (3,))
    graph = s.graph(body=[Node("Mul", [s.row, later], [scaled], name="mul")],
                    after=[Node("Neg", [s.init], [later], name="neg")])
    broken(graph, "scope", "node 'mul' (Mul): reads 'later' (the result of node 'neg' (Neg))")


def test_body_reads_a_sibling_loops_body_value() -> None:
    first, second = RunningSum(), RunningSum()
    leaked = Value("leaked", F32, (3,))
    one = first.loop(body=[Node("Neg", [first.row], [leaked], name="inside_first")])
    two = second.loop(body=[Node("Add", [second.row, leaked], [Value("y", F32, (3,))], name="reader")],
                      name="second")
    graph = Graph("main", [first.x, first.n, first.init, second.x, second.n, second.init],
                  [first.total, second.total], nodes=[one, two])
    broken(graph, "scope", "node 'reader' (Add): reads 'leaked' (the result of node 'inside_first' (Neg))")


def test_graph_output_never_defined() -> None:
    a = Value("a", F32, (1,))
    graph = Graph("g", [a], [Value("nowhere", F32, (1,))], nodes=[])
    broken(graph, "graph-outputs", "graph 'g': outputs 'nowhere', which it does not define or see")


def test_graph_output_defined_only_inside_a_loop_body() -> None:
    s = RunningSum()
    graph = s.graph()
    graph.set_outputs([s.total, s.next])  # the body's value, not the loop's result
    broken(graph, "graph-outputs", "graph 'main': outputs 'sum_out'")


def test_output_naming_another_producer() -> None:
    a, b = Value("a", F32, (1,)), Value("b", F32, (1,))
    first = Node("Neg", [a], [b], name="first")
    other = Node("Abs", [a], [Value("c", F32, (1,))], name="other")
    b.producer = other
    broken(Graph("g", [a], [b], nodes=[first]), "producer",
           "node 'first' (Neg): output 'b' names another producer (node 'other' (Abs))")


def test_graph_input_naming_a_producer() -> None:
    a, b = Value("a", F32, (1,)), Value("b", F32, (1,))
    stale = Node("Neg", [b], [a], name="stale")  # sets a.producer; the node is in no graph
    assert a.producer is stale
    broken(Graph("g", [a, b], [a], nodes=[]), "producer", "graph 'g': input 'a' names a producer, node 'stale' (Neg)")


# ----------------------------------------------------------------------------------- loops


def test_unbounded_loop() -> None:
    broken(RunningSum().graph(trip_count=None), "loop-bound", "node 'loop' (Loop): has neither a trip count nor")


def test_loop_errors_name_the_source_node() -> None:
    broken(RunningSum().graph(trip_count=None, origin="node 'scan_7' (Scan, opset 16)"), "loop-bound",
           "(rule loop-bound): node 'scan_7' (Scan, opset 16): has neither")


def test_float_trip_count() -> None:
    s = RunningSum()
    s.n = Value("n", F32, ())
    broken(s.graph(), "loop-limits", "node 'loop' (Loop): trip count 'n' is float32, not an integer scalar")


def test_max_trips_that_is_not_a_scalar() -> None:
    s = RunningSum()
    bound = Value("bound", I64, (2,))
    graph = s.graph(max_trips=bound)
    graph.set_inputs([*graph.inputs, bound])
    broken(graph, "loop-limits", "node 'loop' (Loop): max_trips 'bound' is not a scalar (i64[2])")


def test_trip_count_computed_in_the_body() -> None:
    s = RunningSum()
    inner = Value("inner_n", I64, ())
    graph = s.graph(body=[Node("Constant", [], [inner], {"value": np.array(5)}, name="five")], trip_count=inner)
    broken(graph, "role-scope", "node 'loop' (Loop): trip count 'inner_n' is defined in the loop's body")


def test_max_trips_defined_after_the_loop() -> None:
    s = RunningSum()
    bound = Value("bound", I64, ())
    graph = s.graph(max_trips=bound, after=[Node("Identity", [s.n], [bound], name="late")])
    broken(graph, "role-scope", "node 'loop' (Loop): max_trips 'bound' is not defined before the loop")


def test_iterator_source_computed_in_the_body() -> None:
    s = RunningSum()
    inner = Value("inner_x", F32, (5, 3))
    graph = s.graph(body=[Node("Neg", [s.x], [inner], name="neg")],
                    iterators=[LoopIterator(s.row, inner, 0)])
    broken(graph, "role-scope", "iterator 'row': source 'inner_x' is defined in the loop's body")


def test_recurrence_init_computed_in_the_body() -> None:
    s = RunningSum()
    inner = Value("inner_init", F32, (3,))
    graph = s.graph(body=[Node("Neg", [s.row], [inner], name="neg")],
                    recurrences=[Recurrence(s.state, inner, s.next)])
    broken(graph, "role-scope", "recurrence 'sum': init 'inner_init' is defined in the loop's body")


def test_recurrence_next_defined_after_the_loop() -> None:
    s = RunningSum()
    later = Value("later", F32, (3,))
    graph = s.graph(recurrences=[Recurrence(s.state, s.init, later)],
                    after=[Node("Neg", [s.init], [later], name="late")])
    broken(graph, "role-scope", "node 'loop' (Loop): recurrence 'sum': next 'later' is not seen at the body's end")


def test_stacked_output_value_from_a_nested_body() -> None:
    """A concat output may stack an outer invariant, but not a value of a loop nested in its body."""
    outer, inner = RunningSum(), RunningSum()
    nested = inner.loop(name="inner")
    graph = outer.graph(body=[nested],
                        loop_outputs=[LoopOutput("last", outer.state, outer.total),
                                      LoopOutput("concat", inner.next, outer.partials, 0)])
    graph.set_inputs([*graph.inputs, inner.x, inner.n, inner.init])
    broken(graph, "role-scope", "concat output 'partials': value 'sum_out' is not seen at the body's end")


def test_outer_value_as_the_condition() -> None:
    s = RunningSum()
    flag = Value("flag", BOOL, ())
    graph = s.graph(condition=flag)
    graph.set_inputs([*graph.inputs, flag])
    broken(graph, "condition", "node 'loop' (Loop): condition 'flag' is an outer value; it must be computed in "
                               "the body")


def test_condition_from_a_loop_nested_in_the_body() -> None:
    outer, inner = RunningSum(), RunningSum()
    deep = Value("deep", BOOL, ())
    nested = inner.loop(body=[Node("Constant", [], [deep], {"value": np.array(True)}, name="t")], name="inner")
    graph = outer.graph(body=[nested], condition=deep)
    graph.set_inputs([*graph.inputs, inner.x, inner.n, inner.init])
    broken(graph, "condition", "condition 'deep' is not a value the body defines")


def test_condition_that_is_not_bool() -> None:
    s = RunningSum()
    # the state is a float vector: a body parameter, but neither bool nor scalar
    broken(s.graph(condition=s.state), "condition", "node 'loop' (Loop): condition 'sum' is float32, not a bool scalar")


def test_condition_that_is_not_a_scalar() -> None:
    s = RunningSum()
    flags = Value("flags", BOOL, (3,))
    graph = s.graph(body=[Node("Cast", [s.row], [flags], {"to": 9}, name="cast")], condition=flags)
    broken(graph, "condition", "condition 'flags' is not a scalar (bool[3])")


@pytest.mark.parametrize("piece, type_, shown", [
    ("init", (F64, (3,)), "its init 'init' is f64[3]"),
    ("next", (F32, (1, 3)), "its next 'sum_out' is f32[1,3]"),
    ("init", (F32, (4,)), "its init 'init' is f32[4]"),
])
def test_recurrence_types(piece: str, type_: tuple[np.dtype[Any], tuple[int, ...]], shown: str) -> None:
    s = RunningSum()
    value = s.init if piece == "init" else s.next
    value.dtype, value.shape = type_
    if piece == "next":
        s.partials.shape = (5, 1, 3)  # keep the concat output's own rule satisfied
    broken(s.graph(), "recurrence-types", f"node 'loop' (Loop): recurrence 'sum' is f32[3] but {shown}")


def test_recurrence_shapes_with_unknown_dims_are_compatible() -> None:
    s = RunningSum()
    s.state.shape, s.init.shape, s.next.shape = (None,), ("n",), (3,)
    verify(s.graph())


def test_iterator_axis_beyond_the_rank() -> None:
    s = RunningSum()
    s.axis = 2
    broken(s.graph(), "iterator-axis", "node 'loop' (Loop): iterator 'row' slices 'x' (f32[5,3]) on axis 2, "
                                       "outside its rank")


@pytest.mark.parametrize("dtype, shape", [(F32, (5,)), (F64, (3,)), (F32, (3, 1))])
def test_iterator_param_type(dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
    s = RunningSum()
    s.row = Value("row", dtype, shape)
    s.next.shape = None  # the Add's result follows whatever the row is; only the iterator is wrong
    broken(s.graph(), "iterator-type", "node 'loop' (Loop): iterator 'row' is", "but a slice of 'x' (f32[5,3]) on axis 0")


def test_iterator_on_axis_1_takes_columns() -> None:
    s = RunningSum()
    s.axis, s.row = 1, Value("col", F32, (5,))
    s.state.shape = s.init.shape = s.next.shape = s.total.shape = (5,)
    s.partials.shape = (3, 5)
    verify(s.graph())


def test_last_output_of_an_iterator_param() -> None:
    s = RunningSum()
    graph = s.graph(loop_outputs=[LoopOutput("last", s.row, s.total)])
    graph.set_outputs([s.total])
    broken(graph, "last-output", "node 'loop' (Loop): 'last' output 'total' must read a recurrence state, not 'row'")


@pytest.mark.parametrize("kind, axis, shape, shown", [
    ("concat", 2, (5, 3), "stacks on axis 2, outside its rank"),
    ("reverse", -1, (5, 3), "stacks on axis -1, outside its rank"),
    ("concat", 0, (5, 1, 3), "its rank must be one more"),
])
def test_stacked_output_axis(kind: OutputKind, axis: int, shape: tuple[int, ...], shown: str) -> None:
    s = RunningSum()
    s.partials.shape = shape
    graph = s.graph(loop_outputs=[LoopOutput("last", s.state, s.total), LoopOutput(kind, s.next, s.partials, axis)])
    broken(graph, "output-axis", f"node 'loop' (Loop): {kind} output 'partials'", shown)


@pytest.mark.parametrize("which", ["last", "concat"])
def test_output_dtype(which: str) -> None:
    s = RunningSum()
    (s.total if which == "last" else s.partials).dtype = F64
    broken(s.graph(), "output-dtype", f"{which} output", "is float64 but its value")


def test_padded_while_loop_without_max_trips() -> None:
    s = RunningSum()
    flag = Value("flag", BOOL, ())
    graph = s.graph(body=[Node("Constant", [], [flag], {"value": np.array(True)}, name="t")], trip_count=None,
                    condition=flag, padded=True)
    broken(graph, "padded-length", "node 'loop' (Loop): is padded with stacked output(s) ['partials'] and no trip "
                                   "count: it needs max_trips")


def test_padded_loop_with_a_trip_count_needs_no_max_trips() -> None:
    verify(RunningSum().graph(padded=True))


@pytest.mark.parametrize("edit, shown", [
    (lambda loop, s: setattr(loop, "_inputs", [s.n, s.x]), "inputs are not what its roles name: ['init'] missing"),
    (lambda loop, s: setattr(loop, "_outputs", [s.total]), "outputs are not what its roles name: ['partials'] missing"),
    (lambda loop, s: setattr(loop.body, "_inputs", [s.row]), "body inputs are not what its roles name: ['sum'] missing"),
    (lambda loop, s: setattr(loop.body, "_outputs", [s.next, s.state, s.row]),
     "body outputs are not what its roles name: ['row'] too many, ['sum_out'] missing"),
])
def test_operands_that_disagree_with_the_roles(edit: Callable[[Loop, RunningSum], None], shown: str) -> None:
    """What a slip in the loop's own layout of its operands would leave (simulated by writing its private lists)."""
    s = RunningSum()
    graph = s.graph()
    edit(loop_of(graph), s)
    broken(graph, "loop-signature", f"node 'loop' (Loop): {shown}")


# ----------------------------------------------------------------------------- conditionals


def conditional(cond: Value, then_out: list[Value], else_out: list[Value], outputs: list[Value],
                then_inputs: list[Value] | None = None) -> Graph:
    x = Value("x", F32, (3,))
    then_nodes = [Node("Neg", [x], [v], name=f"then_{v.name}") for v in then_out]
    else_nodes = [Node("Abs", [x], [v], name=f"else_{v.name}") for v in else_out]
    node = If(cond, Graph("then", then_inputs or [], then_out, nodes=then_nodes),
              Graph("else", [], else_out, nodes=else_nodes), outputs, name="pick")
    return Graph("g", [cond, x], outputs, nodes=[node])


@pytest.mark.parametrize("cond, shown", [
    (Value("c", F32, ()), "condition 'c' is float32, not a bool scalar"),
    (Value("c", BOOL, (2,)), "condition 'c' is not a scalar (bool[2])"),
])
def test_if_condition(cond: Value, shown: str) -> None:
    graph = conditional(cond, [Value("a", F32, (3,))], [Value("b", F32, (3,))], [Value("y", F32, (3,))])
    broken(graph, "if-condition", f"node 'pick' (If): {shown}")


def test_if_branch_output_count() -> None:
    graph = conditional(Value("c", BOOL, ()), [Value("a", F32, (3,))], [Value("b", F32, (3,)), Value("b2", F32, (3,))],
                        [Value("y", F32, (3,))])
    broken(graph, "if-branches", "node 'pick' (If): branch 'else' has 2 outputs, the node 1")


def test_if_branch_output_dtype() -> None:
    graph = conditional(Value("c", BOOL, ()), [Value("a", F64, (3,))], [Value("b", F32, (3,))],
                        [Value("y", F32, (3,))])
    broken(graph, "if-branches", "node 'pick' (If): branch 'then' yields 'a' as float64 for output 'y' of float32")


def test_if_branch_with_inputs() -> None:
    graph = conditional(Value("c", BOOL, ()), [Value("a", F32, (3,))], [Value("b", F32, (3,))],
                        [Value("y", F32, (3,))], then_inputs=[Value("p", F32, (3,))])
    broken(graph, "if-branches", "node 'pick' (If): branch 'then' takes inputs ['p']; branches take none")


# ------------------------------------------------------------------------------------- uses


def two_reads() -> tuple[Graph, Value, Value, Node, Node]:
    """``b = Neg(a); c = Add(a, b)``: the IR records a's uses (neg, 0), (add, 0) and b's (add, 1)."""
    a, b, c = Value("a", F32, (1,)), Value("b", F32, (1,)), Value("c", F32, (1,))
    neg, add = Node("Neg", [a], [b], name="neg"), Node("Add", [a, b], [c], name="add")
    return Graph("g", [a], [c], nodes=[neg, add]), a, b, neg, add


def test_use_lists_kept_by_the_ir_pass() -> None:
    graph, a, b, neg, add = two_reads()
    assert a.uses() == [Use(neg, 0), Use(add, 0)] and b.uses() == [Use(add, 1)]
    assert graph.outputs[0].uses() == [Use(graph, 0)]
    verify(graph)


def test_dangling_use() -> None:
    graph, a, b, neg, add = two_reads()
    a._uses[Use(Node("Abs", [a], [Value("gone", F32, (1,))], name="removed"), 0)] = None
    broken(graph, "uses", "value 'a' records a use by node 'removed' (Abs), which is not in the model")


def test_unrecorded_read() -> None:
    graph, a, b, neg, add = two_reads()
    del b._uses[Use(add, 1)]
    broken(graph, "uses", "node 'add' (Add): reads 'b' at slot 1, a use 'b' does not record")


def test_use_at_a_slot_that_reads_another_value() -> None:
    graph, a, b, neg, add = two_reads()
    del a._uses[Use(add, 0)]
    a._uses[Use(add, 1)] = None
    broken(graph, "uses", "node 'add' (Add): 'a' records a use at slot 1, where it reads 'b'")


def test_use_lists_kept_by_the_ir_pass_with_loops_and_a_discarded_node_dangles() -> None:
    """The IR's own use lists, loop roles included, pass; a node built in a scratch graph that never
    joins the model still records its read of a model value: a dangling use."""
    s = RunningSum()
    graph = s.graph()
    verify(graph)
    Graph("scratch", nodes=[Node("Neg", [s.x], [Value("scratch_out", F32, (5, 3))], name="scratch_neg")])
    broken(graph, "uses", "value 'x' records a use by node 'scratch_neg' (Neg), which is not in the model")


# ------------------------------------------------------------------------------ real models


def _model_files() -> list[pathlib.Path]:
    files = sorted((ROOT / "samples").glob("*.onnx")) + sorted((ROOT / "samples" / "openvino").glob("*.xml"))
    return files + sorted((ROOT / "tests" / "models").rglob("*.onnx"))


MODEL_FILES = {str(path.relative_to(ROOT)): path for path in _model_files()}
CONFORMANCE = {case.name: case.model for case in structured_cases()}


def _verify_pipeline(model: onnx.ModelProto | pathlib.Path) -> None:
    """Import and verify; then the default passes, which the pass manager verifies after each one."""
    from loopc.compiler import load_ir, optimize

    for max_trips in (None, 64):
        try:
            ir = load_ir(model)
            verify(ir.graph, after="the frontend")
            optimize(ir, max_trips=max_trips)
        except LoopcError as error:  # the model is refused (a VerificationError is not a LoopcError)
            if max_trips is None and "--max-trips" in str(error):
                continue  # a while loop that needs a bound: the pipeline runs again with one
            pytest.skip(f"loopc refuses the model: {error}")
        verify(ir.graph, after="the default passes")
        return


@pytest.mark.parametrize("name", sorted(MODEL_FILES))
def test_sample_models_pass_after_import_and_every_pass(name: str) -> None:
    _verify_pipeline(MODEL_FILES[name])


@pytest.mark.parametrize("name", sorted(CONFORMANCE))
def test_onnx_loop_conformance_models_pass_after_import_and_every_pass(name: str) -> None:
    _verify_pipeline(CONFORMANCE[name])


def test_the_model_lists_are_not_empty() -> None:
    assert len(MODEL_FILES) >= 70 and len(CONFORMANCE) == STRUCTURED_CASES, (len(MODEL_FILES), len(CONFORMANCE))
