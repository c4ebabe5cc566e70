"""heads-first alone: a product's output cut along its last axis into Q, K and V, each reshaped to heads and
transposed, becomes one Reshape to all heads, one Transpose and a Split of the heads axis; onnxruntime runs the
model as written.

Each model computes ``X = x @ w`` ([2, 3, 12]: batch 2, 3 positions, 3 parts of 2 heads of width 2).
"""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import Model, Node, verify
from loopc.passes import HeadsFirst, PassManager
from tests.passes.alone import assert_matches_onnxruntime, load, loops

RNG = np.random.default_rng(7)
FEEDS = {"x": RNG.standard_normal((2, 3, 8)).astype(np.float32),
         "w": RNG.standard_normal((8, 12)).astype(np.float32)}

SIGNATURE = "g (float[2,3,8] x, float[8,12] w) => (float[2,2,3,2] q, float[2,2,{k}] k, float[2,2,3,2] v)"


def split(shape: str = "2, 3, 2, 2", k_perm: str = "0, 2, 1, 3", k_shape: str = "3,2", extra: str = "") -> str:
    return SIGNATURE.format(k=k_shape) + f""" {{
  X = MatMul(x, w)
  sizes = Constant <value = int64[3] {{4, 4, 4}}> ()
  q0, k0, v0 = Split <axis = -1> (X, sizes)
  shape = Constant <value = int64[4] {{{shape}}}> ()
  qr = Reshape(q0, shape)
  kr = Reshape(k0, shape)
  vr = Reshape(v0, shape)
  q = Transpose <perm = [0, 2, 1, 3]> (qr)
  k = Transpose <perm = [{k_perm}]> (kr)
  v = Transpose <perm = [0, 2, 1, 3]> (vr)
  {extra}
}}"""


SLICES = SIGNATURE.format(k="3,2") + """ {
  X = MatMul(x, w)
  axis = Constant <value = int64[1] {-1}> ()
  s0 = Constant <value = int64[1] {0}> ()
  s4 = Constant <value = int64[1] {4}> ()
  s8 = Constant <value = int64[1] {8}> ()
  end = Constant <value = int64[1] {9223372036854775807}> ()
  v0 = Slice(X, s8, end, axis)
  q0 = Slice(X, s0, s4, axis)
  k0 = Slice(X, s4, s8, axis)
  shape = Constant <value = int64[4] {2, 3, 2, 2}> ()
  qr = Reshape(q0, shape)
  kr = Reshape(k0, shape)
  vr = Reshape(v0, shape)
  q = Transpose <perm = [0, 2, 1, 3]> (qr)
  k = Transpose <perm = [0, 2, 1, 3]> (kr)
  v = Transpose <perm = [0, 2, 1, 3]> (vr)
}"""


def rewritten(text: str) -> tuple[object, Model, dict[str, int], list[str]]:
    """The ONNX model, loopc's import of it after heads-first, the pass's statistics and the reasons it
    recorded."""
    proto, model = load(text)
    manager = PassManager([HeadsFirst()])
    model.graph = manager.run(model.graph)
    verify(model.graph)
    return proto, model, manager.stats, [d.reason for d in manager.declines]


def ops(nodes: object) -> list[str]:
    return [node.op for node in nodes if node.op != "Constant"]  # type: ignore[attr-defined]


def the(nodes: object, op: str) -> Node:
    found = [node for node in nodes if node.op == op]  # type: ignore[attr-defined]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("shape", ["2, 3, 2, 2", "0, 0, 2, 2", "0, -1, 2, 2"])
def test_a_split_into_heads_becomes_one_reshape_one_transpose_then_a_split(shape: str) -> None:
    proto, model, stats, reasons = rewritten(split(shape))
    assert stats["heads-first.values"] == 1 and reasons == []
    nodes = model.graph.nodes
    assert ops(nodes) == ["MatMul", "Reshape", "Transpose", "Split"]
    assert list(np.asarray(the(nodes, "Reshape").inputs[1].producer.attrs["value"]))[-2:] == [6, 2]
    assert the(nodes, "Split").attrs["axis"] == 1
    assert_matches_onnxruntime(proto, model, FEEDS)


def test_slices_that_tile_the_last_axis_become_one_split_of_the_heads() -> None:
    proto, model, stats, reasons = rewritten(SLICES)
    assert stats["heads-first.values"] == 1 and reasons == []
    assert ops(model.graph.nodes) == ["MatMul", "Reshape", "Transpose", "Split"]
    assert_matches_onnxruntime(proto, model, FEEDS)


def test_k_transposed_otherwise_gets_a_second_transpose_for_the_rest() -> None:
    """K read as [.., H, dh, S]: the one Transpose, then [0, 1, 3, 2] on K's part alone."""
    proto, model, stats, _ = rewritten(split(k_perm="0, 2, 3, 1", k_shape="2,3"))
    assert stats["heads-first.values"] == 1
    nodes = model.graph.nodes
    assert ops(nodes) == ["MatMul", "Reshape", "Transpose", "Split", "Transpose"]
    assert list(nodes)[-1].attrs["perm"] == [0, 1, 3, 2]
    assert_matches_onnxruntime(proto, model, FEEDS)


def test_a_part_read_by_something_else_stays_and_says_why() -> None:
    text = split(extra="k_too = Relu(k0)").replace("float[2,2,3,2] v)", "float[2,2,3,2] v, float[2,3,4] k_too)")
    proto, model, stats, reasons = rewritten(text)
    assert stats == {} and ops(model.graph.nodes).count("Transpose") == 3
    readers = [user.describe() for user, _ in next(n for n in model.graph.nodes if n.op == "Relu").inputs[0].uses()]
    assert reasons == [f"part 1 of 'X' is not read only by a Reshape then a Transpose: it is read by {', '.join(readers)}"]
    assert "Reshape" in readers[0] and "Relu" in readers[1]
    assert_matches_onnxruntime(proto, model, FEEDS)


LOOP = """
g (int64 n, float[2,1,8] h0, float[8,12] w) => (float[2,1,8] h, float[T,2,2,1,2] q, float[T,2,2,2,1] k) {
  go = Constant <value = bool {1}> ()
  h, q, k = Loop (n, go, h0) <body = b (int64 i, bool c, float[2,1,8] h_in) => (bool c_out, float[2,1,8] h_out,
                                                                                 float[2,2,1,2] q_t, float[2,2,2,1] k_t) {
    c_out = Identity(c)
    X = MatMul(h_in, w)
    sizes = Constant <value = int64[3] {4, 4, 4}> ()
    q0, k0, v0 = Split <axis = 2> (X, sizes)
    shape = Constant <value = int64[4] {2, 1, 2, 2}> ()
    qr = Reshape(q0, shape)
    kr = Reshape(k0, shape)
    vr = Reshape(v0, shape)
    q_t = Transpose <perm = [0, 2, 1, 3]> (qr)
    k_t = Transpose <perm = [0, 2, 3, 1]> (kr)
    v = Transpose <perm = [0, 2, 1, 3]> (vr)
    flat = Constant <value = int64[3] {2, 1, 4}> ()
    v_flat = Reshape(v, flat)
    twice = Concat <axis = -1> (v_flat, v_flat)
    h_out = Tanh(twice)
  }>
}"""


def test_a_loop_body_s_heads_are_split_after_the_transpose() -> None:
    proto, model, stats, _ = rewritten(LOOP)
    assert stats["heads-first.values"] == 1
    body = loops(model.graph)[0].body
    assert ops(body.nodes).count("Transpose") == 2 and the(body.nodes, "Split").attrs["axis"] == 1
    feeds = {"n": np.array(3, np.int64), "h0": RNG.standard_normal((2, 1, 8)).astype(np.float32), "w": FEEDS["w"]}
    assert_matches_onnxruntime(proto, model, feeds)
