"""ScatterToConcat alone: ``out[t] = y`` on a carried buffer becomes a concatenated output of the rows.

The models are PyTorch's export of ``out = init.clone(); for t in range(n): out[t] = tanh(x[t])``: the
buffer's next value is ``ScatterND(out, [[t]], y[None])``. The buffer starts as an input, not zeros, so
rows the loop never writes (``n`` below the buffer's 6 rows) must keep the initial buffer's values.
"""

from __future__ import annotations

import numpy as np
import pytest

from loopc.passes import ScatterToConcat
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

#: ``{index}`` makes ``index`` ([1, 1]) from the counter ``t``; ``{update}`` makes ``y`` ([3]) from
#: ``row = tanh(x[t])``; ``{scatter}`` is the ScatterND's attributes. Every trip also emits ``Shape(buf)``.
BUFFER = """
g (int64 n, float[6,3] x, float[6,3] init) => (float[6,3] out, int64[T,2] shapes) {{
  out, shapes = Loop (n, , init) <body = b (int64 t, bool c, float[6,3] buf) => (bool c_out, float[6,3] buf_next, int64[2] whole) {{
    c_out = Constant <value = bool {{1}}> ()
    one_one = Constant <value = int64[2] {{1, 1}}> ()
    one = Constant <value = int64 {{1}}> ()
    {index}
    x_row = Gather <axis = 0> (x, t)
    row = Tanh(x_row)
    {update}
    zero = Constant <value = int64[1] {{0}}> ()
    update = Unsqueeze(y, zero)
    buf_next = ScatterND {scatter}(buf, index, update)
    whole = Shape(buf)
  }}>
}}
"""
AT_T = "index = Reshape(t, one_one)"
ROW = "y = Identity(row)"
#: the exporter's shape read of the row being written: ``y = row.reshape(out[t].shape)``
SHAPED_LIKE_THE_ROW = "current = Gather <axis = 0> (buf, t)\n    current_shape = Shape(current)\n" \
                      "    y = Reshape(row, current_shape)"
X = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
INIT = np.arange(18, dtype=np.float32).reshape(6, 3) + 10


def model(index: str = AT_T, update: str = ROW, scatter: str = "") -> str:
    return BUFFER.format(index=index, update=update, scatter=scatter)


def feeds(n: int) -> dict[str, np.ndarray]:
    return {"n": np.array(n, np.int64), "x": X, "init": INIT}


@pytest.mark.parametrize("update", [ROW, SHAPED_LIKE_THE_ROW], ids=["plain row", "row shaped like out[t]"])
@pytest.mark.parametrize("n", [0, 4, 6])
def test_a_buffer_written_at_the_counter_becomes_a_concatenated_output(update: str, n: int) -> None:
    proto, ir = load(model(update=update))
    assert run_alone(ir, ScatterToConcat()) == {"scatter-to-concat.buffers": 1}
    (loop,) = loops(ir.graph)
    assert not loop.recurrences
    assert [o.kind for o in loop.loop_outputs] == ["concat", "concat"]
    assert not any(node.op in ("ScatterND", "Gather") and node.inputs[0] is not None and node.inputs[0].name == "buf"
                   for node in loop.body.nodes)
    assert_matches_onnxruntime(proto, ir, feeds(n))


@pytest.mark.parametrize(("index", "update", "scatter"), [
    ("next_t = Add(t, one)\n    index = Reshape(next_t, one_one)", ROW, ""),
    (AT_T, "current = Gather <axis = 0> (buf, t)\n    y = Add(row, current)", ""),
    (AT_T, ROW, '<reduction = "add"> '),
], ids=["written one row ahead of the counter", "its values read, not only its shape", "an accumulating scatter"])
def test_a_buffer_whose_rows_are_not_just_the_trips_rows_stays(index: str, update: str, scatter: str) -> None:
    proto, ir = load(model(index, update, scatter))
    assert run_alone(ir, ScatterToConcat()) == {}
    (loop,) = loops(ir.graph)
    assert len(loop.recurrences) == 1
    assert_matches_onnxruntime(proto, ir, feeds(5))
