"""Loop-carried values that change shape from trip to trip are typed so that every trip fits.

Exporters declare a carried input by what its first trip holds (PyTorch: a list that grows by one
row a trip is ``[0]`` or ``[1, 4]``). Each model here declares such a type; the imported IR must
leave the growing dim unknown, keep the dims every trip has, and the interpreter — which checks
each value against its type as it runs — must agree with onnxruntime. (Run with its graph
optimizations off where a Shape reads a growing value: they fold the Shape by the declared type,
so onnxruntime's optimized answer is the declaration's, not the model's.)
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Loop
from tests.frontend.onnx.helpers import check_against_ort, loops

X = np.arange(4, dtype=np.float32).reshape(1, 4)


def state_shapes(loop: Loop) -> dict[str, tuple[object, ...] | None]:
    """The carried values' types (the condition's aside)."""
    return {rec.state.name: rec.state.shape for rec in loop.recurrences if rec.state.dtype != np.bool_}


def test_a_carried_value_that_grows_has_its_growing_dim_unknown() -> None:
    """acc is declared [1,4] (and its next value [2,4]), as trip 1 sees them; trip 3 carries [3,4]."""
    ir = check_against_ort("""
        <ir_version: 8, opset_import: ["" : 17]>
        grow (float[1,4] x, int64 m) => (float[N,4] out) {
          cond = Constant <value = bool {1}> ()
          out = Loop (m, cond, x) <body = body (int64 i, bool c, float[1,4] acc) => (bool c_out, float[2,4] next) {
              c_out = Identity (c)
              next = Concat <axis = 0> (acc, x)
          }>
        }
    """, {"x": X, "m": np.array(3, np.int64)})
    (loop,) = loops(ir.graph)
    assert state_shapes(loop) == {"acc": (None, 4)}
    assert next(r for r in loop.recurrences if r.state.name == "acc").next.shape == (None, 4)


def test_dims_every_trip_has_stay_and_values_fed_by_a_growing_one_grow_too() -> None:
    """hs keeps [4]. prev carries the previous trip's a: with a's declared [1,4] it looks fixed, and
    only once a's dim is unknown does it show to grow (a second round). ns appends a's row count."""
    ir = check_against_ort("""
        <ir_version: 8, opset_import: ["" : 17]>
        grow (float[1,4] x, float[4] h0, int64[1] n0, int64 m) => (float[4] h, float[N,4] acc, float[P,4] prev,
                                                                    int64[K] n) {
          cond = Constant <value = bool {1}> ()
          h, acc, prev, n = Loop (m, cond, h0, x, x, n0) <body = body (int64 i, bool c, float[4] hs, float[1,4] a,
                                                                        float[1,4] p, int64[1] ns)
                                               => (bool c_out, float[4] h1, float[2,4] a1, float[1,4] p1, int64[2] n1) {
              c_out = Identity (c)
              h1 = Tanh (hs)
              a1 = Concat <axis = 0> (a, x)
              p1 = Identity (a)
              rows = Shape <start = 0, end = 1> (a)
              n1 = Concat <axis = 0> (ns, rows)
          }>
        }
    """, {"x": X, "h0": np.linspace(-1, 1, 4, dtype=np.float32), "n0": np.array([7], np.int64),
          "m": np.array(3, np.int64)}, optimize=False)
    (loop,) = loops(ir.graph)
    assert state_shapes(loop) == {"hs": (4,), "a": (None, 4), "p": (None, 4), "ns": (None,)}


def test_a_growing_value_in_a_nested_loop() -> None:
    """The inner loop's carry grows; the outer loop carries its final value, which grows too. The
    outer carry keeps its 4 columns only because the inner Loop's result gets the dims its initial
    and next values share (ONNX's inference leaves a Loop's results without dims)."""
    ir = check_against_ort("""
        <ir_version: 8, opset_import: ["" : 17]>
        nested (float[1,4] x, int64 m) => (float[N,4] out) {
          cond = Constant <value = bool {1}> ()
          out = Loop (m, cond, x) <body = outer (int64 i, bool c, float[1,4] acc) => (bool c_out, float[2,4] next) {
              c_out = Identity (c)
              two = Constant <value = int64 {2}> ()
              next = Loop (two, c, acc) <body = inner (int64 j, bool d, float[1,4] b) => (bool d_out, float[2,4] b1) {
                  d_out = Identity (d)
                  b1 = Concat <axis = 0> (b, x)
              }>
          }>
        }
    """, {"x": X, "m": np.array(2, np.int64)})
    outer, inner = loops(ir.graph)
    assert state_shapes(outer) == {"acc": (None, 4)}
    assert state_shapes(inner) == {"b": (None, 4)}
