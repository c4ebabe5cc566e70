"""The one padder's rules that real decoders need beyond a single growing cache, each through grown-buffers on a
small loop written as ONNX text, checked against onnxruntime running the model as written:

- per-layer caches stacked in one tensor ``[L, 2, N, 3]`` growing along N, read per layer by index and stacked
  again every trip (``torch.stack([torch.cat([past[i], new_i], 1) for i in range(L)])``), also inside the If a
  ``break`` makes;
- a learned positional table sliced at the cache's length (``pos[t:t + 1]``, ``t = len(cache)``);
- a loop with no trip count that stops once the grown value reaches a length (``if len(out) == 5: break``);
- a Concat of padded values along another axis, and a row read at a computed position (``cache[len - 2]``).
"""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import Loop
from loopc.ir.ops import traits
from loopc.passes import GrownBuffers, Identities
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

RNG = np.random.default_rng(37)
X = RNG.standard_normal((8, 2, 1, 3)).astype(np.float32)

#: Two layers of one cache stacked on axis 0, each grown by its own piece along axis 2 of the stack.
STACKED = """
g (int64 n, float[2,2,{first},3] first, float[8,2,1,3] x) => (float[2,2,K,3] out, float[T,2,3] reads) {{
  out, reads = Loop (n, , first) <body = b (int64 i, bool c, float[2,2,N,3] acc)
                                          => (bool c_out, float[2,2,M,3] acc_next, float[2,3] read) {{
    c_out = Constant <value = bool {{1}}> ()
    row = Gather <axis = 0> (x, i)
    zero = Constant <value = int64 {{0}}> ()
    one = Constant <value = int64 {{1}}> ()
    axis0 = Constant <value = int64[1] {{0}}> ()
    axis1 = Constant <value = int64[1] {{1}}> ()
    past0 = Gather <axis = 0> (acc, zero)
    past1 = Gather <axis = 0> (acc, one)
    doubled = Add(row, row)
    layer0 = Concat <axis = 1> (past0, row)
    layer1 = Concat <axis = 1> (past1, doubled)
    weights = Softmax <axis = 1> (layer0)
    mixed = Mul(weights, layer1)
    read = ReduceSum <keepdims = 0> (mixed, axis1)
    stacked0 = Unsqueeze(layer0, axis0)
    stacked1 = Unsqueeze(layer1, axis0)
    acc_next = Concat <axis = 0> (stacked0, stacked1)
  }}>
}}
"""


def _stacked_feeds(trips: int, first: int = 2) -> dict[str, np.ndarray]:
    return {"n": np.array(trips, np.int64), "first": RNG.standard_normal((2, 2, first, 3)).astype(np.float32),
            "x": X}


@pytest.mark.parametrize("first", [1, 2])
def test_stacked_layers_grow_by_one_write_into_the_stack(first: int) -> None:
    proto, model = load(STACKED.format(first=first))
    assert run_alone(model, GrownBuffers()) == {"grown-buffers.buffers": 1}
    buffer = next(r for r in loops(model.graph)[0].recurrences if r.state.name.endswith("_buffer"))
    assert buffer.next.producer is not None and buffer.next.producer.op == "ScatterElements", "not written in place"
    for trips in (0, 1, 5):
        assert_matches_onnxruntime(proto, model, _stacked_feeds(trips, first), rtol=1e-5, atol=1e-5)


def test_stacked_layers_read_through_a_whole_slice() -> None:
    """``past[:, i]`` exports as a Slice of everything along axis 0, then a Gather: the stack is still written
    in place."""
    text = STACKED.format(first=2).replace("    past0 = Gather <axis = 0> (acc, zero)\n", """    begin = Constant <value = int64[1] {0}> ()
    end = Constant <value = int64[1] {9223372036854775807}> ()
    whole = Slice(acc, begin, end, axis1)
    past0 = Gather <axis = 0> (whole, zero)
""").replace("past1 = Gather <axis = 0> (acc, one)", "past1 = Gather <axis = 0> (whole, one)")
    proto, model = load(text)
    assert run_alone(model, GrownBuffers()) == {"grown-buffers.buffers": 1}
    buffer = next(r for r in loops(model.graph)[0].recurrences if r.state.name.endswith("_buffer"))
    assert buffer.next.producer is not None and buffer.next.producer.op == "ScatterElements"
    for trips in (0, 3):
        assert_matches_onnxruntime(proto, model, _stacked_feeds(trips), rtol=1e-5, atol=1e-5)


def test_stacked_layers_grown_in_the_branch_a_break_skips() -> None:
    """``if i >= 3: keep the stack as it was else: grow it``: both branches yield the buffer and its length."""
    text = STACKED.format(first=2).replace(
        "    acc_next = Concat <axis = 0> (stacked0, stacked1)\n", """    grown = Concat <axis = 0> (stacked0, stacked1)
    three = Constant <value = int64 {3}> ()
    done = GreaterOrEqual(i, three)
    acc_next = If (done) <then_branch = t () => (float[2,2,N,3] kept) {
        kept = Identity(acc)
      }, else_branch = e () => (float[2,2,M,3] kept) {
        kept = Identity(grown)
      }>
""")
    proto, model = load(text)
    assert run_alone(model, Identities(), GrownBuffers()).get("grown-buffers.buffers") == 1
    for trips in (0, 2, 6):
        assert_matches_onnxruntime(proto, model, _stacked_feeds(trips), rtol=1e-5, atol=1e-5)


#: A cache grown by one row a trip whose next piece adds the row of a positional table at the cache's length.
POSITIONS = """
g (int64 n, float[2,2,3] first, float[8,2,1,3] x, float[12,3] table) => (float[2,K,3] out) {
  out = Loop (n, , first) <body = b (int64 i, bool c, float[2,N,3] acc) => (bool c_out, float[2,M,3] acc_next) {
    c_out = Constant <value = bool {1}> ()
    row = Gather <axis = 0> (x, i)
    shape = Shape(acc)
    one = Constant <value = int64 {1}> ()
    length = Gather <axis = 0> (shape, one)
    axis0 = Constant <value = int64[1] {0}> ()
    start = Unsqueeze(length, axis0)
    more = Constant <value = int64[1] {1}> ()
    end = Add(start, more)
    position = Slice(table, start, end, axis0)
    attended = ReduceMean <axes = [1], keepdims = 1> (acc)
    mixed = Add(row, attended)
    piece = Add(mixed, position)
    acc_next = Concat <axis = 1> (acc, piece)
  }>
}
"""


#: The same length read as the shape's one entry (``cache.shape[-1:]``, a Slice of the shape, then squeezed).
LAST_ENTRY = POSITIONS.replace("""    one = Constant <value = int64 {1}> ()
    length = Gather <axis = 0> (shape, one)""", """    from_one = Constant <value = int64[1] {1}> ()
    to_two = Constant <value = int64[1] {2}> ()
    entry = Slice(shape, from_one, to_two)
    length = Squeeze(entry)""")


@pytest.mark.parametrize("text", [POSITIONS, LAST_ENTRY], ids=["gathered", "sliced"])
def test_a_positional_table_sliced_at_the_cache_length_is_a_gather(text: str) -> None:
    assert text.count("length =") == 1
    proto, model = load(text)
    assert run_alone(model, GrownBuffers()) == {"grown-buffers.buffers": 1}
    body = loops(model.graph)[0].body
    assert not any(n.op == "Slice" and n.inputs[0] is not None and n.inputs[0].name == "table" for n in body.nodes)
    table = RNG.standard_normal((12, 3)).astype(np.float32)
    for trips in (0, 1, 7):
        feeds = {"n": np.array(trips, np.int64), "first": RNG.standard_normal((2, 2, 3)).astype(np.float32),
                 "x": X, "table": table}
        assert_matches_onnxruntime(proto, model, feeds, rtol=1e-5, atol=1e-5)


#: No trip count: the loop stops once ``out`` holds ``{limit}`` rows; the body reads the row before the last.
UNTIL_LENGTH = """
g (float[2,1,3] first, float[2,1,3] x) => (float[2,K,3] out) {{
  go = Constant <value = bool {{1}}> ()
  out = Loop (, go, first) <body = b (int64 i, bool c, float[2,N,3] acc) => (bool c_out, float[2,M,3] acc_next) {{
    shape = Shape(acc)
    one = Constant <value = int64 {{1}}> ()
    length = Gather <axis = 0> (shape, one)
    minus = Constant <value = int64 {{1}}> ()
    newest = Sub(length, minus)
    last = Gather <axis = 1> (acc, newest)
    axis1 = Constant <value = int64[1] {{1}}> ()
    lifted = Unsqueeze(last, axis1)
    turned = Tanh(lifted)
    piece = Add(turned, x)
    acc_next = Concat <axis = 1> (acc, piece)
    grown_shape = Shape(acc_next)
    grown_length = Gather <axis = 0> (grown_shape, one)
    limit = Constant <value = int64 {{{limit}}}> ()
    full = Equal(grown_length, limit)
    c_out = Not(full)
  }}>
}}
"""


@pytest.mark.parametrize("limit", [2, 5])
def test_a_loop_that_stops_at_a_length_is_bounded_by_it(limit: int) -> None:
    proto, model = load(UNTIL_LENGTH.format(limit=limit))
    assert run_alone(model, GrownBuffers()) == {"grown-buffers.buffers": 1}
    loop = loops(model.graph)[0]
    assert isinstance(loop, Loop) and loop.trip_count is not None and loop.condition is not None
    feeds = {"first": RNG.standard_normal((2, 1, 3)).astype(np.float32),
             "x": RNG.standard_normal((2, 1, 3)).astype(np.float32)}
    assert_matches_onnxruntime(proto, model, feeds, rtol=1e-5, atol=1e-5)


def test_a_loop_whose_length_test_never_stops_it_gets_no_bound() -> None:
    """``c_out = Equal(...)``: the loop goes on while the length is the limit; nothing bounds it."""
    _, model = load(UNTIL_LENGTH.format(limit=5).replace("c_out = Not(full)", "c_out = Identity(full)"))
    assert run_alone(model, GrownBuffers()) == {}


JOINED = """
g (int64 n, float[2,2,3] first, float[8,2,1,3] x) => (float[2,K,3] out, float[T,4,3] reads) {
  out, reads = Loop (n, , first) <body = b (int64 i, bool c, float[2,N,3] acc)
                                          => (bool c_out, float[2,M,3] acc_next, float[4,3] read) {
    c_out = Constant <value = bool {1}> ()
    row = Gather <axis = 0> (x, i)
    acc_next = Concat <axis = 1> (acc, row)
    scaled = Neg(acc_next)
    both = Concat <axis = 0> (acc_next, scaled)
    shape = Shape(acc_next)
    one = Constant <value = int64 {1}> ()
    length = Gather <axis = 0> (shape, one)
    two = Constant <value = int64 {2}> ()
    older = Sub(length, two)
    before_last = Gather <axis = 1> (both, older)
    largest = ReduceMax <axes = [1], keepdims = 0> (both)
    read = Add(before_last, largest)
  }>
}
"""


def test_padded_values_joined_along_another_axis_and_a_row_at_a_computed_position() -> None:
    proto, model = load(JOINED)
    assert run_alone(model, GrownBuffers()) == {"grown-buffers.buffers": 1}
    for trips in (0, 1, 6):
        feeds = {"n": np.array(trips, np.int64), "first": RNG.standard_normal((2, 2, 3)).astype(np.float32),
                 "x": X}
        assert_matches_onnxruntime(proto, model, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, identity", [("ReduceSum", 0.0), ("ReduceLogSum", 0.0), ("ReduceMax", -np.inf),
                                          ("Softmax", -np.inf), ("ArgMin", np.inf), ("ReduceProd", 1.0)])
def test_the_padding_identities_are_the_op_registry_s(op: str, identity: float) -> None:
    """What the table fills padding with comes from ``OpTraits.pad_identity``: checked here against the op's
    meaning (a reduction over values and the identity equals the reduction over the values alone)."""
    assert traits(op).pad_identity == identity
    values = np.array([0.5, 2.0, 1.5])
    padded = np.append(values, identity)
    reductions = {"ReduceSum": np.sum, "ReduceLogSum": lambda v: np.log(np.sum(v)), "ReduceMax": np.max,
                  "ReduceProd": np.prod, "ArgMin": np.argmin,
                  "Softmax": lambda v: (np.exp(v) / np.exp(v).sum())[:3].sum()}
    assert reductions[op](padded) == pytest.approx(reductions[op](values))


SPLIT_HEADS = """
g (int64 n, float[2,2,4] first, float[8,2,1,4] x) => (float[2,K,4] out, float[T,2,2,2] reads) {
  out, reads = Loop (n, , first) <body = b (int64 i, bool c, float[2,N,4] acc)
                                          => (bool c_out, float[2,M,4] acc_next, float[2,2,2] read) {
    c_out = Constant <value = bool {1}> ()
    row = Gather <axis = 0> (x, i)
    acc_next = Concat <axis = 1> (acc, row)
    shape = Shape(acc_next)
    zero = Constant <value = int64[1] {0}> ()
    two = Constant <value = int64[1] {2}> ()
    leading = Slice(shape, zero, two)
    heads = Constant <value = int64[2] {2, -1}> ()
    dims = Concat <axis = 0> (leading, heads)
    split = Reshape(acc_next, dims)
    weights = Softmax <axis = 1> (split)
    axis1 = Constant <value = int64[1] {1}> ()
    read = ReduceSum <keepdims = 0> (weights, axis1)
  }>
}
"""


def test_a_reshape_keeping_the_padded_axis_splits_heads_of_the_buffer() -> None:
    """``k.view(B, S, H, -1)`` of a cache ``[B, S, D]``: the target's leading entries are read from the buffer."""
    proto, model = load(SPLIT_HEADS)
    assert run_alone(model, GrownBuffers()) == {"grown-buffers.buffers": 1}
    for trips in (0, 1, 5):
        feeds = {"n": np.array(trips, np.int64), "first": RNG.standard_normal((2, 2, 4)).astype(np.float32),
                 "x": RNG.standard_normal((8, 2, 1, 4)).astype(np.float32)}
        assert_matches_onnxruntime(proto, model, feeds, rtol=1e-5, atol=1e-5)
