"""Upper bounds of data-dependent dims and ranges of elements, each worked out by hand from the ONNX semantics
of the chain."""

from __future__ import annotations

import math

import numpy as np
import onnx.parser
import pytest

from loopc.frontend.onnx import import_model
from loopc.ir import Value
from loopc.ir.bounds import EXP_SLACK, Bounder, dim_bound
from loopc.ir.interpret import interpret
from loopc.ir.parser import parse
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
    # a computed target [n, 2, 2]: n <= 30, and its constant entries are the dims (shape refinement reads them)
    assert b.of(v["pairs"]) == (30, 2, 2)


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


def _ir(text: str) -> dict[str, Value]:
    """Every value of an IR text by name, loop parameters included."""
    graph = parse(text)
    found = {v.name: v for v in graph.inputs}
    for _, node in graph.walk():
        found.update((v.name, v) for v in node.outputs)
        found.update((v.name, v) for sub in node.subgraphs() for v in sub.inputs)
    return found


#: Operands with hand-known ranges: a [-2, 5], b [0.5, 2], c [-1, -1], d [10, 10], e [-1.5, 2.5],
#: n [-4, 7] (int), and inputs with none.
OPERANDS = """
graph main(%free: f32[2,3], %mask: bool[3], %dims: i64[1]) -> (%y) {
  %a: f32[2,3] = Constant() value=f32[2,3]:[-2,0,1,3,4,5]
  %b: f32[3] = Constant() value=f32[3]:[0.5,1,2]
  %c: f32[] = Constant() value=f32[]:[-1]
  %d: f32[1] = Constant() value=f32[1]:[10]
  %e: f32[2] = Constant() value=f32[2]:[-1.5,2.5]
  %n: i64[3] = Constant() value=i64[3]:[-4,2,7]
  %unbounded: f32[2] = Constant() value=f32[2]:[1,inf]
"""


FEEDS = {"free": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32),
         "mask": np.array([True, False, True]), "dims": np.array([3])}


def _range(statements: str) -> tuple[float, float] | None:
    """``%y``'s range; the interpreter's ``%y`` must be in it."""
    text = OPERANDS + statements + "\n}"
    found = Bounder().interval(_ir(text)["y"])
    if found is not None:
        with np.errstate(all="ignore"):
            y, = interpret(parse(text), FEEDS)
        assert ((found[0] <= y) & (y <= found[1])).all(), y
    return found


@pytest.mark.parametrize("statements, expected", [
    ("%y: f32[2,3] = Constant() value=f32[2,3]:[1,nan,2,3,4,5]", None),  # NaN is in no interval
    ("%y: f32[0] = Constant() value=f32[0]:[]", None),
    ("%y: i64[3] = Identity(%n)", (-4, 7)),
], ids=["nan", "empty", "int"])
def test_constants(statements: str, expected: tuple[float, float] | None) -> None:
    assert _range(statements) == expected


@pytest.mark.parametrize("statements, expected", [
    ("%y: f32[3,2] = Transpose(%a) perm=[1,0]", (-2, 5)),
    ("%s: i64[1] = Constant() value=i64[1]:[6]\n%y: f32[6] = Reshape(%a, %s)", (-2, 5)),
    ("%i: i64[1] = Constant() value=i64[1]:[0]\n%y: f32[2,1] = Gather(%a, %i) axis=1", (-2, 5)),
    ("%y: f32[4] = Concat(%b, %d) axis=0", (0.5, 10)),  # either operand's elements
    ("%y: f32[3] = Where(%mask, %b, %d)", (0.5, 10)),
    ("%y: f32[] = ReduceMax(%a) keepdims=0", (-2, 5)),
    # an empty reduction gives ReduceMax's identity, -inf: the input [?] may be empty
    ("%x: f32[?] = Expand(%b, %dims)\n%y: f32[] = ReduceMax(%x) keepdims=0", (-math.inf, 2)),
    ("%x: f32[?] = Expand(%b, %dims)\n%y: f32[] = ReduceMin(%x) keepdims=0", (0.5, math.inf)),
    ("%y: f32[2,3] = Relu(%a)", (0, 5)),
    ("%y: f32[2,3] = Abs(%a)", (0, 5)),
    ("%y: f32[2] = Abs(%e)", (0, 2.5)),
], ids=["transpose", "reshape", "gather", "concat", "where", "reducemax", "reducemax-maybe-empty",
        "reducemin-maybe-empty", "relu", "abs", "abs-both-signs"])
def test_data_movement_keeps_the_range(statements: str, expected: tuple[float, float]) -> None:
    assert _range(statements) == expected


@pytest.mark.parametrize("statements, expected", [
    ("%y: f32[2,3] = Add(%a, %b)", (-1.5, 7)),
    ("%y: f32[2,3] = Sub(%a, %b)", (-4, 4.5)),
    ("%y: f32[2,3] = Mul(%a, %b)", (-4, 10)),  # corners -2*2 and 5*2
    ("%y: f32[2,3] = Div(%a, %b)", (-4, 10)),  # corners -2/0.5 and 5/0.5
    ("%y: f32[2,3] = Neg(%a)", (-5, 2)),
    ("%y: f32[2,3] = Max(%a, %c)", (-1, 5)),
    ("%y: f32[2,3] = Min(%a, %b)", (-2, 2)),
    ("%y: f32[2,3] = Clip(%a, %c)", (-1, 5)),  # no max: no clamp above
    ("%y: f32[2,3] = Clip(%a, _, %b)", (-2, 2)),
    ("%y: f32[2] = Ceil(%e)", (-1, 3)),
    ("%y: f32[2] = Floor(%e)", (-2, 2)),
    ("%y: f32[2] = Round(%e)", (-2, 2)),  # halves to even
    ("%q: f32[2] = Constant() value=f32[2]:[0.25,4]\n%y: f32[2] = Sqrt(%q)", (0.5, 2)),
    ("%z: f32[] = Constant() value=f32[]:[0]\n%y: f32[] = Exp(%z)", (1 - EXP_SLACK, 1 + EXP_SLACK)),
    ("%y: f32[2,3] = Sigmoid(%a)", (0, 1)),
    ("%y: f32[2,3] = Tanh(%a)", (-1, 1)),
    ("%y: f32[2,3] = Softmax(%a)", (0, 1)),
    ("%y: f32[2,3] = Sigmoid(%free)", (0, 1)),  # whatever the operand
    ("%y: f32[2,3] = Max(%free, %c)", (-1, math.inf)),  # an operand with no range is any number
    ("%y: f32[2,3] = Clip(%free, %c, %d)", (-1, 10)),
    ("%two: i64[] = Constant() value=i64[]:[2]\n%y: i64[3] = Div(%n, %two)", (-2, 4)),  # -2 .. 3.5 widened
], ids=["add", "sub", "mul", "div", "neg", "max", "min", "clip-min", "clip-max", "ceil", "floor", "round", "sqrt",
        "exp", "sigmoid", "tanh", "softmax", "sigmoid-of-input", "max-with-unknown", "clip-unknown",
        "int-div"])
def test_arithmetic(statements: str, expected: tuple[float, float]) -> None:
    assert _range(statements) == expected


@pytest.mark.parametrize("statements", [
    "%y: f32[3] = Div(%b, %e)",  # a divisor range holding 0
    "%y: f32[2] = Mul(%unbounded, %e)",  # 0 * inf is NaN
    "%y: f32[2,3] = Sqrt(%a)",  # a negative operand
    "%y: f32[2,3] = Max(%free, %free)",  # any number
    "%y: f32[2,3] = Add(%free, %a)",
    "%y: f32[2,3] = Clip(%free, %c, %free)",  # at least -1, at most any number: nothing
    "%y: i64[2] = Cast(%unbounded) to=7",  # an unbounded float has no integer
    "%y: u8[3] = Cast(%n) to=2",  # -4 wraps to 252
    "%m: i64[1] = Constant() value=i64[1]:[-9223372036854775808]\n%y: i64[1] = Neg(%m)",  # wraps to itself
    "%m: i32[1] = Constant() value=i32[1]:[2000000000]\n%y: i32[1] = Add(%m, %m)",  # wraps
], ids=["div-by-range-with-0", "mul-inf", "sqrt-negative", "max-of-unknowns", "add-to-unknown", "clip-by-unknown",
        "cast-unbounded", "cast-wraps", "neg-int-min", "add-wraps"])
def test_what_could_leave_a_range_has_none(statements: str) -> None:
    assert _range(statements) is None


def test_float_ends_are_rounded_outward_to_the_result_type() -> None:
    """2**24 + 2 + 1 is a tie in f32, rounded to the even 2**24 + 4: the exact sum is no bound of it."""
    text = ("%m: {t}[] = Constant() value={t}[]:[16777218]\n%one: {t}[] = Constant() value={t}[]:[1]\n"
            "%y: {t}[] = Add(%m, %one)")
    assert np.float32(16777218) + np.float32(1) == 16777220
    assert _range(text.format(t="f32")) == (16777218, 16777220)
    assert _range(text.format(t="f64")) == (16777219, 16777219)
    big = ("%m: f32[] = Constant() value=f32[]:[3e38]\n%two: f32[] = Constant() value=f32[]:[2]\n"
           "%y: f32[] = Mul(%m, %two)")
    assert _range(big) == (float(np.finfo(np.float32).max), math.inf)  # f32 overflows to inf


@pytest.mark.parametrize("statements, expected", [
    ("%y: i64[2] = Cast(%e) to=7", (-1, 2)),  # truncated toward zero
    ("%y: f32[3] = Cast(%n) to=1", (-4, 7)),
    ("%y: bool[2,3] = Cast(%free) to=9", (0, 1)),
    ("%y: i64[3] = Cast(%mask) to=7", (0, 1)),  # from bool, whatever the input
], ids=["float-to-int", "int-to-float", "to-bool", "from-bool"])
def test_casts(statements: str, expected: tuple[float, float]) -> None:
    assert _range(statements) == expected


@pytest.mark.parametrize("statements, expected", [
    ("%y: i64[2] = Shape(%a)", (0, 3)),
    ("%y: i64[] = Size(%a)", (0, 6)),
    ("%y: i64[2] = ArgMax(%a) axis=1 keepdims=0", (0, 2)),
    ("%k: i64[1] = Constant() value=i64[1]:[2]\n%v: f32[2,2], %y: i64[2,2] = TopK(%a, %k) axis=1", (0, 2)),
    ("%k: i64[1] = Constant() value=i64[1]:[2]\n%y: f32[2,2], %i: i64[2,2] = TopK(%a, %k) axis=1", (-2, 5)),
    ("%y: i64[2,?] = NonZero(%a)", (0, 2)),  # positions along dims of 2 and 3
    ("%x: f32[?] = Expand(%b, %dims)\n%y: i64[1] = Shape(%x)", None),
    ("%s: i64[] = Constant() value=i64[]:[1]\n%l: i64[] = Constant() value=i64[]:[5]\n"
     "%y: i64[?] = Range(%s, %l, %s)", (1, 4)),
    ("%s: f32[] = Constant() value=f32[]:[1]\n%l: f32[] = Constant() value=f32[]:[5]\n"
     "%y: f32[?] = Range(%s, %l, %s)", None),  # a float Range may round past its limit
], ids=["shape", "size", "argmax", "topk-indices", "topk-values", "nonzero", "shape-unbounded", "range-int",
        "range-float"])
def test_positions_and_counts(statements: str, expected: tuple[float, float] | None) -> None:
    assert _range(statements) == expected


def test_entries_fall_back_to_the_top_of_the_range() -> None:
    """Rounded up: 3 bounds a float entry of at most 2.5, and its truncation by a Cast. A range reaching below 0
    could hold a Reshape's -1, which bounds nothing."""
    v = _ir(OPERANDS + """
      %top: f32[] = ReduceMax(%b) keepdims=0
      %positive: f32[2] = Relu(%e)
      %y: i64[2] = Cast(%positive) to=7
      %up: f32[2] = Ceil(%e)
      %x: f32[?] = Expand(%b, %dims)
    }""")
    b = Bounder()
    assert b.entries(v["top"]) == (2,)
    assert b.entries(v["positive"]) == (3, 3)  # [0, 2.5]
    assert b.entries(v["y"]) == (3, 3)  # through the Cast rule to its operand's range
    assert b.entries(v["up"]) is None  # [-1, 3]
    assert b.entries(v["x"]) is None  # a length not known


LOOP = """
graph main(%n: i64[]) -> (%stacked, %total, %top, %seen) {
  %x: f32[4,3] = Constant() value=f32[4,3]:[0,1,2,3,4,5,6,7,8,9,10,11]
  %zero: f32[3] = Constant() value=f32[3]:[0,0,0]
  %trips: i64[] = Constant() value=i64[]:[4]
  %minus: f32[3] = Constant() value=f32[3]:[-1,-1,-1]
  %stacked: f32[?,3], %total: f32[3], %top: f32[3], %seen: f32[3] = loop count=%COUNT {
    counter %i: i64[]
    iterator %row: f32[3] = %x[axis 0]
    recurrence %sum: f32[3] = %zero -> %next
    recurrence %best: f32[3] = %zero -> %next_best
    recurrence %last_row: f32[3] = %minus -> %row
    %next: f32[3] = Add(%sum, %row)
    %next_best: f32[3] = Max(%best, %row)
    %scaled: f32[3] = Mul(%row, %row)
    %at: i64[] = Identity(%i)
    concat %stacked = %scaled axis 0
    last %total = %sum
    last %top = %best
    last %seen = %last_row
  }
}"""


def test_loop_parameters() -> None:
    """The counter of 4 trips is in [0, 3]; a row of x is in x's [0, 11]; a running maximum from 0 stays in
    [0, 11], a state set to each row from -1 in [-1, 11]; a sum's state grows with no bound known here."""
    v = _ir(LOOP.replace("%COUNT", "%trips"))
    b = Bounder()
    assert b.interval(v["i"]) == (0, 3)
    assert b.interval(v["row"]) == (0, 11)
    assert b.interval(v["stacked"]) == (0, 121)
    assert b.interval(v["sum"]) is None and b.interval(v["total"]) is None
    assert b.interval(v["best"]) == b.interval(v["top"]) == (0, 11)
    assert b.interval(v["last_row"]) == b.interval(v["seen"]) == (-1, 11)
    assert Bounder().interval(_ir(LOOP.replace("%COUNT", "%n"))["i"]) == (0, math.inf)


CLIPPED_BOXES = """
graph main(%boxes: f32[3,4], %masks: f32[3,1,28,28]) -> (%sizes_all) {
  %zero: f32[] = Constant() value=f32[]:[0]
  %width: f32[] = Constant() value=f32[]:[64]
  %one: f32[] = Constant() value=f32[]:[1]
  %low: f32[3,4] = Max(%boxes, %zero)
  %clipped: f32[3,4] = Min(%low, %width)
  %c0: i64[1] = Constant() value=i64[1]:[0]
  %c1: i64[1] = Constant() value=i64[1]:[1]
  %c2: i64[1] = Constant() value=i64[1]:[2]
  %c3: i64[1] = Constant() value=i64[1]:[3]
  %c4: i64[1] = Constant() value=i64[1]:[4]
  %x1: f32[3,1] = Slice(%clipped, %c0, %c1, %c1)
  %y1: f32[3,1] = Slice(%clipped, %c1, %c2, %c1)
  %x2: f32[3,1] = Slice(%clipped, %c2, %c3, %c1)
  %y2: f32[3,1] = Slice(%clipped, %c3, %c4, %c1)
  %dy: f32[3,1] = Sub(%y2, %y1)
  %dx: f32[3,1] = Sub(%x2, %x1)
  %hc: f32[3,1] = Clip(%dy, %one)
  %wc: f32[3,1] = Clip(%dx, %one)
  %h_all: f32[3,1] = Ceil(%hc)
  %w_all: f32[3,1] = Ceil(%wc)
  %heights: f32[3] = Squeeze(%h_all, %c1)
  %widths: f32[3] = Squeeze(%w_all, %c1)
  %trips: i64[] = Constant() value=i64[]:[3]
  %sizes_all: i64[3,4] = loop count=%trips {
    counter %i: i64[]
    iterator %w: f32[] = %widths[axis 0]
    %h: f32[] = Gather(%heights, %i) axis=0
    %hi: i64[] = Cast(%h) to=7
    %wi: i64[] = Cast(%w) to=7
    %h1: i64[1] = Unsqueeze(%hi, %c0)
    %w1: i64[1] = Unsqueeze(%wi, %c0)
    %head: i64[2] = Shape(%masks) start=0 end=2
    %sizes: i64[4] = Concat(%head, %h1, %w1) axis=0
    concat %sizes_all = %sizes axis 0
  }
}"""


def test_a_resize_size_from_a_clipped_box_is_at_most_the_image() -> None:
    """torchvision's mask pasting as exported to ONNX: boxes clipped to [0, 64], a height Ceil(Clip(y2 - y1,
    min=1)) read at the loop's counter and a width iterated, cast and joined to the masks' [K, 1] into a
    Resize's sizes."""
    v = _ir(CLIPPED_BOXES)
    b = Bounder()
    assert b.interval(v["dy"]) == (-64, 64)
    assert b.interval(v["h"]) == (1, 64)
    assert b.interval(v["w"]) == (1, 64)
    assert b.entries(v["sizes"]) == (3, 1, 64, 64)
    graph = parse(CLIPPED_BOXES)
    boxes = np.random.default_rng(0).uniform(-20, 90, (3, 4)).astype(np.float32)
    sizes, = interpret(graph, {"boxes": boxes, "masks": np.zeros((3, 1, 28, 28), np.float32)})
    assert (sizes[:, 2:] <= 64).all() and (sizes[:, 2:] >= 1).all()  # the interpreter agrees


def test_a_shape_vector_with_unknown_entries_bounds_the_others() -> None:
    """Keypoint R-CNN's sizes: the heatmaps' count comes from a Shape of unknown dims, the roi's size from a
    clipped box; a Concat of them still bounds the entries it knows."""
    text = CLIPPED_BOXES.replace("%masks: f32[3,1,28,28]", "%masks: f32[?,1,28,28]").replace(
        "%head: i64[2] = Shape(%masks) start=0 end=2",
        "%full: i64[4] = Shape(%masks)\n    %head: i64[2] = Slice(%full, %c0, %c2)")
    assert Bounder().entries(_ir(text)["sizes"]) == (None, None, 64, 64)
