"""The IR's text form: ``format(parse(text)) == text`` on hand-written texts of every construct, what each
text means (checked on the parsed objects, by hand), attributes to the bit, large constants through the
side store, every sample and ONNX loop/scan/if node test printed, parsed and printed again (after import
and after the passes) and run against its oracle, and one-line errors for malformed texts."""

from __future__ import annotations

import math
import pathlib
import struct
import tomllib
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopc.compiler import load_ir, optimize
from loopc.errors import LoopcError
from loopc.ir import (
    Graph,
    If,
    Loop,
    LoopIterator,
    LoopOutput,
    Model,
    Node,
    Recurrence,
    Value,
)
from loopc.ir.parser import IRSyntaxError, parse, parse_model
from loopc.ir.printer import dtype_text, format_graph, format_loop, format_model
from tests.onnx_cases import structured_cases

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
F32, I64, BOOL = np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)


def round_trip(text: str, constants: dict[str, np.ndarray] | None = None) -> Graph:
    graph = parse(text, constants)
    assert format_graph(graph, constants={} if constants is not None else None) == text
    return graph


def only_loop(graph: Graph) -> Loop:
    (loop,) = [n for n in graph.nodes if isinstance(n, Loop)]
    return loop


# ------------------------------------------------------------------------------ hand-written texts

RUNNING_SUM = """\
graph main(%x: f32[5,3], %n: i64[]) -> (%total, %partials) {
  %init: f32[3] = Constant() value=f32[3]:[0,0,0]
  %total: f32[3], %partials: f32[?,3] = loop count=%n {
    counter %i: i64[]
    iterator %row: f32[3] = %x[axis 0]
    recurrence %sum: f32[3] = %init -> %next
    %next: f32[3] = Add(%sum, %row)
    last %total = %sum
    concat %partials = %next axis 0
  }
}"""


def test_a_counted_loop_reads_back_with_its_roles() -> None:
    graph = round_trip(RUNNING_SUM)
    x, n = graph.inputs
    loop = only_loop(graph)
    assert (x.name, x.dtype, x.shape, n.dtype, n.shape) == ("x", F32, (5, 3), I64, ())
    assert loop.trip_count is n and loop.condition is None and loop.max_trips is None and not loop.padded
    assert loop.counter is not None and loop.counter.name == "i" and loop.counter.shape == ()
    (it,) = loop.iterators
    assert it.source is x and it.axis == 0 and not it.reverse and it.param.shape == (3,)
    (rec,) = loop.recurrences
    add = loop.body.nodes[0]
    assert rec.init is graph.nodes[0].outputs[0] and rec.next is add.outputs[0]
    assert add.op == "Add" and add.inputs[0] is rec.state and add.inputs[1] is it.param
    total, partials = loop.loop_outputs
    assert (total.kind, total.value, total.result) == ("last", rec.state, graph.outputs[0])
    assert (partials.kind, partials.value, partials.axis) == ("concat", add.outputs[0], 0)
    assert partials.result.shape == (None, 3) and graph.outputs[1] is partials.result
    assert list(loop.body.inputs) == [loop.counter, it.param, rec.state]
    np.testing.assert_array_equal(graph.nodes[0].attrs["value"], np.zeros(3, np.float32))
    assert graph.nodes[0].attrs["value"].dtype == F32


def test_the_printer_writes_a_graph_built_by_hand_as_expected() -> None:
    x, n, init = Value("x", F32, (5, 3)), Value("n", I64, ()), Value("init", F32, (3,))
    i, row, state, nxt = Value("i", I64, ()), Value("row", F32, (3,)), Value("sum", F32, (3,)), Value("next", F32, (3,))
    total, partials = Value("total", F32, (3,)), Value("partials", F32, (None, 3))
    body = Graph("body", nodes=[Node("Add", [state, row], [nxt])])
    loop = Loop(body, trip_count=n, counter=i, iterators=[LoopIterator(row, x)],
                recurrences=[Recurrence(state, init, nxt)],
                loop_outputs=[LoopOutput("last", state, total), LoopOutput("concat", nxt, partials)])
    const = Node("Constant", [], [init], {"value": np.zeros(3, np.float32)})
    graph = Graph("main", [x, n], [total, partials], [const, loop])
    assert format_graph(graph, node_names=False) == RUNNING_SUM
    head = format_loop(loop, 2, node_names=False).splitlines()[0]
    assert head == "  %total: f32[3], %partials: f32[?,3] = loop count=%n {"


WHILE_LOOP = """\
graph "while loop"(%x: f32[4,?], %m: i64[], %go: bool[]) -> (%last, %backwards) {
  %last: f32[4], %backwards: f32[4,?] = loop while=%keep max_trips=%m padded body=step @"the loop" \
from "node 'w' (Loop, opset 13)" {
    iterator %col: f32[4] = %x[axis 1 reverse]
    recurrence %keep: bool[] = %go -> %still
    recurrence %acc: f32[4] = %zero -> %grown
    %grown: f32[4] = Add(%acc, %col) @grow
    %still: bool[] = ReduceMax(%grown, _) keepdims=0
    last %last = %acc axis 2
    reverse %backwards = %grown axis 1
  }
  %zero: f32[4] = Constant() value=f32[4]:[0,-0,0.5,-1.5]
}"""


def test_a_use_before_definition_is_an_error_even_for_a_recurrence_init() -> None:
    with pytest.raises(IRSyntaxError, match=r"line 5, column 31: %zero is not defined"):
        parse(WHILE_LOOP)


WHILE_LOOP_ORDERED = WHILE_LOOP.replace(
    "  %zero: f32[4] = Constant() value=f32[4]:[0,-0,0.5,-1.5]\n}", "}").replace(
    "{\n  %last", "{\n  %zero: f32[4] = Constant() value=f32[4]:[0,-0,0.5,-1.5]\n  %last")


def test_a_while_loop_keeps_condition_max_trips_padding_reversal_axes_names_and_origin() -> None:
    graph = round_trip(WHILE_LOOP_ORDERED)
    assert graph.name == "while loop"
    loop = only_loop(graph)
    x, m, go = graph.inputs
    assert x.shape == (4, None) and loop.trip_count is None and loop.max_trips is m and loop.padded
    assert loop.counter is None and loop.body.name == "step"
    assert loop.name == "the loop" and loop.origin == "node 'w' (Loop, opset 13)"
    (it,) = loop.iterators
    assert it.axis == 1 and it.reverse and it.source is x
    keep, _ = loop.recurrences
    assert keep.init is go and loop.condition is keep.state
    grow, still = loop.body.nodes
    assert grow.name == "grow" and still.name == "still" and still.inputs[1] is None
    assert still.attrs == {"keepdims": 0} and type(still.attrs["keepdims"]) is int
    assert [(o.kind, o.axis) for o in loop.loop_outputs] == [("last", 2), ("reverse", 1)]
    zeros = graph.nodes[0].attrs["value"]
    assert zeros.tolist() == [0.0, 0.0, 0.5, -1.5] and math.copysign(1.0, zeros[1]) == -1.0


CONDITIONALS = """\
model opset=17 source="models/odd \\"name\\".onnx" outputs=["y", "y again"]
graph main(%c: bool[], %x: f32[2], %n: i64[]) -> (%y, %y#2) {
  %y: f32[2] = if %c from "node 'pick' (If, opset 17)" {
    then {
      %t: f32[2] = Neg(%x)
      yield %t
    }
    else other(%p: f32[]) {
      %y#3: f32[2] = loop count=%n {
        recurrence %s: f32[2] = %x -> %s2
        %s2: f32[2] = if %c @inner {
          then named {
            yield %s
          }
          else {
            %z: f32[2] = Abs(%s)
            yield %z
          }
        }
        last %y#3 = %s
      }
      yield %y#3
    }
  }
  %y#2: f32[2] = Neg(%y)
}"""


def test_conditionals_nest_in_loops_and_loops_in_branches_with_a_model_around_them() -> None:
    model = parse_model(CONDITIONALS)
    assert format_model(model) == CONDITIONALS
    assert (model.opset, model.source, model.output_names) == (17, 'models/odd "name".onnx', ["y", "y again"])
    cond = model.graph.nodes[0]
    assert isinstance(cond, If) and cond.inputs[0] is model.graph.inputs[0]
    assert cond.name == "pick" and cond.then_branch.name == "then" and cond.else_branch.name == "other"
    assert cond.else_branch.inputs[0].name == "p" and cond.else_branch.inputs[0].shape == ()
    inner_loop = cond.else_branch.nodes[0]
    assert isinstance(inner_loop, Loop) and inner_loop.recurrences[0].init is model.graph.inputs[1]
    inner_if = inner_loop.body.nodes[0]
    assert isinstance(inner_if, If) and inner_if.name == "inner" and inner_if.then_branch.name == "named"
    assert inner_if.then_branch.outputs[0] is inner_loop.recurrences[0].state
    # three values named y: the text numbers them in the order it mentions them, the IR keeps the names
    assert [v.name for v in model.graph.outputs] == ["y", "y"] and inner_loop.outputs[0].name == "y"
    neg = model.graph.nodes[1]
    assert model.graph.outputs[1] is neg.outputs[0] and neg.inputs[0] is cond.outputs[0]
    assert cond.else_branch.outputs[0] is inner_loop.outputs[0]


PARAMS = ", ".join([
    '%a: f32[1], %b: f16[2], %c: bf16[3], %d: f64[], %e: i64[n], %f: i32[?], %g: i8[...]',
    '%h: u8[0], %i: bool[1,2,3], %j: complex64[batch,"seq len","3","?"], %k: u16[], %l: float8_e4m3fn[2]',
    '%m: ?[2], %n: ?[?,3], %o, %"a b": int4[], %"": "<U5"[2], %"\\"q\\"\\\\\\n\\t": float128[]',
    '%"é#1": i16[], %x.y/z: u64[], %"x:y": u32[], %w: i16[?]',
])
TYPES_AND_NAMES = "graph g(" + PARAMS + """) -> (%a, %"", %o) {
  () = Print(%a)
  %p: f32[1] = Identity(%a)
  %loop: f32[1] = "loop"(%p) @if
  %"ä": f32[1] = "com.example::Op"(%loop, %"a b") "a b"=1 @"weird \\u2028 name"
}"""


def test_element_types_shapes_and_names_of_any_kind_round_trip() -> None:
    graph = round_trip(TYPES_AND_NAMES)
    types = {v.name: (v.dtype, v.shape) for v in graph.inputs}
    assert types["c"] == (np.dtype(ml_dtypes.bfloat16), (3,))
    assert types["j"] == (np.dtype(np.complex64), ("batch", "seq len", "3", "?"))
    assert types["g"] == (np.dtype(np.int8), None) and types["m"] == (None, (2,)) and types["o"] == (None, None)
    assert types["a b"][0] == np.dtype(ml_dtypes.int4) and types[""][0] == np.dtype("<U5")
    assert '"q"\\\n\t' in types and types["é#1"][0] == np.dtype(np.int16)
    assert types["x.y/z"][0] == np.dtype(np.uint64) and types["k"][0] == np.dtype(np.uint16)
    assert types["f"] == (np.dtype(np.int32), (None,))
    printed, ident, keyword, custom = graph.nodes
    assert printed.outputs == () and printed.op == "Print"
    assert keyword.op == "loop" and keyword.name == "if" and ident.name == "p"
    assert custom.op == "com.example::Op" and custom.attrs == {"a b": 1} and custom.name == "weird \u2028 name"


def test_comments_blank_lines_and_missing_names_read_back_in_the_printers_form() -> None:
    text = "; a test graph\n\ngraph g(%x: ?[...]) -> (%y) {   ; one node\n\n  %y: f32[2] = Relu(%x)\n}\n"
    graph = parse(text)
    assert graph.nodes[0].name == "y"  # a node written without @name is named after its first output
    assert graph.inputs[0].dtype is None and graph.inputs[0].shape is None
    assert format_graph(graph) == "graph g(%x) -> (%y) {\n  %y: f32[2] = Relu(%x)\n}"


def test_node_names_can_be_left_out_for_tests_that_compare_structure() -> None:
    graph = parse("graph g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x) @relu_7\n}")
    assert format_graph(graph, node_names=False) == "graph g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x)\n}"


def test_an_onnx_origin_gives_the_default_node_name() -> None:
    text = "graph g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x) from \"node '/relu' (Relu, opset 17)\"\n}"
    assert round_trip(text).nodes[0].name == "/relu"


# ------------------------------------------------------------------------------------ attributes


def attr_round_trip(value: Any, inline_limit: int | None = None) -> Any:
    """``value`` as the attribute of a node, printed, parsed (and printed again, identically)."""
    out = Value("y", F32, (1,))
    graph = Graph("g", [], [out], [Node("Op", [], [out], {"v": value})])
    store: dict[str, np.ndarray] = {}
    text = format_graph(graph, constants=store, inline_limit=inline_limit)
    parsed = parse(text, store)
    assert format_graph(parsed, constants={}, inline_limit=inline_limit) == text
    return parsed.nodes[0].attrs["v"]


def same_bits(got: Any, want: Any) -> bool:
    if isinstance(want, np.ndarray):
        return (isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
                and (got.tobytes() == want.tobytes() if want.dtype.kind != "O" else got.tolist() == want.tolist()))
    if isinstance(want, np.generic):
        return type(got) is type(want) and got.tobytes() == want.tobytes()
    if isinstance(want, float):
        return type(got) is float and struct.pack("<d", got) == struct.pack("<d", want)
    if isinstance(want, (list, tuple)):
        return type(got) is type(want) and len(got) == len(want) and all(map(same_bits, got, want))
    return type(got) is type(want) and got == want


SCALARS = [0, -7, 2**70, True, False, None, 1.0, -0.0, 0.1, 1e-310, 5e-324, 1.7976931348623157e308, math.inf,
           -math.inf, math.nan, struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0], "", "tanh",
           'quote " backslash \\ newline \n tab \t nul \0 bell \a unicode é \u2028 \U0001f600', "\udcff",
           b"", b"\x00\xff\"\\ab", [], [1, 2, 3], [0.5, -0.0], ["a", "b"], [[1], [2, 3]], [b"x"], (), (1,),
           (1, "a", None), np.float32(0.1), np.int64(-3), np.bool_(True), np.float16(np.nan), np.complex64(1 - 2j),
           ml_dtypes.bfloat16(0.1)]


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_attribute_values_round_trip_exactly(value: Any) -> None:
    assert same_bits(attr_round_trip(value), value)


ARRAY_DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int64, np.int32, np.int16, np.int8,
                np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128,
                ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4, ml_dtypes.uint4]
SHAPES = [(), (0,), (2, 0, 3), (1,), (5,), (2, 3), (2, 1, 2, 1)]


def random_array(dtype: Any, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Any bit pattern for floats (NaN payloads, subnormals, infinities included); valid values otherwise."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt in (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)):
        small = ml_dtypes.iinfo(dt)
        return rng.integers(int(small.min), int(small.max) + 1, shape).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    raw = rng.integers(0, 256, int(np.prod(shape, dtype=np.int64)) * dt.itemsize, dtype=np.uint8)
    return raw.view(dt).reshape(shape)


@pytest.mark.parametrize("dtype", ARRAY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_arrays_of_every_dtype_and_shape_round_trip_to_the_bit(dtype: Any) -> None:
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        for _ in range(3):
            array = random_array(dtype, shape, rng)
            assert same_bits(attr_round_trip(array), array), (shape, array)


def test_string_bytes_object_longdouble_and_big_endian_arrays_round_trip() -> None:
    for array in [np.array(["", "a\"b", "é"]), np.array([b"", b"\x00x"]), np.array(["x", b"y", None, 3], dtype=object),
                  np.array([np.longdouble(1) / 3, np.longdouble("1e-4000")]), np.arange(4, dtype=">f4").reshape(2, 2)]:
        got = attr_round_trip(array)
        assert same_bits(got, array), (got, array)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1))
def test_any_float_bits_round_trip(f64_bits: int, f32_bits: int, f16_bits: int) -> None:
    value = struct.unpack("<d", struct.pack("<Q", f64_bits))[0]
    assert same_bits(attr_round_trip(value), value)
    array = np.array([f32_bits], np.uint32).view(np.float32)
    halves = np.array([f16_bits, f16_bits], np.uint16)
    for each in (array, halves.view(np.float16), halves.view(ml_dtypes.bfloat16)):
        assert same_bits(attr_round_trip(each), each)


def test_floats_are_written_short() -> None:
    text = format_graph(Graph("g", [], [], [Node("Op", [], [], {"v": np.array([0.1, 1, -0.0, 1e20, np.inf, -np.inf,
                                                                                 np.nan], np.float32),
                                                              "w": 0.1, "x": 2.0, "b": ml_dtypes.bfloat16(0.1)})]))
    assert "b=bf16:0.1 v=f32[7]:[0.1,1,-0,1e+20,inf,-inf,nan] w=0.1 x=2.0\n" in text


def test_an_attribute_the_text_cannot_hold_is_shown_but_refused_on_reading() -> None:
    text = format_graph(Graph("g", [], [], [Node("Op", [], [], {"g": onnx.GraphProto()}, name="op")]))
    assert 'g=<opaque "GraphProto">' in text
    with pytest.raises(IRSyntaxError, match='line 2, column 15: an attribute of type "GraphProto" has no text form'):
        parse(text)


# ----------------------------------------------------------------------------------- large constants


def constant_graph(*arrays: np.ndarray) -> Graph:
    outs = [Value(f"c{k}", a.dtype, a.shape) for k, a in enumerate(arrays)]
    return Graph("g", [], outs, [Node("Constant", [], [o], {"value": a}) for o, a in zip(outs, arrays)])


def test_large_arrays_are_named_in_the_text_and_kept_in_the_store(tmp_path: pathlib.Path) -> None:
    big, small = np.arange(512 * 512, dtype=np.float32).reshape(512, 512), np.arange(16, dtype=np.int64)
    shared = np.full(17, np.nan, np.float16)
    graph = constant_graph(big, small, shared, shared, np.array(np.datetime64("2020-01-01")))
    store: dict[str, np.ndarray] = {}
    text = format_graph(graph, constants=store)
    assert "value=<f32[512,512] #0>" in text and "value=i64[16]:[0,1,2,3," in text
    assert text.count("value=<f16[17] #1>") == 2 and '<"datetime64[D]"[] #2>' in text  # no literal: stored
    assert sorted(store) == ["0", "1", "2"] and store["0"] is big
    np.savez(tmp_path / "constants.npz", **store)  # type: ignore[arg-type]
    with np.load(tmp_path / "constants.npz") as saved:
        parsed = parse(text, saved)
    assert same_bits(parsed.nodes[0].attrs["value"], big)
    assert parsed.nodes[2].attrs["value"] is parsed.nodes[3].attrs["value"]
    assert format_graph(parsed, constants={}) == text
    assert "<" not in format_graph(constant_graph(big[:3]), inline_limit=None).split("value=")[1][:3]


def test_a_missing_or_different_stored_constant_is_an_error() -> None:
    text = format_graph(constant_graph(np.zeros(20, np.float32)))
    assert "value=<f32[20] #0>" in text
    with pytest.raises(IRSyntaxError, match=r"line 2, column 45: constant #0 is not among the constants"):
        parse(text)
    with pytest.raises(IRSyntaxError, match=r"constant #0 is float64\[20\], the text says float32\[20\]"):
        parse(text, {"0": np.zeros(20)})


# ------------------------------------------------------------------------- samples and ONNX node tests

OPENVINO = {c["name"]: c for c in tomllib.loads((SAMPLES / "openvino" / "cases.toml").read_text())["sample"]}
SAMPLE_PATHS = sorted(SAMPLES.glob("*.onnx")) + sorted((SAMPLES / "openvino").glob("*.xml"))


def assert_same_graph(a: Graph, b: Graph) -> None:
    """Structure compared object by object, independently of the text: values matched by position."""
    seen: dict[int, int] = {}

    def same_value(x: Value | None, y: Value | None) -> None:
        if x is None or y is None:
            assert x is y is None
            return
        assert (x.name, x.dtype, x.shape) == (y.name, y.dtype, y.shape)
        assert seen.setdefault(id(x), id(y)) == id(y), f"{x.name!r} maps to two values"

    def values(xs: Any, ys: Any) -> None:
        assert len(list(xs)) == len(list(ys))
        for x, y in zip(xs, ys):
            same_value(x, y)

    def graphs(g: Graph, h: Graph) -> None:
        assert g.name == h.name and len(g.nodes) == len(h.nodes)
        values(g.inputs, h.inputs)
        for n, m in zip(g.nodes, h.nodes):
            assert (type(n), n.op, n.name, n.origin) == (type(m), m.op, m.name, m.origin)
            assert sorted(n.attrs) == sorted(m.attrs)
            for key in n.attrs:
                assert same_bits(m.attrs[key], n.attrs[key]), (n.name, key)
            values(n.inputs, m.inputs)
            values(n.outputs, m.outputs)
            if isinstance(n, Loop) and isinstance(m, Loop):
                assert n.padded == m.padded
                assert (len(n.iterators), len(n.recurrences)) == (len(m.iterators), len(m.recurrences))
                values([n.trip_count, n.max_trips, n.counter], [m.trip_count, m.max_trips, m.counter])
                for i, j in zip(n.iterators, m.iterators):
                    assert (i.axis, i.reverse) == (j.axis, j.reverse)
                    values([i.param, i.source], [j.param, j.source])
                for r, s in zip(n.recurrences, m.recurrences):
                    values([r.state, r.init], [s.state, s.init])
            for sub, other in zip(n.subgraphs(), m.subgraphs()):
                graphs(sub, other)
            if isinstance(n, Loop) and isinstance(m, Loop):  # body values are known now
                same_value(n.condition, m.condition)
                values([r.next for r in n.recurrences], [r.next for r in m.recurrences])
                for o, p in zip(n.loop_outputs, m.loop_outputs):
                    assert (o.kind, o.axis) == (p.kind, p.axis)
                    values([o.value, o.result], [p.value, p.result])
        values(g.outputs, h.outputs)

    graphs(a, b)


def check_round_trip(model: Model) -> Model:
    store: dict[str, np.ndarray] = {}
    text = format_model(model, constants=store)
    again = parse_model(text, store)
    store_again: dict[str, np.ndarray] = {}
    assert format_model(again, constants=store_again) == text
    assert sorted(store_again) == sorted(store) and all(same_bits(store_again[k], store[k]) for k in store)
    assert (again.opset, again.source, again.output_names) == (model.opset, model.source, model.output_names)
    assert_same_graph(model.graph, again.graph)
    return again


def sample_feeds(path: pathlib.Path) -> dict[str, np.ndarray]:
    case = OPENVINO.get(path.stem, {})
    return dict(np.load(path.parent / case.get("inputs", f"{path.stem}_inputs.npz")))


def oracle(path: pathlib.Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    if path.suffix == ".xml":
        from tests.corpus import openvino_outputs

        return list(openvino_outputs(path, feeds).values())
    import onnxruntime as ort  # type: ignore[import-untyped]

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return list(session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()}))


def assert_computes(model: Model, feeds: dict[str, np.ndarray], want: list[Any], rtol: float, atol: float) -> None:
    interpret = pytest.importorskip("loopc.ir.interpret").interpret
    got = interpret(model.graph, {v.name: feeds[v.name] for v in model.graph.inputs})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("path", SAMPLE_PATHS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_every_sample_round_trips_after_import_and_after_the_passes_and_still_computes(path: pathlib.Path) -> None:
    case = OPENVINO.get(path.stem, {})
    feeds = sample_feeds(path)
    want = oracle(path, feeds)
    rtol, atol = case.get("rtol", 1e-4), case.get("atol", 1e-5)
    model = load_ir(path)
    assert_computes(check_round_trip(model), feeds, want, rtol, atol)
    if "loopc-refuses" in case:
        return
    optimize(model, max_trips=case.get("max-trips"))
    assert_computes(check_round_trip(model), feeds, want, rtol, atol)


NODE_CASES = structured_cases()


def test_the_node_tests_include_loops_scans_and_ifs() -> None:
    names = {c.name for c in NODE_CASES}
    assert {"test_loop11", "test_scan_sum", "test_if", "test_if_seq", "test_lstm_defaults"} <= names


@pytest.mark.parametrize("case", NODE_CASES, ids=lambda c: c.name)
def test_onnx_node_tests_round_trip_and_compute_their_expected_outputs(case: Any) -> None:
    try:
        model = load_ir(case.model)
    except LoopcError as refusal:
        pytest.skip(f"loopc refuses it: {refusal}")
    inputs, expected = case.data_sets[0]
    feeds = {vi.name: x for vi, x in zip(case.model.graph.input, inputs)}
    assert_computes(check_round_trip(model), feeds, expected, 1e-3, 1e-5)
    try:
        optimize(model)
    except LoopcError as refusal:
        pytest.skip(f"the passes refuse it: {refusal}")
    assert_computes(check_round_trip(model), feeds, expected, 1e-3, 1e-5)


# ----------------------------------------------------------------------------------------- errors

def lines(*body: str, head: str = "graph g(%x: f32[2]) -> (%y) {") -> str:
    return "\n".join([head, *body])


LOOP_HEAD = "graph g(%x: f32[2,3]) -> (%y) {"
ERRORS = [
    (lines("  %y: f32[2] = Relu(%z)", "}"), r"line 2, column 21: %z is not defined"),
    (lines("  %y: f32[2] = Relu(%x)", "  %y: f32[2] = Neg(%x)", "}"),
     r"line 3, column 3: %y is already defined at line 2"),
    (lines("}", head="graph g(%x: f33[2]) -> (%x) {"), r"line 1, column 13: unknown element type 'f33'"),
    (lines("}", head="graph g(%x: f32[2) -> (%x) {"),
     r"line 1, column 18: expected ',' or '\]' in the shape, found '\)'"),
    (lines("  %y: f32[2] = Relu(%x)", ""),
     r"line 3, column 1: expected '}' to close the graph 'g' opened at line 1, found end of text"),
    (lines("  %y: f32[2] = Relu(%x)", "}", "}"), r"line 4, column 1: unexpected '}' after the graph's closing '}'"),
    (lines("  %y: f32[2] = Relu(%x", "}"),
     r"line 2, column 23: expected ',' or '\)' in the inputs of Relu, found end of line"),
    (lines("  %y: f32[2] = Relu(%x) axis=", "}"), r"line 2, column 30: expected a value .*found end of line"),
    (lines("  %y: f32[2] = Relu(%x) v=f32[3]:[1,2]", "}"),
     r"line 2, column 27: an array of shape \[3\] has 3 elements, not 2"),
    (lines("  %y: f32[2] = Relu(%x) v=i8[1]:[300]", "}"), r"line 2, column 34: 300 does not fit in int8"),
    (lines("  %y: f32[2] = Relu(%x) mode=constant", "}"), r"line 2, column 30: expected a value .*found 'constant'"),
    (lines('  %y: f32[2] = Relu(%x) from "oops', "}"), r"line 2, column 30: unexpected an unterminated string"),
    (lines("  counter %i: i64[]", "}"), r"line 2, column 3: 'counter' belongs in a loop's body"),
    (lines("  %y: f32[3] = loop {", "    iterator %r: f32[3] = %x[axis 0]", "    %s: f32[3] = Neg(%r)", "  }", "}",
           head=LOOP_HEAD),
     r"line 2, column 3: loop result %y has no 'last', 'concat' or 'reverse' line"),
    (lines("  %y: f32[3] = loop {", "    iterator %r: f32[3] = %s[axis 0]", "    %s: f32[3] = Neg(%r)",
           "    concat %y = %s", "  }", "}", head=LOOP_HEAD),
     r"line 3, column 27: %s is not defined"),
    (lines("  %y: f32[3] = loop {", "    iterator %r: f32[3] = %x[axis 0]", "    concat %y = %r", "  }", "}",
           head="graph g(%x: f32[2,3]) -> (%y, %r) {"),
     r"line 1, column 31: %r \(defined at line 3\) cannot be read here"),
    (lines("  %y: f32[3] = loop {", "    iterator %r: f32[3] = %x[axis 0]", "    concat %y = %nope", "  }", "}",
           head=LOOP_HEAD),
     r"line 4, column 17: %nope is not defined"),
    (lines("  %y: f32[] = if %c {", "    then {", "    }", "  }", "}", head="graph g(%c: bool[]) -> (%y) {"),
     r"line 4, column 5: expected 'yield' and the branch's results before '}'"),
    (lines("  %y: f32[2] = Relu(%x) v=<f32[2] #x>", "}"), r"line 2, column 36: expected the constant's key"),
    (lines('  %y: f32[2] = Relu(%x) v="a\\q"', "}"), r"line 2, column 27: unknown escape"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_malformed_texts_give_one_line_errors_with_line_column_and_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(IRSyntaxError, match=message) as info:
        parse(text)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, LoopcError) and isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"line {info.value.line}, column {info.value.column}: ")


def test_errors_and_the_text_form_name_types_alike() -> None:
    """``type_text`` (in errors) and the printer share one table of short element types."""
    from loopc.ir.core import type_text

    for dtype in (np.uint16, np.int16, np.uint64, np.float16, np.bool_):
        assert type_text(Value("v", np.dtype(dtype), (2,))) == f"{dtype_text(np.dtype(dtype))}[2]"
