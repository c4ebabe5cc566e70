"""GrowingConcat alone: ``acc = cat([acc, piece])`` read by nothing else becomes a concatenated output.

Each model grows ``acc`` over ``n`` trips from rows of ``x``; onnxruntime runs the growing loop itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import Loop
from loopc.passes import GrowingConcat
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

#: ``{init}`` is ``acc``'s initial value (an input or a Constant), ``{grow}`` the body nodes making
#: ``acc_next`` from ``acc`` and the trip's pieces ``a = 2 * x[i:i+1]`` and ``b = -x[i:i+1]``.
GROWING = """
g (int64 n, float[5,3] x, float[2,3] first, float[3,2] column) => (float[K,{width}] grown{extra_output}) {{
  {init_node}
  grown{extra_result} = Loop (n, , {init}) <body = body (int64 i, bool c, float[{rows},{width}] acc)
                                       => (bool c_out, float[{rows},{width}] acc_next{extra_body}) {{
    c_out = Constant <value = bool {{1}}> ()
    zero = Constant <value = int64[1] {{0}}> ()
    ii = Unsqueeze(i, zero)
    row = Gather <axis = 0> (x, ii)
    two = Constant <value = float {{2}}> ()
    a = Mul(row, two)
    b = Neg(row)
    {grow}
  }}>
}}
"""
X = np.arange(15, dtype=np.float32).reshape(5, 3) - 7
FIRST = np.array([[9, 8, 7], [6, 5, 4]], np.float32)
COLUMN = np.array([[1, 2], [3, 4], [5, 6]], np.float32)


def model(grow: str, init: str = "empty", *, axis: int = 0, read_inside: bool = False) -> str:
    init_node = {"empty": "empty = Constant <value = float[0,3] {}> ()",
                 "empty_columns": "empty_columns = Constant <value = float[3,0] {}> ()"}.get(init, "")
    return GROWING.format(
        init=init, init_node=init_node, grow=grow, rows="N" if axis == 0 else 3, width=3 if axis == 0 else "N",
        extra_output=", float[T] sums" if read_inside else "", extra_result=", sums" if read_inside else "",
        extra_body=", float total" if read_inside else "",
    )


def feeds(n: int) -> dict[str, np.ndarray]:
    return {"n": np.array(n, np.int64), "x": X, "first": FIRST, "column": COLUMN}


def output_kinds(loop: Loop) -> list[str]:
    return [o.kind for o in loop.loop_outputs]


@pytest.mark.parametrize(("grow", "init"), [
    ("acc_next = Concat <axis = 0> (acc, a)", "empty"),
    ("acc_next = Concat <axis = 0> (acc, a)", "first"),
    ("inner = Concat <axis = 0> (acc, a)\n    acc_next = Concat <axis = 0> (inner, b)", "empty"),
    ("acc_next = Concat <axis = -2> (acc, a, b)", "first"),
], ids=["from an empty constant", "after an initial value", "a chain of two concats", "one concat of three, axis -2"])
@pytest.mark.parametrize("n", [0, 4])
def test_a_value_grown_only_by_concatenation_becomes_a_concatenated_output(grow: str, init: str, n: int) -> None:
    proto, ir = load(model(grow, init))
    assert run_alone(ir, GrowingConcat()) == {"growing-concat.concats": 1}
    (loop,) = loops(ir.graph)
    assert not loop.recurrences and output_kinds(loop) == ["concat"]
    # the initial value goes in front after the loop, unless it is statically empty
    in_front = [node.inputs[0] for node in ir.graph.nodes if node.op == "Concat"]
    assert [v.name for v in in_front if v is not None] == ([] if init == "empty" else [init])
    assert_matches_onnxruntime(proto, ir, feeds(n))


def test_growth_along_columns_is_merged_back_into_that_axis() -> None:
    proto, ir = load(model("piece = Transpose <perm = [1, 0]> (a)\n    acc_next = Concat <axis = 1> (acc, piece)",
                           "empty_columns", axis=1))
    assert run_alone(ir, GrowingConcat()) == {"growing-concat.concats": 1}
    (loop,) = loops(ir.graph)
    assert loop.loop_outputs[0].axis == 1
    assert_matches_onnxruntime(proto, ir, feeds(3))


@pytest.mark.parametrize("grow", [
    "acc_next = Concat <axis = 0> (a, acc)",
    "inner = Concat <axis = 0> (acc, a)\n    acc_next = Concat <axis = 0> (inner, b)\n"
    "    total = ReduceSum <keepdims = 0> (inner)",
    "acc_next = Concat <axis = 0> (acc, a)\n    total = ReduceSum <keepdims = 0> (acc)",
], ids=["prepended pieces are not in trip order", "an intermediate concat read on every trip",
        "the grown value read on every trip"])
def test_a_growth_the_loop_needs_on_every_trip_or_out_of_order_stays(grow: str) -> None:
    proto, ir = load(model(grow, "first", read_inside="total" in grow))
    assert run_alone(ir, GrowingConcat()) == {}
    (loop,) = loops(ir.graph)
    assert len(loop.recurrences) == 1
    assert_matches_onnxruntime(proto, ir, feeds(3))
