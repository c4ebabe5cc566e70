"""grown-buffers alone: a carried value grown by a Concat on every trip and read in the same trip becomes a
buffer of its longest length with a valid length, and each read is rewritten by its op's rule.

Every model grows ``acc`` [2, N, 3] along axis 1 by one row a trip, for ``n`` trips given as an input (so the
loop cannot be unrolled), and stacks what the body reads each trip; onnxruntime runs the model as written.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest

from loopc.errors import PassError
from loopc.ir import Loop
from loopc.ir.interpret import evaluate
from loopc.frontend.onnx import import_model
from loopc.passes import FixedRanges, GrownBuffers, Identities
from loopc.passes.legalize import legalization
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

#: ``{reads}`` computes ``read`` (of type ``{read_type}``) from ``acc`` (the state) and ``acc_next`` (the grown
#: value); ``{piece}`` computes ``piece`` [2, 1, 3] from ``row`` (this trip's x) and the reads.
MODEL = """
g (int64 n, float[2,{first},3] first, float[8,2,1,3] x, float[2,3,1] q) => (float[2,K,3] out, {read_type} reads) {{
  out, reads = Loop (n, , first) <body = b (int64 i, bool c, float[2,N,3] acc)
                                          => (bool c_out, float[2,M,3] acc_next, {step_type} read) {{
    c_out = Constant <value = bool {{1}}> ()
    row = Gather <axis = 0> (x, i)
    {piece}
    acc_next = Concat <axis = 1> (acc, piece)
    {reads}
  }}>
}}
"""
RNG = np.random.default_rng(7)
X = RNG.standard_normal((8, 2, 1, 3)).astype(np.float32)
Q = RNG.standard_normal((2, 3, 1)).astype(np.float32)


def model(reads: str, read_type: str, step_type: str, piece: str = "piece = Identity(row)", first: int = 2):
    return load(MODEL.format(reads=reads, read_type=read_type, step_type=step_type, piece=piece, first=first))


def feeds(trips: int, first: int = 2) -> dict[str, np.ndarray]:
    return {"n": np.array(trips, np.int64), "first": RNG.standard_normal((2, first, 3)).astype(np.float32),
            "x": X, "q": Q}


def rewritten(proto_model: tuple, trips: tuple[int, ...] = (0, 1, 5), first: int = 2) -> None:
    """The pass rewrites the loop: no carried value changes shape, and it computes what onnxruntime does."""
    proto, model_ = proto_model
    assert run_alone(model_, GrownBuffers()) == {"grown-buffers.buffers": 1}
    loop = loops(model_.graph)[0]
    assert isinstance(loop, Loop) and not any(n.op == "Concat" for n in loop.body.nodes)
    for count in trips:
        assert_matches_onnxruntime(proto, model_, feeds(count, first), rtol=1e-5, atol=1e-5)


ATTENTION = """
    scores = MatMul(acc_next, q)
    two = Constant <value = int64[1] {2}> ()
    flat = Squeeze(scores, two)
    scale = Constant <value = float {0.5}> ()
    scaled = Mul(flat, scale)
    weights = Softmax <axis = 1> (scaled)
    one = Constant <value = int64[1] {1}> ()
    rowwise = Unsqueeze(weights, one)
    read = MatMul(rowwise, acc_next)"""


def test_attention_over_the_grown_cache_masks_the_padding() -> None:
    """Scores of padded rows, a softmax along them (-inf in the padding), a product contracting over them."""
    rewritten(model(ATTENTION, "float[T,2,1,3]", "float[2,1,3]"))


def test_the_attention_result_fed_back_into_the_cache() -> None:
    """The piece is the attention over the cache before it grows (the state), plus this trip's row."""
    piece = ATTENTION.replace("acc_next", "acc").replace("read = MatMul", "mixed = MatMul") + """
    piece = Add(row, mixed)"""
    rewritten(model("read = ReduceSum <keepdims = 0> (acc_next)", "float[T]", "float", piece=piece))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL2"])
def test_a_reduction_over_the_grown_axis_sees_its_identity_in_the_padding(op: str) -> None:
    reads = (f"""
    axes = Constant <value = int64[1] {{1}}> ()
    read = {op} <keepdims = 0> (acc_next, axes)""" if op == "ReduceSum" else f"read = {op} <axes = [1], keepdims = 0> (acc_next)")
    rewritten(model(reads, "float[T,2,3]", "float[2,3]"))


def test_argmax_along_the_grown_axis_never_picks_the_padding() -> None:
    rewritten(model("read = ArgMax <axis = 1, keepdims = 0> (acc_next)", "int64[T,2,3]", "int64[2,3]"))


def test_a_reduction_over_another_axis_keeps_the_padding_for_the_next_one() -> None:
    reads = """
    axes = Constant <value = int64[1] {2}> ()
    summed = ReduceSum <keepdims = 0> (acc_next, axes)
    exp = Exp(summed)
    read = ReduceMax <axes = [1], keepdims = 0> (exp)"""
    rewritten(model(reads, "float[T,2]", "float[2]"))


def test_the_last_row_fed_back_and_a_row_read_from_the_valid_end() -> None:
    """``acc[:, -1:]`` (the last row written) makes the piece; ``acc_next[:, -1]`` is read."""
    piece = """
    start = Constant <value = int64[1] {-1}> ()
    end = Constant <value = int64[1] {9223372036854775807}> ()
    axis = Constant <value = int64[1] {1}> ()
    last = Slice(acc, start, end, axis)
    fed = Tanh(last)
    piece = Add(fed, row)"""
    reads = """
    minus = Constant <value = int64 {-1}> ()
    read = Gather <axis = 1> (acc_next, minus)"""
    rewritten(model(reads, "float[T,2,3]", "float[2,3]", piece=piece, first=1), first=1)


def test_the_first_rows_and_the_shape_of_the_cache() -> None:
    """``acc[:, 0:1]`` (fixed, since the first value has a row) and ``Shape(acc)[1]`` (the valid length)."""
    reads = """
    zero = Constant <value = int64[1] {0}> ()
    one = Constant <value = int64[1] {1}> ()
    head = Slice(acc, zero, one, one)
    shape = Shape(acc_next)
    length = Gather <axis = 0> (shape, one)
    scale = Cast <to = 1> (length)
    read = Mul(head, scale)"""
    rewritten(model(reads, "float[T,2,1,3]", "float[2,1,3]", first=1), first=1)


def test_a_beam_reordering_of_the_whole_cache_before_it_grows() -> None:
    """``cat([acc[order], row])``: a Gather along another axis keeps the padding, and the growth writes into it."""
    piece = """
    order = Constant <value = int64[2] {1, 0}> ()
    reordered = Gather <axis = 0> (acc, order)
    piece = Identity(row)"""
    text = MODEL.replace("acc_next = Concat <axis = 1> (acc, piece)", "acc_next = Concat <axis = 1> (reordered, piece)")
    proto_model = load(text.format(reads="read = ReduceSum <keepdims = 0> (acc_next)", read_type="float[T]",
                                   step_type="float", piece=piece, first=2))
    rewritten(proto_model)


def test_a_transposed_cache_multiplied_by_columns() -> None:
    reads = """
    swapped = Transpose <perm = [0, 2, 1]> (acc_next)
    query = Transpose <perm = [0, 2, 1]> (q)
    scores = MatMul(query, swapped)
    read = ReduceLogSumExp <keepdims = 0> (scores)"""
    rewritten(model(reads, "float[T]", "float"))


@pytest.mark.parametrize("reads, op, step_type", [
    ("""axis = Constant <value = int64 {1}> ()
    read = CumSum(acc_next, axis)""", "CumSum", "float[2,S,3]"),
    ("""flat = Constant <value = int64[1] {-1}> ()
    read = Reshape(acc_next, flat)""", "Reshape", "float[S]"),
    ("""zero = Constant <value = int64[1] {0}> ()
    five = Constant <value = int64[1] {5}> ()
    one = Constant <value = int64[1] {1}> ()
    read = Slice(acc_next, zero, five, one)""", "Slice", "float[2,S,3]"),  # 5 rows: valid after 3 trips only
])
def test_a_read_with_no_rule_is_refused_naming_its_op(reads: str, op: str, step_type: str) -> None:
    _, model_ = model(reads, step_type.replace("float[", "float[T,"), step_type)
    with pytest.raises(PassError, match=rf"reads a value that grows on every trip \(loopc has no rule for a {op}"):
        run_alone(model_, legalization([], [GrownBuffers()]))


def test_a_loop_unroll_can_take_is_left_to_it() -> None:
    """A constant count of a few trips: unrolled as before, no buffer."""
    text = MODEL.replace("g (int64 n, ", "g (").replace(
        "out, reads = Loop (n, , first)", "n = Constant <value = int64 {{3}}> ()\n  out, reads = Loop (n, , first)")
    _, model_ = load(text.format(reads=ATTENTION, read_type="float[T,2,1,3]", step_type="float[2,1,3]",
                                 piece="piece = Identity(row)", first=2))
    assert run_alone(model_, GrownBuffers()) == {}


CAUSAL = """
    shape = Shape(acc_next)
    one = Constant <value = int64 {{1}}> ()
    length = Gather <axis = 0> (shape, one)
    count = Cast <to = {cast}> (length)
    zero = Constant <value = {type} {{0}}> ()
    step = Constant <value = {type} {{1}}> ()
    keys = Range(zero, count, step)
    newest = Sub(count, step)
    last = Add(newest, step)
    queries = Range(newest, last, step)
    two = Constant <value = {type} {{2}}> ()
    oldest = Sub(queries, two)
    axis0 = Constant <value = int64[1] {{0}}> ()
    axis1 = Constant <value = int64[1] {{1}}> ()
    key_row = Unsqueeze(keys, axis0)
    query_column = Unsqueeze(oldest, axis1)
    hidden = Less(key_row, query_column)
    scores = MatMul(acc_next, q)
    columns = Transpose <perm = [0, 2, 1]> (scores)
    low = Constant <value = float {{-inf}}> ()
    masked = Where(hidden, low, columns)
    weights = Softmax <axis = 2> (masked)
    read = MatMul(weights, acc_next)"""


@pytest.mark.parametrize("cast, type_", [(7, "int64"), (1, "float")])
def test_a_mask_numbered_by_a_range_of_the_cache_length(cast: int, type_: str) -> None:
    """A sliding-window mask from ``Range(0, Shape(cache)[1])`` (the keys) and ``Range(n - 1, n)`` (the new
    query; fixed-ranges makes its count a constant): the keys' Range becomes the buffer's positions."""
    proto, model_ = model(CAUSAL.format(cast=cast, type=type_), "float[T,2,1,3]", "float[2,1,3]")
    stats = run_alone(model_, FixedRanges(), GrownBuffers())
    assert stats["grown-buffers.buffers"] == 1 and stats.get("fixed-ranges.ranges", 0) == (type_ == "int64")
    body_ops = [n.op for n in loops(model_.graph)[0].body.nodes]
    # a float Range's count is rounded arithmetic: the queries' Range stays (TensorRT's builder then refuses it)
    assert "Concat" not in body_ops and body_ops.count("Range") == (type_ == "float")
    for count in (0, 1, 5):
        assert_matches_onnxruntime(proto, model_, feeds(count), rtol=1e-5, atol=1e-5)


def test_a_range_of_the_length_not_from_zero_is_refused() -> None:
    reads = """
    shape = Shape(acc_next)
    one = Constant <value = int64 {1}> ()
    length = Gather <axis = 0> (shape, one)
    keys = Range(one, length, one)
    total = ReduceSum <keepdims = 0> (keys)
    read = Cast <to = 1> (total)"""
    _, model_ = model(reads, "float[T]", "float")
    with pytest.raises(PassError, match=r"no rule for a Range .*does not number the valid positions from 0"):
        run_alone(model_, legalization([], [GrownBuffers()]))


BREAK = """
g (int64 n, int64 stop, float[2,2,3] first, float[8,2,1,3] x, float[2,3,1] q) => (float[2,K,3] out, float[T,2,1,3] reads) {
  go = Constant <value = bool {1}> ()
  out, reads = Loop (n, go, first) <body = b (int64 i, bool c, float[2,N,3] acc) => (bool c_out, float[2,M,3] acc_next, float[2,1,3] read) {
    row = Gather <axis = 0> (x, i)
    done = Equal(i, stop)
    c_out, acc_next, read = If (done) <
      then_branch = t () => (bool c_then, float[2,N,3] same, float[2,1,3] last) {
        c_then = Constant <value = bool {0}> ()
        same = Identity(acc)
        last = Identity(row)
      },
      else_branch = e () => (bool c_else, float[2,M,3] grown, float[2,1,3] attended) {
        c_else = Constant <value = bool {1}> ()
        grown = Concat <axis = 1> (acc, row)
        scores = MatMul(grown, q)
        two = Constant <value = int64[1] {2}> ()
        flat = Squeeze(scores, two)
        weights = Softmax <axis = 1> (flat)
        one = Constant <value = int64[1] {1}> ()
        rowwise = Unsqueeze(weights, one)
        attended = MatMul(rowwise, grown)
      }>
  }>
}
"""


def test_a_break_that_skips_the_growth_in_one_branch() -> None:
    """``if i == stop: break`` (the cache as it was, the loop ends) ``else: grow and attend``: the If yields the
    buffer and its length from both branches."""
    proto, model_ = load(BREAK)
    stats = run_alone(model_, Identities(), GrownBuffers())  # the branch yields the cache itself, as exporters write
    assert stats["grown-buffers.buffers"] == 1
    body = loops(model_.graph)[0].body
    assert not any(n.op == "Concat" for _, n in body.walk())
    for trips, stop in ((5, 2), (5, 9), (1, 0), (3, 3)):
        assert_matches_onnxruntime(proto, model_, {**feeds(trips), "stop": np.array(stop, np.int64)}, rtol=1e-5,
                                   atol=1e-5)


def test_a_branch_yielding_the_cache_grown_and_one_yielding_something_else_is_refused() -> None:
    """The If's third result is the grown cache in one branch and the first cache in the other."""
    text = BREAK.replace("c_out, acc_next, read = If (done)", "c_out, acc_next, either = If (done)").replace(
        "last = Identity(row)", "last = Identity(first)").replace("float[2,1,3] last)", "float[2,2,3] last)").replace(
        "float[2,1,3] attended)", "float[2,M,3] grown_too)").replace(
        "attended = MatMul(rowwise, grown)", "attended = MatMul(rowwise, grown)\n        grown_too = Identity(grown)")
    text = text.replace("      }>\n  }>", """      }>
    axes = Constant <value = int64[1] {1}> ()
    read = ReduceSum <keepdims = 1> (either, axes)
  }>""")
    _, model_ = load(text)
    with pytest.raises(PassError, match=r"no rule for a If .*padded in one and not the other"):
        run_alone(model_, legalization([Identities()], [GrownBuffers()]))


ATTENTION_23 = """<ir_version: 10, opset_import: ["" : 23]>
g (int64 n, float[1,2,2,4] k0, float[1,2,2,4] v0, float[6,1,2,1,4] x, float[4,4] wq, float[4,4] wk{mask_input})
    => (float[T,1,2,1,4] ys, float[1,2,K,4] keys, float[1,2,K,4] values) {{
  go = Constant <value = bool {{1}}> ()
  keys, values, ys = Loop (n, go, k0, v0) <body = b (int64 i, bool c, float[1,2,N,4] pk, float[1,2,N,4] pv)
      => (bool c_out, float[1,2,M,4] pk_next, float[1,2,M,4] pv_next, float[1,2,1,4] y) {{
    c_out = Identity(c)
    row = Gather <axis = 0> (x, i)
    q = MatMul(row, wq)
    k = MatMul(row, wk)
    v = Tanh(row)
    {mask}
    y, pk_next, pv_next = Attention <scale = 0.7> (q, k, v, {mask_name}, pk, pv)
  }}>
}}
"""
#: Every other cached position hidden: a mask over the keys' whole length, made from its Shape and a Range.
ALTERNATE = """shape = Shape(pk)
    two = Constant <value = int64 {2}> ()
    past = Gather <axis = 0> (shape, two)
    one = Constant <value = int64 {1}> ()
    total = Add(past, one)
    zero = Constant <value = int64 {0}> ()
    positions = Range(zero, total, one)
    parity = Mod(positions, two)
    odd = Equal(parity, one)
    newest = Sub(total, one)
    last = Equal(positions, newest)
    keep = Or(odd, last)
    axes = Constant <value = int64[1] {0}> ()
    mask = Unsqueeze(keep, axes)"""


def attention_feeds(trips: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(trips)
    return {"n": np.array(trips, np.int64), "k0": rng.standard_normal((1, 2, 2, 4)).astype(np.float32),
            "v0": rng.standard_normal((1, 2, 2, 4)).astype(np.float32),
            "x": rng.standard_normal((6, 1, 2, 1, 4)).astype(np.float32),
            "wq": rng.standard_normal((4, 4)).astype(np.float32), "wk": rng.standard_normal((4, 4)).astype(np.float32)}


@pytest.mark.parametrize("masked", [False, True], ids=["past-only", "with-a-mask"])
def test_onnx_attention_over_past_keys_and_values_reads_the_buffers(masked: bool) -> None:
    """Attention-23 with ``past_key``/``past_value`` carried and ``present_*`` fed back: the new keys and values
    are written into the buffers, which the attention reads with the padding masked out (and the model's own
    mask, padded as the keys, kept)."""
    text = ATTENTION_23.format(mask_input="", mask=ALTERNATE if masked else "", mask_name="mask" if masked else "")
    proto = onnx.parser.parse_model(text)
    onnx.checker.check_model(proto)
    model_ = import_model(proto)
    stats = run_alone(model_, FixedRanges(), GrownBuffers())
    assert stats["grown-buffers.buffers"] == 2
    body_ops = [n.op for n in loops(model_.graph)[0].body.nodes]
    assert body_ops.count("Attention") == 1 and "Range" not in body_ops
    for trips in (1, 4):
        assert_matches_onnxruntime(proto, model_, attention_feeds(trips), rtol=1e-5, atol=1e-5)


def test_a_causal_attention_over_past_keys_is_refused_naming_it() -> None:
    text = ATTENTION_23.format(mask_input="", mask="", mask_name="").replace(
        "Attention <scale = 0.7>", "Attention <scale = 0.7, is_causal = 1>")
    model_ = import_model(onnx.parser.parse_model(text))
    with pytest.raises(PassError, match=r"no rule for a Attention .*it is causal"):
        run_alone(model_, legalization([], [GrownBuffers()]))


def test_a_trip_count_past_tensorrts_limit_sizes_the_buffer_for_the_most_trips_a_loop_runs() -> None:
    """TensorRT runs at most 2**31 - 1 trips (its trip limit is an int32): the padding has room for that many, not
    for a larger trip count. A length computed from a shape-tensor input (a decoder's ``max_new_tokens``) is then
    bounded for TensorRT's builder, which otherwise bounds it by the int64 range; Myelin's codegen refuses that
    ("CHECK(bounds[i] < ...int32_t max())"). Evaluated up to the padding's shape only: the padding itself is 48 GiB."""
    _, model_ = model(ATTENTION, "float[T,2,1,3]", "float[2,1,3]")
    run_alone(model_, GrownBuffers())
    known = {v: feeds(0)[v.name] for v in model_.graph.inputs}
    known[next(v for v in model_.graph.inputs if v.name == "n")] = np.array(2**40, np.int64)
    for node in model_.graph.nodes:
        small = all(o.shape is not None and all(isinstance(d, int) for d in o.shape) and len(o.shape) <= 1
                    for o in node.outputs)
        if small and all(v in known for v in node.inputs if v is not None):
            results = evaluate(node, [None if v is None else known[v] for v in node.inputs])
            known.update(zip(node.outputs, results))
    padding = next(n for n in model_.graph.nodes if n.op == "ConstantOfShape")
    assert padding.inputs[0] is not None
    assert known[padding.inputs[0]].tolist() == [2, 2**31 - 1, 3]
