"""static-sequences alone: ONNX sequences of a static length become their tensors, in straight-line code, carried
by a loop and through a conditional; sequences whose length or positions are not static are left as they are.

Every model is written as ONNX text and run by onnxruntime as the oracle; the IR after the pass is interpreted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx.parser
import pytest

from loopc.compiler import compile, load_ir
from loopc.errors import LoopcError
from loopc.ir import Graph
from loopc.ir.interpret import interpret
from loopc.passes import ConstantFolding, PassManager, StaticSequences, default_passes
from loopc.passes._sequence_lengths import sequence_lengths
from tests.passes.alone import HEADER, assert_matches_onnxruntime, load, loops, run_alone

RNG = np.random.default_rng(11)
X = RNG.standard_normal((4, 6)).astype(np.float32)
Y = RNG.standard_normal((4, 6)).astype(np.float32)
SEQUENCE_OPS = {"SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceAt",
                "SequenceLength", "SplitToSequence", "ConcatFromSequence"}


def sequence_ops(graph: Graph) -> list[str]:
    return [node.op for _, node in graph.walk() if node.op in SEQUENCE_OPS]


def removed(text: str, feeds: dict[str, np.ndarray]) -> dict[str, int]:
    """The pass leaves no sequence op, and the IR computes what onnxruntime computes."""
    proto, model = load(text)
    stats = run_alone(model, ConstantFolding(), StaticSequences())
    assert sequence_ops(model.graph) == []
    assert_matches_onnxruntime(proto, model, feeds)
    return stats


#: Straight-line forms, each on x and y [4, 6]: ``{body}`` computes ``out`` (of type ``{out}``) and ``n``.
STRAIGHT = """
g (float[4,6] x, float[4,6] y) => ({out} out, int64 n) {{
  {body}
}}"""

FORMS = {
    "construct, read at positive and negative positions": ("float[4,6]", """
  s = SequenceConstruct(x, y, x)
  one = Constant <value = int64 {1}> ()
  last = Constant <value = int64 {-1}> ()
  a = SequenceAt(s, last)
  b = SequenceAt(s, one)
  out = Sub(a, b)
  n = SequenceLength(s)"""),
    "split by constant sizes, concatenated": ("float[4,6]", """
  sizes = Constant <value = int64[2] {1, 3}> ()
  s = SplitToSequence <axis = 0> (x, sizes)
  zero = Constant <value = int64 {0}> ()
  head = SequenceAt(s, zero)
  t = SequenceInsert(s, head)
  u = SequenceErase(t, zero)
  out = ConcatFromSequence <axis = 0> (u)
  n = SequenceLength(u)"""),
    "split by a chunk size, the last chunk shorter": ("float[4,2]", """
  chunk = Constant <value = int64 {4}> ()
  s = SplitToSequence <axis = 1> (x, chunk)
  last = Constant <value = int64 {-1}> ()
  out = SequenceAt(s, last)
  n = SequenceLength(s)"""),
    "split into rows, squeezed, stacked on a new last axis": ("float[6,4]", """
  s = SplitToSequence <axis = 0, keepdims = 0> (x)
  out = ConcatFromSequence <axis = -1, new_axis = 1> (s)
  n = SequenceLength(s)"""),
    "split into columns, kept, some erased": ("float[4,4]", """
  s = SplitToSequence <axis = -1> (y)
  two = Constant <value = int64 {2}> ()
  t = SequenceErase(s, two)
  u = SequenceErase(t)
  out = ConcatFromSequence <axis = 1> (u)
  n = SequenceLength(t)"""),
    "inserts into an empty list at constant positions, stacked": ("float[3,4,6]", """
  e = SequenceEmpty <dtype = 1> ()
  a = SequenceInsert(e, x)
  zero = Constant <value = int64 {0}> ()
  b = SequenceInsert(a, y, zero)
  before_last = Constant <value = int64 {-1}> ()
  twice = Add(x, y)
  c = SequenceInsert(b, twice, before_last)
  out = ConcatFromSequence <axis = 0, new_axis = 1> (c)
  n = SequenceLength(c)"""),
    "an element replaced (erase, then insert at its position)": ("float[8,6]", """
  s = SequenceConstruct(x, x)
  one = Constant <value = int64 {1}> ()
  t = SequenceErase(s, one)
  u = SequenceInsert(t, y, one)
  out = ConcatFromSequence <axis = 0> (u)
  n = SequenceLength(u)"""),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_a_straight_line_form_becomes_its_tensors(form: str) -> None:
    out, body = FORMS[form]
    stats = removed(STRAIGHT.format(out=out, body=body), {"x": X, "y": Y})
    assert stats["static-sequences.sequences"] >= 1


#: Per-layer caches in a list carried by a loop of ``n`` trips (known only at run time): each trip reads both
#: layers' caches, grows each by one row (``ks[i] = cat([ks[i], row], 0)``) and stacks what it read.
CARRIED = """
g (int64 n, float[2,3] k0, float[2,3] k1, float[8,1,3] rows) => (float[?,3] first, float[?,3] second, float[?,3] read) {
  ks = SequenceConstruct(k0, k1)
  final, read = Loop (n, , ks) <body = b (int64 i, bool c, seq(float[?,3]) s) => (bool c_out, seq(float[?,3]) s_out, float[3] r) {
    c_out = Constant <value = bool {1}> ()
    row = Gather <axis = 0> (rows, i)
    zero = Constant <value = int64 {0}> ()
    one = Constant <value = int64 {1}> ()
    STEP
    rows_axis = Constant <value = int64[1] {0}> ()
    r = ReduceSum <keepdims = 0> (mixed, rows_axis)
  }>
  front = Constant <value = int64 {0}> ()
  back = Constant <value = int64 {-1}> ()
  first = SequenceAt(final, front)
  second = SequenceAt(final, back)
}"""
#: The body's update: layer 0 then layer 1, each read, grown and put back at its position.
UPDATE = """
    a = SequenceAt(s, zero)
    a2 = Concat <axis = 0> (a, row)
    s1 = SequenceErase(s, zero)
    s2 = SequenceInsert(s1, a2, zero)
    b = SequenceAt(s2, one)
    scaled = Mul(row, row)
    b2 = Concat <axis = 0> (b, scaled)
    s3 = SequenceErase(s2, one)
    s_out = SequenceInsert(s3, b2, one)
    mixed = Concat <axis = 0> (a2, b2)"""


def carried_feeds(trips: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(trips)
    return {"n": np.array(trips, np.int64), "k0": rng.standard_normal((2, 3)).astype(np.float32),
            "k1": rng.standard_normal((2, 3)).astype(np.float32),
            "rows": rng.standard_normal((8, 1, 3)).astype(np.float32)}


def carried_lists(text: str) -> None:
    proto, model = load(text)
    stats = run_alone(model, ConstantFolding(), StaticSequences())
    assert stats.get("static-sequences.carried") == 1
    assert sequence_ops(model.graph) == []
    (loop,) = loops(model.graph)
    assert [r.state.name for r in loop.recurrences] == ["s_0", "s_1"]
    for trips in (0, 1, 5):
        assert_matches_onnxruntime(proto, model, carried_feeds(trips))


def test_per_layer_caches_in_a_carried_list_become_one_carried_tensor_each() -> None:
    carried_lists(CARRIED.replace("STEP", UPDATE))


def test_a_list_carried_through_a_conditional_in_the_loop() -> None:
    """As TorchScript writes ``if done: break`` before the step: the If's else branch updates the list, its
    then branch yields it unchanged; both become one result per element."""
    step = f"""
    two = Constant <value = int64 {{2}}> ()
    early = Less(i, two)
    s_out, mixed = If (early) <then_branch = t () => (seq(float[?,3]) kept, float[?,3] m) {{
        kept = Identity(s)
        m = SequenceAt(s, one)
      }}, else_branch = e () => (seq(float[?,3]) s_out_e, float[?,3] mixed_e) {{
        {UPDATE.replace("s_out", "s_out_e").replace("mixed", "mixed_e")}
      }}>"""
    carried_lists(CARRIED.replace("STEP", step))


def test_a_carried_list_builds_and_simulates_as_onnxruntime_computes() -> None:
    """Through every pass, TensorRT's network builder and the simulator: caches of one shape (scaled, not
    grown, each trip), so that the loop carries one shape."""
    from tests.backend.trt.test_onnx_control_flow import check_through_passes

    update = UPDATE.replace("Concat <axis = 0> (a, row)", "Add(a, row)").replace(
        "Concat <axis = 0> (b, scaled)", "Mul(b, scaled)")
    check_through_passes(HEADER + CARRIED.replace("STEP", update), [carried_feeds(0), carried_feeds(5)])


#: The same caches, updated by a loop over the layers nested in the decoding loop (``for i in range(len(ks))``).
NESTED = """
g (int64 n, float[2,3] k0, float[2,3] k1, float[8,1,3] rows) => (float[?,3] first, float[?,3] second) {
  ks = SequenceConstruct(k0, k1)
  final = Loop (n, , ks) <body = b (int64 t, bool c, seq(float[?,3]) s) => (bool c_out, seq(float[?,3]) s_out) {
    c_out = Constant <value = bool {1}> ()
    row = Gather <axis = 0> (rows, t)
    layers = LAYERS
    s_out, x_out = Loop (layers, , s, row) <body = l (int64 i, bool lc, seq(float[?,3]) ls, float[1,3] x)
                                                  => (bool lc_out, seq(float[?,3]) ls_out, float[1,3] x_next) {
      lc_out = Constant <value = bool {1}> ()
      k = SequenceAt(ls, i)
      grown = Concat <axis = 0> (k, x)
      rest = SequenceErase(ls, i)
      ls_out = SequenceInsert(rest, grown, i)
      mean = ReduceMean <keepdims = 1, axes = [0]> (grown)
      x_next = Add(x, mean)
    }>
  }>
  front = Constant <value = int64 {0}> ()
  back = Constant <value = int64 {-1}> ()
  first = SequenceAt(final, front)
  second = SequenceAt(final, back)
}"""


def test_a_loop_over_the_layers_is_unrolled_so_that_its_positions_are_constants() -> None:
    """The layer loop's count is the list's length, a constant; its trips written out read and write the list at
    constant positions, and the list becomes carried tensors of the decoding loop."""
    proto, model = load(NESTED.replace("LAYERS", "SequenceLength(s)"))
    stats = run_alone(model, ConstantFolding(), StaticSequences())
    assert stats["static-sequences.unrolled"] == 1 and stats["static-sequences.carried"] == 1
    assert sequence_ops(model.graph) == []
    (loop,) = loops(model.graph)
    assert [r.state.name for r in loop.recurrences] == ["s_0", "s_1"]
    for trips in (0, 1, 5):
        assert_matches_onnxruntime(proto, model, carried_feeds(trips), rtol=1e-5, atol=1e-5)


# --- what is left alone ----------------------------------------------------------------------------------

NEAR_MISSES = {
    "a position known only at run time": ("int64 k", "float[4,6]", """
  s = SequenceConstruct(x, y)
  out = SequenceAt(s, k)""", {"k": np.array(-1, np.int64)}, "at a position that is no constant"),
    "split sizes known only at run time": ("int64[2] sizes", "float[?,6]", """
  s = SplitToSequence <axis = 0> (x, sizes)
  one = Constant <value = int64 {1}> ()
  out = SequenceAt(s, one)""", {"sizes": np.array([1, 3], np.int64)}, "has a length known only at run time"),
    "a split of an axis of unknown length": ("float[?,6] z", "float[1,6]", """
  s = SplitToSequence <axis = 0> (z)
  zero = Constant <value = int64 {0}> ()
  out = SequenceAt(s, zero)""", {"z": X}, "has a length known only at run time"),
}
NEAR = """
g (float[4,6] x, float[4,6] y, {given}) => ({out} out) {{
  {body}
}}"""


@pytest.mark.parametrize("case", list(NEAR_MISSES))
def test_a_list_that_is_not_static_is_left_alone(case: str) -> None:
    given, out, body, extra, why = NEAR_MISSES[case]
    text = NEAR.format(given=given, out=out, body=body)
    proto, model = load(text)
    before = sequence_ops(model.graph)
    (reason,) = sequence_lengths(model.graph).left_alone().values()
    assert why in reason
    assert run_alone(model, ConstantFolding(), StaticSequences()) == {}
    assert sequence_ops(model.graph) == before
    assert_matches_onnxruntime(proto, model, {"x": X, "y": Y, **extra})
    with pytest.raises(LoopcError, match="has no TensorRT converter"):
        compile(onnx.parser.parse_model(HEADER + text))


def test_a_list_growing_in_a_loop_is_left_alone_and_its_length_is_not_taken_from_its_start() -> None:
    """``xs.append(x)`` every trip: the carried list's length changes, so nothing is static, not even the length
    read inside the loop (taking the state to keep its init's length would make it 1 on every trip)."""
    text = """
g (int64 n, float[3] x) => (int64[?] lengths, float[3] newest) {
  start = SequenceConstruct(x)
  final, lengths = Loop (n, , start) <body = b (int64 i, bool c, seq(float[3]) s) => (bool c_out, seq(float[3]) s_out, int64 len) {
    c_out = Constant <value = bool {1}> ()
    len = SequenceLength(s)
    s_out = SequenceInsert(s, x)
  }>
  last = Constant <value = int64 {-1}> ()
  newest = SequenceAt(final, last)
}"""
    proto, model = load(text)
    (reason,) = sequence_lengths(model.graph).left_alone().values()
    assert "starts 1 long and is 2 long after a trip" in reason
    assert run_alone(model, ConstantFolding(), StaticSequences()) == {}
    assert "SequenceLength" in sequence_ops(model.graph)
    for trips in (0, 1, 4):
        assert_matches_onnxruntime(proto, model, {"n": np.array(trips, np.int64), "x": X[0, :3]})


def test_a_loop_over_a_run_time_count_of_layers_is_left_alone() -> None:
    """Caches of one shape here: ONNX's shape inference types a carried list's elements after its init's."""
    text = NESTED.replace("LAYERS", "Identity(count)").replace("g (int64 n, ", "g (int64 n, int64 count, ").replace(
        "Concat <axis = 0> (k, x)", "Add(k, x)")
    proto, model = load(text)
    assert run_alone(model, ConstantFolding(), StaticSequences()) == {}
    assert len(loops(model.graph)) == 2
    assert_matches_onnxruntime(proto, model, {**carried_feeds(3), "count": np.array(2, np.int64)}, rtol=1e-5, atol=1e-5)


def test_the_length_of_a_list_read_at_a_run_time_position_is_a_constant() -> None:
    """The list stays (its read needs it), but its length is known: a constant, e.g. for a loop over it."""
    text = """
g (float[4,6] x, float[4,6] y, int64 k) => (int64 count, float[4,6] picked) {
  s = SequenceConstruct(x, y)
  picked = SequenceAt(s, k)
  count = SequenceLength(s)
}"""
    proto, model = load(text)
    assert run_alone(model, ConstantFolding(), StaticSequences()) == {"static-sequences.reads": 1}
    assert sorted(sequence_ops(model.graph)) == ["SequenceAt", "SequenceConstruct"]
    assert_matches_onnxruntime(proto, model, {"x": X, "y": Y, "k": np.array(1, np.int64)})


# --- the scripted GPT-2 whose per-layer caches are a list ---------------------------------------------------

TORCH = Path(__file__).resolve().parents[1] / "models" / "torch"


def optimized(name: str) -> Graph:
    """The model after every pass, checked against eager PyTorch's outputs as imported and after the passes."""
    model = load_ir(str(TORCH / f"{name}.onnx"))
    feeds = dict(np.load(TORCH / f"{name}.inputs.npz"))
    expected = dict(np.load(TORCH / f"{name}.expected.npz"))
    for stage in ("as imported", "after the passes"):
        if stage == "after the passes":
            model.graph = PassManager(default_passes()).run(model.graph)
        for got, (label, want) in zip(interpret(model, feeds), expected.items()):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {stage}: {label}")
    return model.graph


def test_gpt2_caches_in_a_list_end_as_those_written_out_do() -> None:
    """After every pass, the list form computes eager PyTorch's tokens and holds the ops its twin with the two
    layers written out holds: each layer's K and V caches one carried tensor."""
    listed, written_out = optimized("gpt2_greedy"), optimized("gpt2_greedy_unrolled")
    assert sequence_ops(listed) == []

    def ops(graph: Graph) -> list[str]:
        return sorted(node.op for _, node in graph.walk())

    assert ops(listed) == ops(written_out)
    (loop,) = loops(listed)
    caches = [r for r in loop.recurrences if r.state.shape is not None and len(r.state.shape) == 4]
    assert len(caches) == 4
