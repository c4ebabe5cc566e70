"""The legalize phase end to end: a loop a rule makes legal builds legal and computes what onnxruntime computes;
a loop no rule makes legal is refused with one error that names the node TensorRT cannot build, why, and per
rule why it did not apply, in the words of the rule that should have.

Each model puts its trip count in an input, so that unrolling (the rule of last resort) cannot take over.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from loopc.compiler import optimize
from loopc.errors import PassError
from loopc.ir.target import violations
from tests.passes.alone import assert_matches_onnxruntime, load

#: ``acc += sum(range(start, end))`` on every trip ``i``.
RANGES = """
g (int64 n) => (int64 total) {{
  zero = Constant <value = int64 {{0}}> ()
  total = Loop (n, , zero) <body = b (int64 i, bool c, int64 acc) => (bool c_out, int64 acc_next) {{
    c_out = Constant <value = bool {{1}}> ()
    three = Constant <value = int64 {{3}}> ()
    one = Constant <value = int64 {{1}}> ()
    {bounds}
    r = Range (start, end, one)
    s = ReduceSum <keepdims = 0> (r)
    acc_next = Add (acc, s)
  }}>
}}
"""
#: ``acc += x[k:k+1]`` (``{squeeze}`` drops the axis, or not) with ``k`` from ``{index}``; ``k`` steps by 2 mod 3.
ROWS = """
g (int64 n, float[{rows},2] x) => (float[{width}] total) {{
  zero = Constant <value = int64 {{0}}> ()
  acc0 = Constant <value = float[{width}] {{0, 0}}> ()
  k_last, total = Loop (n, , zero, acc0) <body = b (int64 i, bool c, int64 k, float[{width}] acc)
                                          => (bool c_out, int64 k_next, float[{width}] acc_next) {{
    c_out = Constant <value = bool {{1}}> ()
    axes = Constant <value = int64[1] {{0}}> ()
    one = Constant <value = int64[1] {{1}}> ()
    {index}
    at = Unsqueeze (idx, axes)
    after = Add (at, one)
    row = Slice (x, at, after, axes)
    {squeeze}
    acc_next = Add (acc, picked)
    two = Constant <value = int64 {{2}}> ()
    three = Constant <value = int64 {{3}}> ()
    k_up = Add (k, two)
    k_next = Mod (k_up, three)
  }}>
}}
"""
#: ``acc += x[i:i+1]`` on trip ``i``, in a loop of ``n`` trips or one stopped by the sum reaching 10.
TRIP_ROWS = """
g (int64 n, float[N,2] x) => (float[1,2] total) {{
  go = Constant <value = bool {{1}}> ()
  acc0 = Constant <value = float[1,2] {{0, 0}}> ()
  total = Loop ({count}, go, acc0) <body = b (int64 i, bool c, float[1,2] acc) => (bool c_out, float[1,2] acc_next) {{
    axes = Constant <value = int64[1] {{0}}> ()
    one = Constant <value = int64[1] {{1}}> ()
    at = Unsqueeze (i, axes)
    after = Add (at, one)
    row = Slice (x, at, after, axes)
    acc_next = Add (acc, row)
    {stop}
  }}>
}}
"""
UNTIL_TEN = """s = ReduceSum <keepdims = 0> (acc_next)
    ten = Constant <value = float {10}> ()
    c_out = Less (s, ten)"""
#: ``buf.at[idx + i].set(v, mode="drop")`` on trip ``i``, as jax2onnx writes it (rows of ``idx + i`` below 4 kept).
DROPPING = """
g (int64 n, float[{rows},2] x, int64[3,1] idx, float[3,2] v) => (float[{rows},2] y) {{
  y = Loop (n, , x) <body = b (int64 i, bool c, float[{rows},2] buf) => (bool c_out, float[{rows},2] buf_next) {{
    c_out = Constant <value = bool {{1}}> ()
    four = Constant <value = int64 {{4}}> ()
    one1 = Constant <value = int64[1] {{1}}> ()
    shifted = Add (idx, i)
    ok = Less (shifted, four)
    ok_flat = Squeeze (ok, one1)
    valid = NonZero (ok_flat)
    valid_t = Transpose <perm = [1, 0]> (valid)
    valid_flat = Squeeze (valid_t, one1)
    kept_idx = Gather <axis = 0> (shifted, valid_flat)
    kept_v = Gather <axis = 0> (v, valid_flat)
    buf_next = ScatterND (buf, kept_idx, kept_v)
  }}>
}}
"""
#: A carried value that starts ``[1,3]`` and is ``[2,3]`` after every trip.
STEADY = """
g (int64 n, float[1,3] first, float[1,3] x) => (float[?,3] out) {{
  one = Constant <value = int64 {{1}}> ()
  m = {count}
  out = Loop (m, , first) <body = b (int64 i, bool c, float[?,3] acc) => (bool c_out, float[?,3] acc_next) {{
    c_out = Constant <value = bool {{1}}> ()
    s = ReduceSum <keepdims = 0> (acc)
    pair = Concat <axis = 0> (x, x)
    acc_next = Add (pair, s)
  }}>
}}
"""
#: A carried ``[1,1]`` placeholder that every trip broadcasts to ``x``'s shape before using it.
BROADCAST = """
g (int64 n, float[1,1] first, float[2,3] x) => (float[?,?] out) {{
  out = Loop (n, , first) <body = b (int64 i, bool c, float[?,?] acc) => (bool c_out, float[?,?] acc_next) {{
    c_out = Constant <value = bool {{1}}> ()
    target = Shape (x)
    wide = Expand (acc, target)
    half = Constant <value = float {{0.5}}> ()
    scaled = Mul (wide, half)
    {step}
  }}>
}}
"""
RNG = np.random.default_rng(37)
X32 = RNG.standard_normal((3, 2)).astype(np.float32)


def n(trips: int) -> np.ndarray:
    return np.array(trips, np.int64)


def ranges(bounds: str) -> str:
    return RANGES.format(bounds=bounds)


def rows(rows: int | str, index: str, squeezed: bool = False) -> str:
    squeeze = "picked = Squeeze (row, axes)" if squeezed else "picked = Identity (row)"
    return ROWS.format(rows=rows, width="2" if squeezed else "1,2", index=index, squeeze=squeeze)


LEGALIZED = {
    "fixed-ranges": (ranges("start = Identity (i)\n    end = Add (i, three)"), {"n": n(4)}),
    "row-slices": (rows(3, "s = ReduceSum <keepdims = 0> (acc, one)\n    idx = ArgMax <keepdims = 0> (s)"),
                   {"n": n(4), "x": X32}),
    "squeezed-rows": (rows(3, "idx = Identity (k)", squeezed=True), {"n": n(4), "x": X32}),
    "gather-to-iterator": (TRIP_ROWS.format(count="n", stop="c_out = Identity (c)"), {"n": n(3), "x": X32}),
    "dropped-writes": (DROPPING.format(rows=5), {"n": n(3), "x": RNG.standard_normal((5, 2)).astype(np.float32),
                                                 "idx": np.array([[3], [0], [1]], np.int64),
                                                 "v": RNG.standard_normal((3, 2)).astype(np.float32)}),
    "steady-carries": (STEADY.format(count="Max (n, one)"), {"n": n(3), "first": RNG.standard_normal((1, 3)).astype(np.float32),
                                                             "x": RNG.standard_normal((1, 3)).astype(np.float32)}),
    "broadcast-carries": (BROADCAST.format(step="acc_next = Add (scaled, x)"),
                          {"n": n(3), "first": np.full((1, 1), 2, np.float32),
                           "x": RNG.standard_normal((2, 3)).astype(np.float32)}),
}


@pytest.mark.parametrize("rule", list(LEGALIZED))
def test_the_rule_makes_the_loop_legal_and_it_computes_the_same(rule: str) -> None:
    text, feeds = LEGALIZED[rule]
    proto, model = load(text)
    stats = optimize(model)
    assert any(key.startswith(f"{rule}.") for key in stats), stats
    assert list(violations(model.graph)) == []
    assert_matches_onnxruntime(proto, model, feeds, rtol=1e-5, atol=1e-5)


def test_a_broadcast_carry_is_legal_also_when_the_loop_runs_no_trip() -> None:
    text, feeds = LEGALIZED["broadcast-carries"]
    proto, model = load(text)
    optimize(model)
    assert_matches_onnxruntime(proto, model, {**feeds, "n": n(0)})


#: Per model no rule can make legal: the node TensorRT cannot build, why, and the rule and reason that say why
#: the rewrite made for such a node does not apply to it.
REFUSED = {
    "a Range to the trip counter": (
        ranges("start = Constant <value = int64 {0}> ()\n    end = Identity (i)"),
        "node 'r' (Range", "takes its limit from the trip counter",
        [("fixed-ranges", "the Range's count depends on data")]),
    "a row at a carried index": (
        rows(3, "idx = Identity (k)"), "node 'row' (Slice", "takes its starts from 'at' (computed from carried value 'k')",
        [("row-slices", "the slice's start is not an ArgMax/ArgMin/TopK index"),
         ("squeezed-rows", "the slice's result is not squeezed"),
         ("gather-to-iterator", "its bounds are not [i] and [i + 1] for the trip number i")]),
    "a squeezed row of data of unknown length": (
        rows("N", "idx = Identity (k)", squeezed=True), "node 'row' (Slice", "takes its starts",
        [("row-slices", "the slice's data has no static length along axis 0"),
         ("squeezed-rows", "the slice's data has no static length along a squeezed axis")]),
    "the trip's row in a loop with no trip count": (
        TRIP_ROWS.format(count="", stop=UNTIL_TEN), "node 'row' (Slice", "takes its starts from 'at' (computed "
        "from the trip counter)", [("gather-to-iterator", "but its loop has no trip count")]),
    "writes dropped from data of unknown length": (
        DROPPING.format(rows="N"), "node 'valid' (NonZero", "the size of its result follows 'ok_flat'",
        [("dropped-writes", "the ScatterND's data has no static length along axis 0")]),
    "a carry that changes shape in a loop that may run no trip": (
        STEADY.format(count="Identity (n)"), "carried value 'acc'", "has shape [1,3] when the loop starts and "
        "[2,3] after a trip", [("steady-carries", "the loop may run no trip"),
                               ("broadcast-carries", "carried value 'acc' is not broadcast by one Expand")]),
    "a placeholder read before its broadcast": (
        BROADCAST.format(step="s = ReduceSum <keepdims = 0> (acc)\n    more = Add (scaled, x)\n"
                              "    acc_next = Add (more, s)"),
        "carried value 'acc'", "has shape [1,1] when the loop starts and [2,3] after a trip",
        [("broadcast-carries", "carried value 'acc' is read other than by its Expand")]),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_loop_no_rule_makes_legal_is_refused_with_each_rules_reason(case: str) -> None:
    text, node, why, reasons = REFUSED[case]
    _, model = load(text)
    with pytest.raises(PassError) as refused:
        optimize(model)
    message = str(refused.value)
    place, _, tried = message.partition("no rewrite made it legal")
    assert node in place and why in place
    for rule, reason in reasons:
        said = re.search(rf"\b{rule}: ([^;]*)", tried)
        assert said is not None and reason in said.group(1), (rule, message)
