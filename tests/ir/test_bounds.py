"""Upper bounds of data-dependent dims, each worked out by hand from the ONNX semantics of the chain."""

from __future__ import annotations

import onnx.parser

from loopc.frontend.onnx import import_model
from loopc.ir import Value
from loopc.ir.bounds import Bounder, dim_bound
from loopc.passes.shape_refinement import ShapeRefinement


def _values(text: str) -> dict[str, Value]:
    graph = import_model(onnx.parser.parse_model(text)).graph
    ShapeRefinement()(graph)  # the ranks the compiler knows when it converts
    return {v.name: v for _, node in graph.walk() for v in node.outputs}


def test_a_score_filter_and_what_follows_it():
    v = _values("""<ir_version: 8, opset_import: ["" : 13]>
        g (float[160,4] boxes, float[160] scores, float t, int64 stop) => (float[N,4] top, float[M] cat, float[K,2] flat) {
            live = Greater(scores, t)
            where = NonZero(live)
            s0 = Constant <value = int64[1] {0}> ()
            index = Squeeze(where, s0)
            kept = Gather <axis = 0> (boxes, index)
            s20 = Constant <value = int64[1] {20}> ()
            top = Slice(kept, s0, s20)
            picked = Gather <axis = 0> (scores, index)
            cat = Concat <axis = 0> (picked, scores)
            two = Constant <value = int64[2] {-1, 2}> ()
            flat = Reshape(top, two)
            k = Constant <value = int64[1] {5}> ()
            best, at = TopK(picked, k)
            one = Constant <value = int64 {1}> ()
            zero = Constant <value = int64 {0}> ()
            steps = Range(zero, stop, one)
        }""")
    b = Bounder()
    assert b.of(v["where"]) == (1, 160)  # NonZero of 160 flags: at most 160 positions
    assert b.of(v["kept"]) == (160, 4)  # as many rows as positions
    assert b.of(v["top"]) == (20, 4)  # a slice [0:20]
    assert b.of(v["cat"]) == (320,)  # 160 + 160
    assert b.of(v["flat"]) == (40, 2)  # 20 * 4 elements in rows of 2
    assert b.of(v["best"]) == (5,)  # TopK's k
    assert dim_bound(v["steps"], 0) is None  # Range to an input has no bound


def test_a_computed_shape_bounds_what_it_sizes():
    """MultiScaleRoIAlign's ONNX form: a zero result sized by Shape(rois)[0], written by ScatterElements."""
    v = _values("""<ir_version: 8, opset_import: ["" : 13]>
        g (float[30] scores) => (float[R,8,7,7] result) {
            t = Constant <value = float {0.5}> ()
            live = Greater(scores, t)
            where = NonZero(live)
            rows = Transpose(where)
            shape = Shape(rows)
            first = Constant <value = int64[1] {0}> ()
            n = Gather <axis = 0> (shape, first)
            rest = Constant <value = int64[3] {8, 7, 7}> ()
            dims = Concat <axis = 0> (n, rest)
            result = ConstantOfShape(dims)
            wide = Expand(result, dims)
            twos = Constant <value = int64[2] {2, 2}> ()
            split_dims = Concat <axis = 0> (n, twos)
            rows4 = Concat <axis = 1> (rows, rows, rows, rows)
            pairs = Reshape(rows4, split_dims)
        }""")
    b = Bounder()
    assert b.of(v["rows"]) == (30, 1)
    assert b.entries(v["dims"]) == (30, 8, 7, 7)
    assert b.of(v["result"]) == (30, 8, 7, 7)
    assert b.of(v["wide"]) == (30, 8, 7, 7)
    # a computed target [n, 2, 2]: n <= 30; the middle 2 is not known to be non-zero, and a 0 would copy
    # the input's 4; the last has no input dim to copy
    assert b.of(v["pairs"]) == (30, 4, 2)


def test_retinanet_candidates_per_level():
    """RetinaNet's ONNX form: GatherND by a NonZero's positions, then TopK with k = min(20, n)."""
    v = _values("""<ir_version: 8, opset_import: ["" : 13]>
        g (float[2304] scores, float t) => (float[K] best) {
            live = Greater(scores, t)
            where = NonZero(live)
            positions = Transpose(where)
            kept = GatherND(scores, positions)
            shape = Shape(kept)
            twenty = Constant <value = int64[1] {20}> ()
            both = Concat <axis = 0> (twenty, shape)
            k0 = ReduceMin <keepdims = 0> (both)
            one = Constant <value = int64[1] {1}> ()
            k = Reshape(k0, one)
            best, at = TopK(kept, k)
        }""")
    b = Bounder()
    assert b.of(v["kept"]) == (2304,)  # positions [n, 1] index one axis of 2304: n values
    assert b.entries(v["k"]) == (20,)  # the minimum is at most the constant, whatever n is
    assert b.of(v["best"]) == (20,)


def test_a_reshape_whose_computed_target_holds_minus_one_is_bounded_by_the_element_count():
    """``boxes.view(B, -1, 4)`` on at most 160 kept rows of [3, 4]: -1 stands for 160 * 3 = 480 boxes, not
    for the input's dim at that axis (160)."""
    v = _values("""<ir_version: 8, opset_import: ["" : 13]>
        g (float[1,160,3,4] x, float[160] scores, float t) => (float[1,N,4] boxes) {
            live = Greater(scores, t)
            where = NonZero(live)
            s0 = Constant <value = int64[1] {0}> ()
            index = Squeeze(where, s0)
            kept = Gather <axis = 1> (x, index)
            shape = Shape(x)
            batch = Gather(shape, s0)
            rest = Constant <value = int64[2] {-1, 4}> ()
            target = Concat <axis = 0> (batch, rest)
            boxes = Reshape(kept, target)
        }""")
    assert Bounder().of(v["boxes"]) == (1, 480, 4)
