"""ShapeRefinement alone: unknown dtypes and dims filled in from ONNX's shape functions, node by node.

The graphs are written as IR text, since loopc's ONNX frontend already knows every shape ONNX's
inference can tell when it imports a model: the pass matters after other passes (and the OpenVINO
frontend) leave values untyped, which is what the text declares. The interpreter checks every value
against its type, so a wrong refinement fails the numeric check as well as the structural one.
"""

from __future__ import annotations

from textwrap import dedent

import numpy as np
import pytest

from loopc.ir import Graph, Loop, Value, parse, verify
from loopc.ir.interpret import interpret
from loopc.passes import ShapeRefinement


def ir(text: str) -> Graph:
    graph = parse(dedent(text).strip())
    verify(graph)
    return graph


def values(graph: Graph) -> dict[str, Value]:
    return {v.name: v for _, node in graph.walk() for v in node.outputs}


def test_a_chain_of_shapes_and_shape_arithmetic_settles_in_one_run() -> None:
    """``a = z.reshape(x.shape)``, ``t = a.T``, ``b = z.reshape(t.shape)``: ``b``'s target is the shape of
    a value whose own shape is learned in the same run."""
    graph = ir("""
        graph main(%x: f32[4,3], %z: f32[12]) -> (%b, %t) {
          %s: i64[2] = Shape(%x)
          %a: f32[...] = Reshape(%z, %s)
          %t: f32[...] = Transpose(%a) perm=[1,0]
          %s2: i64[...] = Shape(%t)
          %b: f32[...] = Reshape(%z, %s2)
        }
    """)
    result = ShapeRefinement()(graph)
    assert result.modified and result.stats == {"values": 4}
    verify(graph)
    found = values(graph)
    assert [found[name].shape for name in ("a", "t", "s2", "b")] == [(4, 3), (3, 4), (2,), (3, 4)]
    assert not ShapeRefinement()(graph).modified  # nothing left to learn
    z = np.arange(12, dtype=np.float32)
    b, t = interpret(graph, {"x": np.zeros((4, 3), np.float32), "z": z})
    np.testing.assert_array_equal(b, z.reshape(3, 4))
    np.testing.assert_array_equal(t, z.reshape(4, 3).T)


def test_values_inside_a_loop_body_are_refined_and_the_loop_itself_is_not() -> None:
    """The walk enters loop bodies (where the frontend's inference often knows nothing); a Loop's own
    results are the loop rules' to type, not a shape function's."""
    graph = ir("""
        graph main(%x: f32[4,6]) -> (%rows) {
          %n: i64[] = Constant() value=i64[]:[4]
          %rows: f32[...] = loop count=%n {
            iterator %row: f32[6] = %x[axis 0]
            %target: i64[2] = Constant() value=i64[2]:[2,-1]
            %r: f32[...] = Reshape(%row, %target)
            %ax: i64[1] = Constant() value=i64[1]:[0]
            %c: f32[...] = ReduceSum(%r, %ax) keepdims=0
            concat %rows = %c axis 0
          }
        }
    """)
    assert ShapeRefinement()(graph).stats == {"values": 2}
    verify(graph)
    found = values(graph)
    assert found["r"].shape == (2, 3) and found["c"].shape == (3,)
    assert found["rows"].shape is None
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    assert loop.loop_outputs[0].value.shape == (3,)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    (rows,) = interpret(graph, {"x": x})
    np.testing.assert_array_equal(rows, x.reshape(4, 2, 3).sum(axis=1))


def test_only_unknowns_are_filled_and_a_known_or_symbolic_dim_is_kept() -> None:
    """``y``'s symbolic N stays N (ONNX's inference names no size for it) while its unknown second dim
    becomes 3; ``w``'s unknown dtype becomes int64 from the Cast, and its shape [?, 3] (a symbolic size
    is kept where it was written, not learned as a name)."""
    graph = ir("""
        graph main(%x: f32[N,3]) -> (%y, %w) {
          %y: f32[N,?] = Relu(%x)
          %w: ?[...] = Cast(%x) to=7
        }
    """)
    assert ShapeRefinement()(graph).stats == {"values": 2}
    verify(graph)
    found = values(graph)
    assert found["y"].shape == ("N", 3)
    assert found["w"].dtype == np.dtype(np.int64) and found["w"].shape == (None, 3)
    x = np.array([[-1.5, 2, 3.25], [4, -5, 6]], np.float32)
    y, w = interpret(graph, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    np.testing.assert_array_equal(w, x.astype(np.int64))


def test_a_size_the_data_decides_stays_unknown() -> None:
    """NonZero's count of entries depends on the values: the shape function says ``[2, ?]``, as the IR does."""
    graph = ir("""
        graph main(%x: f32[4,3]) -> (%where) {
          %where: i64[2,?] = NonZero(%x)
        }
    """)
    assert not ShapeRefinement()(graph).modified
    assert values(graph)["where"].shape == (2, None)
    x = np.array([[0, 1, 0], [2, 0, 0], [0, 0, 3], [0, 0, 0]], np.float32)
    (where,) = interpret(graph, {"x": x})
    np.testing.assert_array_equal(where, [[0, 1, 2], [1, 0, 2]])


def test_a_reshape_target_assembled_from_known_and_unknown_pieces() -> None:
    """``x.reshape(x.shape[0], 1, 0, 4)``: the constant pieces give dims 1 and 4, the 0 copies ``x``'s dim 2;
    the first piece is computed from a value of unknown length and stays unknown."""
    graph = ir("""
        graph main(%x: f32[?,4,2,2], %n: i64[1]) -> (%y) {
          %one: i64[1] = Constant() value=i64[1]:[1]
          %rest: i64[2] = Constant() value=i64[2]:[0,4]
          %target: i64[4] = Concat(%n, %one, %rest) axis=0
          %y: f32[...] = Reshape(%x, %target)
        }
    """)
    assert ShapeRefinement()(graph).modified
    assert values(graph)["y"].shape == (None, 1, 2, 4)
    x = np.arange(48, dtype=np.float32).reshape(3, 4, 2, 2)
    (y,) = interpret(graph, {"x": x, "n": np.array([6], np.int64)})
    np.testing.assert_array_equal(y, x.reshape(6, 1, 2, 4))


def test_a_state_takes_its_initial_dims_when_the_body_keeps_them() -> None:
    """``h`` starts as ``h0`` (2x3) and each trip gives ``tanh(h * row + h)``, which is 2x3 again whenever
    ``h`` is: by induction over the trips ``h`` is always 2x3, and so is the loop's last value of it."""
    graph = ir("""
        graph main(%x: f32[5,3], %h0: f32[2,3]) -> (%hn) {
          %n: i64[] = Constant() value=i64[]:[5]
          %hn: f32[...] = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %h: f32[?,?] = %h0 -> %next
            %scaled: f32[...] = Mul(%h, %row)
            %sum: f32[...] = Add(%scaled, %h)
            %next: f32[...] = Tanh(%sum)
            last %hn = %h
          }
        }
    """)
    assert ShapeRefinement()(graph).modified
    verify(graph)
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    assert loop.recurrences[0].state.shape == (2, 3)
    assert [values(graph)[name].shape for name in ("scaled", "sum", "next", "hn")] == [(2, 3)] * 4
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    h = np.linspace(0.5, -0.5, 6, dtype=np.float32).reshape(2, 3)
    (hn,) = interpret(graph, {"x": x, "h0": h})
    for row in x:
        h = np.tanh(h * row + h)
    np.testing.assert_allclose(hn, h, rtol=1e-6)


def test_a_state_the_body_grows_keeps_its_unknown_dim() -> None:
    """``acc`` starts with one row and each trip appends one: assuming the initial [1, 3] gives the next trip
    [2, 3], so the assumption is dropped, and every value it taught is forgotten with it."""
    graph = ir("""
        graph main(%x: f32[4,3], %first: f32[1,3]) -> (%all) {
          %n: i64[] = Constant() value=i64[]:[4]
          %axes: i64[1] = Constant() value=i64[1]:[0]
          %all: f32[...] = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %acc: f32[?,3] = %first -> %grown
            %piece: f32[...] = Unsqueeze(%row, %axes)
            %grown: f32[...] = Concat(%acc, %piece) axis=0
            last %all = %acc
          }
        }
    """)
    ShapeRefinement()(graph)
    verify(graph)
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    assert loop.recurrences[0].state.shape == (None, 3)
    assert values(graph)["piece"].shape == (1, 3) and values(graph)["grown"].shape == (None, 3)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    first = np.full((1, 3), -1, np.float32)
    (everything,) = interpret(graph, {"x": x, "first": first})
    np.testing.assert_array_equal(everything, np.concatenate([first, x]))


def test_a_constant_of_shape_target_assembled_from_known_and_unknown_pieces() -> None:
    """``zeros(n, 8, 14, 14)`` with ``n`` computed: the known pieces give the last three dims."""
    graph = ir("""
        graph main(%n: i64[1]) -> (%y) {
          %rest: i64[3] = Constant() value=i64[3]:[8,14,14]
          %target: i64[4] = Concat(%n, %rest) axis=0
          %y: f32[...] = ConstantOfShape(%target) value=f32[1]:[0]
        }
    """)
    assert ShapeRefinement()(graph).modified
    assert values(graph)["y"].shape == (None, 8, 14, 14)
    (y,) = interpret(graph, {"n": np.array([2], np.int64)})
    np.testing.assert_array_equal(y, np.zeros((2, 8, 14, 14), np.float32))


def test_a_reshape_target_read_entry_by_entry_from_the_dims_a_shape_reports() -> None:
    """``k.view(x.size(0), x.size(1), 2, 12)`` as exporters write it: TorchScript as ``Unsqueeze(Gather(Shape(x),
    i))`` per entry (here through Casts, as OpenVINO's ShapeOf in i32 gives it), tf2onnx as one ``Gather(Shape(x),
    [0, 1])``. ``x``'s dim 1 is known though its dim 0 is not: the entry it gives is known too, though no fold
    computes the piece that holds it, and the view has one row on axis 1."""
    graph = ir("""
        graph main(%x: f32[?,1,24], %k: f32[?,1,24]) -> (%y, %z) {
          %s: i64[3] = Shape(%x)
          %at0: i64[] = Constant() value=i64[]:[0]
          %at1: i64[] = Constant() value=i64[]:[1]
          %axes: i64[1] = Constant() value=i64[1]:[0]
          %narrow: i32[3] = Cast(%s) to=6
          %d0: i64[] = Gather(%s, %at0) axis=0
          %d1: i32[] = Gather(%narrow, %at1) axis=0
          %wide: i64[] = Cast(%d1) to=7
          %e0: i64[1] = Unsqueeze(%d0, %axes)
          %e1: i64[1] = Unsqueeze(%wide, %axes)
          %rest: i64[2] = Constant() value=i64[2]:[2,12]
          %target: i64[4] = Concat(%e0, %e1, %rest) axis=0
          %y: f32[...] = Reshape(%k, %target)
          %first: i64[2] = Constant() value=i64[2]:[0,1]
          %both: i64[2] = Gather(%s, %first) axis=0
          %target2: i64[4] = Concat(%both, %rest) axis=0
          %z: f32[...] = Reshape(%k, %target2)
        }
    """)
    assert ShapeRefinement()(graph).modified
    verify(graph)
    assert values(graph)["y"].shape == values(graph)["z"].shape == (None, 1, 2, 12)
    k = np.arange(72, dtype=np.float32).reshape(3, 1, 24)
    y, z = interpret(graph, {"x": np.zeros((3, 1, 24), np.float32), "k": k})
    np.testing.assert_array_equal(y, k.reshape(3, 1, 2, 12))
    np.testing.assert_array_equal(z, k.reshape(3, 1, 2, 12))


@pytest.mark.parametrize("span, delta, length", [(1, 1, 1), (5, 2, 3), (0, 1, 0)])
def test_a_range_from_a_start_to_the_start_plus_a_known_dim(span: int, delta: int, length: int) -> None:
    """An attention mask's ``arange(past, past + q.size(2))``: ``past`` is not known when the model is built, but
    the Range counts ``ceil(q.size(2) / delta)`` whatever it is."""
    graph = ir(f"""
        graph main(%past: i64[], %q: f32[?,2,{span},12]) -> (%r) {{
          %s: i64[4] = Shape(%q)
          %at: i64[] = Constant() value=i64[]:[2]
          %n: i64[] = Gather(%s, %at) axis=0
          %end: i64[] = Add(%past, %n)
          %step: i64[] = Constant() value=i64[]:[{delta}]
          %r: i64[...] = Range(%past, %end, %step)
        }}
    """)
    assert ShapeRefinement()(graph).modified
    verify(graph)
    assert values(graph)["r"].shape == (length,)
    (r,) = interpret(graph, {"past": np.array(7, np.int64), "q": np.zeros((1, 2, span, 12), np.float32)})
    np.testing.assert_array_equal(r, np.arange(7, 7 + span, delta))


def test_a_float_range_to_its_start_plus_a_constant_keeps_its_unknown_length() -> None:
    """A float Range's count is rounded arithmetic on its bounds (``0.1 + 0.2 - 0.1`` over 0.1 need not be 2)."""
    graph = ir("""
        graph main(%past: f32[]) -> (%r) {
          %n: f32[] = Constant() value=f32[]:[0.2]
          %end: f32[] = Add(%past, %n)
          %step: f32[] = Constant() value=f32[]:[0.1]
          %r: f32[...] = Range(%past, %end, %step)
        }
    """)
    ShapeRefinement()(graph)
    assert values(graph)["r"].shape in (None, (None,))


def test_a_state_keeps_the_dims_the_body_keeps_while_another_dim_grows() -> None:
    """``h`` gains a column every trip, so its dim 1 changes, but its dim 0 stays 2: assumed alone, that dim
    holds, and so ``g * h.sum(1, keepdim=True)`` keeps ``g`` at 2x3 (which assuming ``h``'s dims all together or
    none at all cannot show)."""
    graph = ir("""
        graph main(%x: f32[4,2], %h0: f32[2,1], %g0: f32[2,3]) -> (%hn, %gn) {
          %n: i64[] = Constant() value=i64[]:[4]
          %axes: i64[1] = Constant() value=i64[1]:[1]
          %hn: f32[...], %gn: f32[...] = loop count=%n {
            iterator %row: f32[2] = %x[axis 0]
            recurrence %h: f32[?,?] = %h0 -> %grown
            recurrence %g: f32[?,?] = %g0 -> %scaled
            %column: f32[...] = Unsqueeze(%row, %axes)
            %grown: f32[...] = Concat(%h, %column) axis=1
            %sums: f32[...] = ReduceSum(%h, %axes) keepdims=1
            %scaled: f32[...] = Mul(%g, %sums)
            last %hn = %h
            last %gn = %g
          }
        }
    """)
    assert ShapeRefinement()(graph).modified
    verify(graph)
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    assert [rec.state.shape for rec in loop.recurrences] == [(2, None), (2, 3)]
    assert values(graph)["gn"].shape == (2, 3)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    h, g = np.full((2, 1), 0.5, np.float32), np.linspace(1, 2, 6, dtype=np.float32).reshape(2, 3)
    hn, gn = interpret(graph, {"x": x, "h0": h, "g0": g})
    for row in x:
        h, g = np.concatenate([h, row[:, None]], 1), g * h.sum(1, keepdims=True)
    np.testing.assert_allclose(hn, h, rtol=1e-6)
    np.testing.assert_allclose(gn, g, rtol=1e-6)
