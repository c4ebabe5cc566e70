"""DroppedWrites alone: a ScatterND that keeps its in-range writes through NonZero writes the others to a
spare row instead, and computes the same."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.passes import ConstantFolding, DeadCode, DroppedWrites
from tests.passes.alone import assert_matches_onnxruntime, load, run_alone

#: ``x.at[idx].set(v, mode="drop")`` as jax2onnx writes it: the rows of ``idx`` inside ``[0, 4]`` are kept.
DROPPING = """
g (float[5,2] x, int64[3,1] idx, float[3,2] v) => (float[5,2] y) {{
    zero = Constant <value = int64 {{0}}> ()
    last = Constant <value = int64 {{4}}> ()
    one1 = Constant <value = int64[1] {{1}}> ()
    ge = GreaterOrEqual (idx, zero)
    le = LessOrEqual (idx, last)
    ok = And (ge, le)
    ok_flat = Squeeze (ok, one1)
    valid = NonZero (ok_flat)
    valid_t = Transpose <perm = [1, 0]> (valid)
    valid_flat = Squeeze (valid_t, one1)
    kept_idx = Gather <axis = 0> (idx, valid_flat)
    kept_v = Gather <axis = 0> ({updates}, valid_flat)
    y = ScatterND (x, kept_idx, kept_v)
}}
"""
X = np.arange(10, dtype=np.float32).reshape(5, 2)
V = -np.arange(1, 7, dtype=np.float32).reshape(3, 2)


@pytest.mark.parametrize("indices", [[3, 7, 0], [-1, 2, 5], [9, 9, 9], [0, 1, 4]],
                         ids=["one out", "out on both sides", "all out", "all in"])
def test_out_of_range_writes_go_to_a_spare_row(indices: list[int]) -> None:
    proto, model = load(DROPPING.format(updates="v"))
    assert run_alone(model, ConstantFolding(), DroppedWrites(), DeadCode()).get("dropped-writes.scatters") == 1
    assert "NonZero" not in [node.op for node in model.graph.nodes]
    idx = np.array(indices, np.int64).reshape(3, 1)
    assert_matches_onnxruntime(proto, model, {"x": X, "idx": idx, "v": V})
    from loopc.ir.interpret import interpret

    want = X.copy()
    for row, at in zip(V, indices):
        if 0 <= at <= 4:
            want[at] = row
    np.testing.assert_array_equal(interpret(model.graph, {"x": X, "idx": idx, "v": V})[0], want)


def test_updates_gathered_at_other_positions_stay() -> None:
    """Updates not gathered at the positions the indices are: not the dropping write."""
    text = DROPPING.format(updates="v").replace("kept_v = Gather <axis = 0> (v, valid_flat)",
                                                "idx_flat = Squeeze (idx, one1)\n    kept_v = Gather <axis = 0> (v, idx_flat)")
    _, model = load(text)
    assert run_alone(model, ConstantFolding(), DroppedWrites()) == {}
    assert "NonZero" in [node.op for node in model.graph.nodes]


def test_rows_of_a_dynamic_width_get_a_spare_row_copied_from_the_data() -> None:
    """Rows whose width is known only at run time (a decoder's batch): no constant spare row could have it."""
    text = DROPPING.format(updates="v").replace("float[5,2] x", "float[5,N] x").replace(
        "float[3,2] v", "float[3,N] v").replace("float[5,2] y", "float[5,N] y")
    proto, model = load(text)
    assert run_alone(model, ConstantFolding(), DroppedWrites(), DeadCode()).get("dropped-writes.scatters") == 1
    assert "NonZero" not in [node.op for node in model.graph.nodes]
    for width in (1, 4):
        x = np.arange(5 * width, dtype=np.float32).reshape(5, width)
        v = -np.arange(1, 3 * width + 1, dtype=np.float32).reshape(3, width)
        for indices in ([3, 7, 0], [9, -1, 9]):
            idx = np.array(indices, np.int64).reshape(3, 1)
            assert_matches_onnxruntime(proto, model, {"x": x, "idx": idx, "v": v})
