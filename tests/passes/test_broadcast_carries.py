"""BroadcastCarries: a carried placeholder that every trip broadcasts to the items' shape (OpenVINO's TensorFlow
frontend's TensorArray) starts broadcast, and computes the same, also when the loop runs no trip."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx.parser
import pytest

from loopc.compiler import build
from loopc.ir import Loop
from loopc.passes import BroadcastCarries, DeadCode, PassManager, default_passes
from tests.backend.trt.oracle import build_and_simulate
from tests.passes.alone import HEADER, assert_matches_onnxruntime, load, loops, run_alone

ROWS, WIDTH = 5, 4
W = np.random.default_rng(8).uniform(-0.8, 0.8, (WIDTH, WIDTH)).astype(np.float32)

#: ``h = tanh(h W)`` for ``m`` trips, each state written as row ``i`` of a TensorArray that starts as a ``[5, 1, 1]``
#: placeholder and is broadcast by each trip to ``[5] + Shape(h)`` (``{target}``) before the write, as OpenVINO's
#: TensorFlow frontend writes ``TensorArray.write``.
WRITES = """
g (float[B,4] h0, int64 m) => (float[5,?,?] states) {{
    go = Constant <value = bool {{1}}> ()
    zero = Constant <value = int64 {{0}}> ()
    buf0 = Constant <value = float[5,1,1] {{0, 0, 0, 0, 0}}> ()
    i_out, h_out, states = Loop (m, go, zero, h0, buf0) <body = body (int64 it, bool c, int64 i, float[B,4] h,
            float[5,?,?] buf) => (bool c2, int64 i2, float[B,4] h2, float[5,?,?] buf2) {{
        w = Constant <value = float[4,4] {{{weights}}}> ()
        c2 = Identity (c)
        hw = MatMul (h, w)
        h2 = Tanh (hw)
        buf_dims = Shape (buf)
        {target}
        wide = Expand (buf, target)
        axis0 = Constant <value = int64[1] {{0}}> ()
        row = Unsqueeze (h2, axis0)
        at_shape = Constant <value = int64[3] {{1, 1, 1}}> ()
        at = Reshape (i, at_shape)
        row_dims = Shape (row)
        where = Expand (at, row_dims)
        buf2 = ScatterElements <axis = 0> (wide, where, row)
        one = Constant <value = int64 {{1}}> ()
        i2 = Add (i, one)
    }}>
}}
"""
#: The frontend's target: the buffer's own length, then the item's dims.
OWN_LENGTH = """first = Constant <value = int64[1] {0}> ()
        second = Constant <value = int64[1] {1}> ()
        length = Slice (buf_dims, first, second)
        h_dims = Shape (h2)
        target = Concat <axis = 0> (length, h_dims)"""


def writes(target: str = OWN_LENGTH) -> str:
    return WRITES.format(weights=", ".join(repr(float(x)) for x in W.reshape(-1)), target=target)


def feeds(batch: int, trips: int) -> dict[str, np.ndarray]:
    h0 = np.random.default_rng(batch).standard_normal((batch, WIDTH)).astype(np.float32)
    return {"h0": h0, "m": np.array(trips, np.int64)}


def by_hand(batch: int, trips: int) -> np.ndarray:
    """The states in NumPy: rows past the trips run stay zero; no trip leaves the [5, 1, 1] placeholder."""
    if trips == 0:
        return np.zeros((ROWS, 1, 1), np.float32)
    h, states = feeds(batch, trips)["h0"], np.zeros((ROWS, batch, WIDTH), np.float32)
    for i in range(trips):
        h = np.tanh(h @ W)
        states[i] = h
    return states


@pytest.mark.parametrize(("batch", "trips"), [(3, 2), (3, 5), (1, 4), (2, 0)])
def test_the_placeholder_is_broadcast_before_the_loop(batch: int, trips: int) -> None:
    proto, model = load(writes())
    assert run_alone(model, BroadcastCarries(), DeadCode()).get("broadcast-carries.hoisted") == 1
    (loop,) = loops(model.graph)
    (buffer,) = [r for r in loop.recurrences if r.state.shape is not None and len(r.state.shape) == 3]
    assert buffer.init.producer is not None and buffer.init.producer.op == "Expand"
    assert_matches_onnxruntime(proto, model, feeds(batch, trips), rtol=1e-5)
    import onnxruntime as ort

    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, feeds(batch, trips))[0], by_hand(batch, trips), rtol=1e-5, atol=1e-6)


def test_a_target_that_reads_another_dim_of_the_buffer_is_left() -> None:
    """Broadcasting first would change what the target reads on trip 0 (the buffer's width, 1 before): left."""
    widths = OWN_LENGTH.replace("h_dims = Shape (h2)", "h_dims = Shape (h2)\n        third = Constant <value = int64[1] {2}> ()\n"
                                "        width = Slice (buf_dims, second, third)").replace(
        "target = Concat <axis = 0> (length, h_dims)", "batch = Slice (h_dims, first, second)\n"
        "        target = Concat <axis = 0> (length, batch, width)")
    _, model = load(writes(widths))
    assert run_alone(model, BroadcastCarries()) == {}


def test_a_buffer_shape_read_elsewhere_is_left() -> None:
    """The buffer's shape also read for another value: its trip-0 entries would change."""
    text = writes().replace("c2 = Identity (c)", "c2 = Identity (c)\n        dims_again = Shape (buf)\n"
                            "        rank = Size (dims_again)\n        two = Constant <value = int64 {2}> ()\n"
                            "        more = Less (rank, two)").replace("c2 = Identity (c)\n", "", 1).replace(
        "more = Less (rank, two)", "more = Less (rank, two)\n        still = Not (more)\n        c2 = And (c, still)")
    _, model = load(text)
    assert run_alone(model, BroadcastCarries()) == {}


def test_the_decoder_builds_for_any_batch_and_matches_onnxruntime(tmp_path: pathlib.Path) -> None:
    """Without the pass the loop carries [5, 1, 1] and TensorRT's builder refuses it (as [5,1,1] against
    [5,?,4]); with it, the engine builds under loopc's default profile, and each batch and trip count runs."""
    report = build(onnx.parser.parse_model(HEADER + writes()), tmp_path / "writes.plan", warn=lambda message: None)
    assert len(report.loops) == 1
    proto, model = load(writes())
    model.graph = PassManager(default_passes()).run(model.graph)
    import onnxruntime as ort

    oracle = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in (feeds(3, 4), feeds(1, 5), feeds(2, 0)):
        got = build_and_simulate(model, feed)[1]["states"]
        (want,) = oracle.run(None, feed)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_loop_keeps_its_body() -> None:
    """Only the initial value changes: the body's broadcast stays (a no-op from the start now)."""
    _, model = load(writes())
    run_alone(model, BroadcastCarries(), DeadCode())
    (loop,) = loops(model.graph)
    assert isinstance(loop, Loop) and "Expand" in [n.op for n in loop.body.nodes]
