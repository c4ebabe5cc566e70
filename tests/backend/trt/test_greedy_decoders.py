"""Greedy decoders as jax2onnx writes ``lax.while_loop``: the fed-back token read by ``dynamic_slice``,
written into a carried buffer with ScatterND, built by TensorRT's real builder and simulated against
onnxruntime.

Both reads that TensorRT's builder asserted on (``makeScopeNodesContiguous``) take a shape from a value
the loop computes in each trip: the embedding lookup's Slice (its start is the token) and the NonZero
that drops out-of-range writes (jax's ``FILL_OR_DROP`` scatter mode). The first is a Gather now, the
second a write to a spare row. What loopc cannot rewrite is refused, naming the layer, before anything
is simulated.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnx.parser
import pytest

from loopc.backend.trt import to_network
from loopc.compiler import build
from loopc.errors import PassError
from loopc.frontend.onnx import import_model
from loopc.passes import PassManager, default_passes
from loopc.trt.config import build_serialized, builder_config
from tests.backend.trt.test_onnx_control_flow import check_through_passes

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'
VOCAB, WIDTH, STEPS = 6, 4, 5
RNG = np.random.default_rng(3)
TABLE = RNG.standard_normal((VOCAB, WIDTH)).astype(np.float32)
OUT = RNG.standard_normal((WIDTH, VOCAB)).astype(np.float32)

#: The plain write: ``tokens.at[i].set(next)``.
WRITE = """idx = Reshape (i, shape11)
        upd = Reshape (tok2, one1)"""
#: jax's FILL_OR_DROP write: only the indices in range are kept, found by NonZero.
DROPPING_WRITE = """all_idx = Reshape (i, shape11)
        all_upd = Reshape (tok2, one1)
        ge = GreaterOrEqual (all_idx, zero)
        last = Constant <value = int64 {%d}> ()
        le = LessOrEqual (all_idx, last)
        ok = And (ge, le)
        ok_flat = Squeeze (ok, one1)
        valid = NonZero (ok_flat)
        valid_t = Transpose <perm = [1, 0]> (valid)
        valid_flat = Squeeze (valid_t, one1)
        idx = Gather <axis = 0> (all_idx, valid_flat)
        upd = Gather <axis = 0> (all_upd, valid_flat)""" % (STEPS - 1)


def step_written(write: str) -> str:
    """The body's shared tail: the token written at row ``i`` by ``write``, ``i`` counted on, ``more`` while
    ``STEPS`` are not out, and the ``eos`` token each decoder stops on in its own way."""
    return f"""shape11 = Constant <value = int64[2] {{1, 1}}> ()
        {write}
        buf2 = ScatterND (buf, idx, upd)
        one = Constant <value = int64 {{1}}> ()
        i2 = Add (i, one)
        steps = Constant <value = int64 {{{STEPS}}}> ()
        more = Less (i2, steps)
        eos = Constant <value = int64 {{{VOCAB - 1}}}> ()"""


def floats(array: np.ndarray) -> str:
    return ", ".join(repr(float(x)) for x in array.reshape(-1))


def greedy(write: str = WRITE) -> str:
    """Tokens from ``start`` until the last word of the vocabulary or ``STEPS`` of them; the embedding row
    read as ``dynamic_slice(table, (token, 0), (1, WIDTH))[0]``, a negative token counted from the end."""
    return f"""{HEADER}
g (int64 start) => (int64[{STEPS}] tokens) {{
    go = Constant <value = bool {{1}}> ()
    zero = Constant <value = int64 {{0}}> ()
    buf0 = Constant <value = int64[{STEPS}] {{{", ".join(["0"] * STEPS)}}}> ()
    i_out, tok_out, tokens = Loop ("", go, zero, start, buf0) <body = body (int64 it, bool c, int64 i, int64 tok,
            int64[{STEPS}] buf) => (bool c2, int64 i2, int64 tok2, int64[{STEPS}] buf2) {{
        table = Constant <value = float[{VOCAB},{WIDTH}] {{{floats(TABLE)}}}> ()
        out = Constant <value = float[{WIDTH},{VOCAB}] {{{floats(OUT)}}}> ()
        axis0 = Constant <value = int64[1] {{0}}> ()
        one1 = Constant <value = int64[1] {{1}}> ()
        vocab = Constant <value = int64 {{{VOCAB}}}> ()
        negative = Less (tok, zero)
        wrapped = Add (tok, vocab)
        row_at = Where (negative, wrapped, tok)
        row_start = Unsqueeze (row_at, axis0)
        starts = Concat <axis = 0> (row_start, axis0)
        sizes = Constant <value = int64[2] {{1, {WIDTH}}}> ()
        ends = Add (starts, sizes)
        axes = Constant <value = int64[2] {{0, 1}}> ()
        window = Slice (table, starts, ends, axes)
        row = Squeeze (window, axis0)
        logits = MatMul (row, out)
        tok2 = ArgMax <axis = 0, keepdims = 0> (logits)
        {step_written(write)}
        done = Equal (tok2, eos)
        going = Not (done)
        c2 = And (more, going)
    }}>
}}"""


def by_hand(start: int) -> np.ndarray:
    """The decoder in NumPy."""
    tokens, tok = np.zeros(STEPS, np.int64), start
    for i in range(STEPS):
        tok = int(np.argmax(TABLE[tok] @ OUT))
        tokens[i] = tok
        if tok == VOCAB - 1:
            break
    return tokens


def starts() -> list[int]:
    """Starting tokens whose runs differ in length: some stop early, some run every step."""
    return [-2, *range(VOCAB)]


def test_the_dynamic_slice_embedding_lookup_builds_and_matches_onnxruntime() -> None:
    check_through_passes(greedy(), [{"start": np.array(s, np.int64)} for s in starts()])


def test_the_oracle_agrees_with_the_decoder_by_hand() -> None:
    """The model means what its docstring says (so onnxruntime is the right oracle for it)."""
    import onnxruntime as ort

    session = ort.InferenceSession(onnx.parser.parse_model(greedy()).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    lengths = set()
    for s in starts():
        (got,) = session.run(None, {"start": np.array(s, np.int64)})
        np.testing.assert_array_equal(got, by_hand(s))
        lengths.add(int(np.count_nonzero(got)))
    assert len(lengths) > 1


def built(text: str) -> None:
    """Compile ``text`` and build it with TensorRT's builder."""
    model = import_model(onnx.parser.parse_model(text))
    model.graph = PassManager(default_passes()).run(model.graph)
    session, network = to_network(model)
    build_serialized(session, network, builder_config(session))


def test_a_write_that_drops_out_of_range_indices_builds_and_matches_onnxruntime() -> None:
    """jax's FILL_OR_DROP write: the NonZero that keeps the in-range writes is gone (a spare row takes the
    others), so the loop builds."""
    check_through_passes(greedy(DROPPING_WRITE), [{"start": np.array(s, np.int64)} for s in starts()])


def test_a_data_sized_write_loopc_cannot_rewrite_is_refused_naming_the_node() -> None:
    """The same NonZero, of the unflattened ``[1, 1]`` mask (its first row the positions), is not a form the
    spare-row rewrite knows: the builder could not order it in the loop (its assertion names no layer), so loopc
    refuses it before building, naming the node and why."""
    unflattened = greedy(DROPPING_WRITE.replace(
        "ok_flat = Squeeze (ok, one1)\n        valid = NonZero (ok_flat)\n        valid_t = Transpose <perm = [1, 0]> (valid)\n"
        "        valid_flat = Squeeze (valid_t, one1)",
        "valid = NonZero (ok)\n        valid_flat = Gather <axis = 0> (valid, zero)"))
    assert "Gather <axis = 0> (valid, zero)" in unflattened
    with pytest.raises(PassError, match=r"TensorRT cannot build this loop: node 'valid' \(NonZero, opset 17\): the size "
                                        r"of its result follows 'ok' \(computed from carried value 'i'\)"):
        built(unflattened)


def tf_greedy() -> str:
    """tf2onnx's ``tf.while_loop`` over a batch of 2: ``prev = toks[:, i - 1]`` (a strided slice with
    raised ends), ``tf.tensor_scatter_nd_update(toks, [[b, i]], next)``; ``STEPS`` tokens, the first given."""
    return f"""{HEADER}
g (int32[2] start) => (int32[2,{STEPS}] tokens) {{
    go = Constant <value = bool {{1}}> ()
    first = Constant <value = int32 {{1}}> ()
    blank = Constant <value = int32[2,{STEPS}] {{{", ".join(["0"] * 2 * STEPS)}}}> ()
    at0 = Constant <value = int64[2,2] {{0, 0, 1, 0}}> ()
    toks0 = ScatterND (blank, at0, start)
    i_out, tokens = Loop ("", go, first, toks0) <body = body (int64 it, bool c, int32 i, int32[2,{STEPS}] toks)
            => (bool c2, int32 i2, int32[2,{STEPS}] toks2) {{
        table = Constant <value = float[{VOCAB},{WIDTH}] {{{floats(TABLE)}}}> ()
        out = Constant <value = float[{WIDTH},{VOCAB}] {{{floats(OUT)}}}> ()
        one = Constant <value = int32 {{1}}> ()
        prev_at = Sub (i, one)
        zero1 = Constant <value = int32[1] {{0}}> ()
        axis0 = Constant <value = int64[1] {{0}}> ()
        at = Unsqueeze (prev_at, axis0)
        starts = Concat <axis = 0> (zero1, at)
        end_at = Unsqueeze (i, axis0)
        plain_ends = Concat <axis = 0> (zero1, end_at)
        float_ends = Cast <to = 1> (plain_ends)
        far = Constant <value = float[2] {{1e9, 1e9}}> ()
        raised = Max (float_ends, far)
        ends = Cast <to = 6> (raised)
        axes = Constant <value = int32[2] {{0, 1}}> ()
        strides = Constant <value = int32[2] {{1, 1000000000}}> ()
        column = Slice (toks, starts, ends, axes, strides)
        axis1 = Constant <value = int64[1] {{1}}> ()
        prev = Squeeze (column, axis1)
        rows = Gather <axis = 0> (table, prev)
        logits = MatMul (rows, out)
        best = ArgMax <axis = 1, keepdims = 0> (logits)
        next = Cast <to = 6> (best)
        two = Constant <value = int64[1] {{2}}> ()
        fill = Expand (i, two)
        fill_col = Unsqueeze (fill, axis1)
        batch = Constant <value = int32[2,1] {{0, 1}}> ()
        pairs = Concat <axis = 1> (batch, fill_col)
        where = Cast <to = 7> (pairs)
        toks2 = ScatterND (toks, where, next)
        i2 = Add (i, one)
        steps = Constant <value = int32 {{{STEPS}}}> ()
        c2 = Less (i2, steps)
    }}>
}}"""


def test_the_tf2onnx_strided_read_of_the_last_token_builds_and_matches_onnxruntime() -> None:
    starts = np.array([[2, 3], [0, 5]], np.int32)
    check_through_passes(tf_greedy(), [{"start": row} for row in starts])
    import onnxruntime as ort

    session = ort.InferenceSession(onnx.parser.parse_model(tf_greedy()).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for row in starts:  # the oracle is the decoder: row b starts at start[b], each next token its argmax
        (got,) = session.run(None, {"start": row})
        for b in range(2):
            want = [int(row[b])]
            for _ in range(STEPS - 1):
                want.append(int(np.argmax(TABLE[want[-1]] @ OUT)))
            np.testing.assert_array_equal(got[b], want)


def batched_greedy() -> str:
    """:func:`greedy` over a dynamic batch of starts (jax2onnx's symbolic ``B``), its tokens written as rows of a
    ``[STEPS, B]`` buffer by the FILL_OR_DROP write, until every row has ended or ``STEPS`` are out."""
    write = DROPPING_WRITE.replace("all_upd = Reshape (tok2, one1)", "all_upd = Unsqueeze (tok2, axis0)")
    return f"""{HEADER}
g (int64[B] start) => (int64[{STEPS},B] tokens) {{
    go = Constant <value = bool {{1}}> ()
    zero = Constant <value = int64 {{0}}> ()
    rows = Constant <value = int64[1] {{{STEPS}}}> ()
    batch = Shape (start)
    buf_shape = Concat <axis = 0> (rows, batch)
    buf0 = ConstantOfShape <value = int64[1] {{0}}> (buf_shape)
    i_out, tok_out, tokens = Loop ("", go, zero, start, buf0) <body = body (int64 it, bool c, int64 i, int64[B] tok,
            int64[{STEPS},B] buf) => (bool c2, int64 i2, int64[B] tok2, int64[{STEPS},B] buf2) {{
        table = Constant <value = float[{VOCAB},{WIDTH}] {{{floats(TABLE)}}}> ()
        out = Constant <value = float[{WIDTH},{VOCAB}] {{{floats(OUT)}}}> ()
        axis0 = Constant <value = int64[1] {{0}}> ()
        one1 = Constant <value = int64[1] {{1}}> ()
        embedded = Gather <axis = 0> (table, tok)
        logits = MatMul (embedded, out)
        tok2 = ArgMax <axis = 1, keepdims = 0> (logits)
        {step_written(write)}
        ended = Equal (tok2, eos)
        ended_n = Cast <to = 7> (ended)
        all_n = ReduceMin <keepdims = 0> (ended_n)
        all_ended = Cast <to = 9> (all_n)
        going = Not (all_ended)
        c2 = And (more, going)
    }}>
}}"""


def test_a_dropping_write_over_a_dynamic_batch_builds_and_matches_onnxruntime(tmp_path: pathlib.Path) -> None:
    """jax2onnx's decoder with a symbolic batch: the spare row is a copy of the buffer's first row (a constant
    could not have the batch's length), so the NonZero goes and the loop builds, under loopc's default profile
    and at each batch run."""
    report = build(onnx.parser.parse_model(batched_greedy()), tmp_path / "batched.plan", warn=lambda message: None)
    assert len(report.loops) == 1
    feeds = [np.array([1, 4, 0], np.int64), np.array([5, 2], np.int64), np.array([5, 5], np.int64)]
    check_through_passes(batched_greedy(), [{"start": s} for s in feeds])
    import onnxruntime as ort

    session = ort.InferenceSession(onnx.parser.parse_model(batched_greedy()).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"start": feeds[2]})
    ended_at_once = np.zeros((STEPS, 2), np.int64)
    ended_at_once[0] = VOCAB - 1  # both rows' first token is the end token (see by_hand(5)): one trip runs
    np.testing.assert_array_equal(got, ended_at_once)
