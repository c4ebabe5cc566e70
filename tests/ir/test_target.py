"""TensorRT's loop rule as :mod:`loopc.ir.target` states it: which loop nodes and carried values TensorRT cannot
build, and why, and the verifier's ``loop-target`` rule. ``tests/trt/test_loop_shapes.py`` holds the same
shapes against TensorRT's own builder."""

from __future__ import annotations

import onnx.parser
import pytest

from loopc.frontend.onnx import import_model
from loopc.ir import Loop, Model, verify
from loopc.ir.target import illegal_carries, loop_violations, violations
from loopc.ir.verify import VerificationError

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'

#: A body reading row ``i`` of ``x`` by a Slice whose bounds are the counter.
SLICED_ROW = """
        zero = Constant <value = int64[1] {0}> ()
        one = Constant <value = int64[1] {1}> ()
        four = Constant <value = int64[1] {4}> ()
        start = Unsqueeze (i, zero)
        stop = Add (start, one)
        row = Slice (x, start, stop, zero)
        flat = Reshape (row, four)
        acc_next = Add (acc, flat)"""


def loop_model(body: str, carried: str = "float[4] acc", init: str = "float[4] {0, 0, 0, 0}") -> Model:
    """``x`` [6, 4] read by a loop of ``n`` trips carrying ``acc`` (from ``init``); ``body`` defines ``acc_next``."""
    return import_model(onnx.parser.parse_model(f"""{HEADER}
    g (float[6,4] x, int64 n) => ({carried.replace(" acc", " total")}) {{
      acc0 = Constant <value = {init}> ()
      total = Loop (n, , acc0) <body = b (int64 i, bool c, {carried}) => (bool c_out, {carried}_next) {{
        c_out = Constant <value = bool {{1}}> ()
        {body}
      }}>
    }}"""))


def the_loop(model: Model) -> Loop:
    return next(node for _, node in model.graph.structured() if isinstance(node, Loop))


def reasons(model: Model) -> list[str]:
    return [why for _, _, why in violations(model.graph)]


def test_a_slice_whose_start_is_the_counter_is_illegal_and_says_which_operand() -> None:
    (why,) = reasons(loop_model(SLICED_ROW))
    assert why == "it takes its starts from 'start' (computed from the trip counter), which changes between trips"


def test_a_shape_read_of_a_carried_value_is_legal() -> None:
    """In a legal loop every carried value keeps its shape, so its Shape is the same on every trip."""
    model = loop_model("""
        dims = Shape (acc)
        wide = Expand (acc, dims)
        acc_next = Add (wide, acc)""")
    assert reasons(model) == []


def test_a_size_computed_from_a_carried_value_is_illegal() -> None:
    model = loop_model("""
        k = ReduceMax <keepdims = 0> (acc)
        ki = Cast <to = 7> (k)
        zero = Constant <value = int64[1] {0}> ()
        count = Unsqueeze (ki, zero)
        picked = Slice (acc, zero, count, zero)
        s = ReduceSum <keepdims = 1> (picked)
        acc_next = Add (acc, s)""")
    (why,) = reasons(model)
    assert why == "it takes its ends from 'count' (computed from carried value 'acc'), which changes between trips"


def test_a_size_chosen_by_a_conditional_of_the_body_changes_with_what_its_branches_read() -> None:
    model = loop_model("""
        zero_i = Constant <value = int64 {0}> ()
        axis0 = Constant <value = int64[1] {0}> ()
        positive = Greater (i, zero_i)
        picked = If (positive) <
            then_branch = t () => (int64[1] a) { a = Unsqueeze (i, axis0) },
            else_branch = e () => (int64[1] b) { b = Constant <value = int64[1] {1}> () }>
        part = Slice (acc, axis0, picked, axis0)
        s = ReduceSum <keepdims = 1> (part)
        acc_next = Add (acc, s)""")
    (why,) = reasons(model)
    assert why.startswith("it takes its ends from 'picked' (computed from the trip counter)")


def test_a_data_sized_op_on_per_trip_data_is_illegal() -> None:
    model = loop_model("""
        where = NonZero (acc)
        n_found = Shape (where)
        f = Cast <to = 1> (n_found)
        s = ReduceSum <keepdims = 1> (f)
        acc_next = Add (acc, s)""")
    (why,) = reasons(model)
    assert why == "the size of its result follows carried value 'acc', which changes between trips"


def test_a_carried_value_that_grows_is_illegal() -> None:
    model = loop_model("""
        row = Gather <axis = 0> (x, i)
        shape = Constant <value = int64[2] {1, 4}> ()
        piece = Reshape (row, shape)
        acc_next = Concat <axis = 0> (acc, piece)""", carried="float[?,4] acc", init="float[1,4] {0, 0, 0, 0}")
    [(state, why)] = list(illegal_carries(the_loop(model)))
    assert state.name == "acc"
    assert why == "carried value 'acc' grows on every trip (node 'acc_next' (Concat, opset 17) concatenates onto it)"


def test_a_legal_loop_has_no_violations() -> None:
    model = loop_model("""
        row = Gather <axis = 0> (x, i)
        acc_next = Add (acc, row)""")
    assert list(loop_violations(the_loop(model))) == []
    verify(model.graph, legal=True)


def test_the_verifier_names_the_node_by_rule_loop_target_once_loops_must_be_legal() -> None:
    model = loop_model(SLICED_ROW)
    verify(model.graph)  # an illegal loop is well-formed IR: legalization has yet to run
    with pytest.raises(VerificationError) as caught:
        verify(model.graph, after="the passes", legal=True)
    assert caught.value.rule == "loop-target"
    assert "node 'row' (Slice, opset 17)" in str(caught.value)
