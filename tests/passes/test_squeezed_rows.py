"""SqueezedRows alone: ``Squeeze(Slice(x, s, s + 1))`` at a data start ``s`` becomes ``Gather(x, s)``."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.passes import ConstantFolding, SqueezedRows
from tests.passes.alone import assert_matches_onnxruntime, load, run_alone

TABLE = np.arange(24, dtype=np.float32).reshape(6, 4) - 7

#: ``dynamic_slice(table, (k, c), (1, w))`` squeezed on ``{squeeze}``, as jax2onnx writes it; ``{col}`` is
#: the second axis's start, ``{sizes}`` both lengths.
LOOKUP = """
g (float[6,4] table, int64 k) => (float[?] row) {{
    axis0 = Constant <value = int64[1] {{0}}> ()
    at = Unsqueeze (k, axis0)
    col = Constant <value = int64[1] {{{col}}}> ()
    starts = Concat <axis = 0> (at, col)
    sizes = Constant <value = int64[2] {{{sizes}}}> ()
    ends = Add (starts, sizes)
    axes = Constant <value = int64[2] {{0, 1}}> ()
    window = Slice (table, starts, ends, axes)
    squeezed = Constant <value = int64[1] {{{squeeze}}}> ()
    row = Squeeze (window, squeezed)
}}
"""


def lookup(col: int = 0, sizes: str = "1, 4", squeeze: int = 0) -> str:
    return LOOKUP.format(col=col, sizes=sizes, squeeze=squeeze)


def ops(model: object) -> list[str]:
    return [node.op for node in model.graph.nodes]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("col", "sizes"), [(0, "1, 4"), (1, "1, 2")], ids=["whole-rows", "part-of-a-row"])
def test_a_squeezed_one_row_slice_at_a_data_start_is_a_gather(col: int, sizes: str) -> None:
    proto, model = load(lookup(col, sizes))
    assert run_alone(model, ConstantFolding(), SqueezedRows()) == {"squeezed-rows.slices": 1}
    assert "Gather" in ops(model) and "Squeeze" not in ops(model)
    for k in (0, 3, 5, -2, -6):  # a negative start counts from the end in both (-1 ends at 0: no row)
        feeds = {"table": TABLE, "k": np.array(k, np.int64)}
        assert_matches_onnxruntime(proto, model, feeds)
        width = int(sizes.split(",")[1])
        np.testing.assert_array_equal(model_row(model, feeds), TABLE[k, col:col + width])


def model_row(model: object, feeds: dict[str, np.ndarray]) -> np.ndarray:
    from loopc.ir.interpret import interpret

    return np.asarray(interpret(model.graph, feeds)[0])  # type: ignore[attr-defined]


@pytest.mark.parametrize(("col", "sizes", "squeeze"), [
    (0, "2, 4", 0),
    (-1, "1, 1", 0),
    (0, "1, 1", 1),
], ids=["two rows", "a negative constant start", "the squeeze is of another axis"])
def test_a_slice_that_is_not_one_squeezed_row_stays(col: int, sizes: str, squeeze: int) -> None:
    _, model = load(lookup(col, sizes, squeeze))
    run_alone(model, ConstantFolding(), SqueezedRows())
    assert "Slice" in ops(model) and "Gather" not in ops(model)


#: tf2onnx's ``toks[:, i]``: ends raised to 1e9 through a float Max, a step of 1e9 on ``i``'s axis.
STRIDED = """
g (int32[2,5] toks, int32 i) => (int32[?] col) {
    zero1 = Constant <value = int32[1] {0}> ()
    axis0 = Constant <value = int64[1] {0}> ()
    at = Unsqueeze (i, axis0)
    starts = Concat <axis = 0> (zero1, at)
    one = Constant <value = int32 {1}> ()
    after = Add (i, one)
    end_at = Unsqueeze (after, axis0)
    plain_ends = Concat <axis = 0> (zero1, end_at)
    float_ends = Cast <to = 1> (plain_ends)
    far = Constant <value = float[2] {1e9, 1e9}> ()
    raised = Max (float_ends, far)
    ends = Cast <to = 6> (raised)
    axes = Constant <value = int32[2] {0, 1}> ()
    steps = Constant <value = int32[2] {1, 1000000000}> ()
    window = Slice (toks, starts, ends, axes, steps)
    squeezed = Constant <value = int64[1] {1}> ()
    col = Squeeze (window, squeezed)
}
"""


def test_tf2onnx_strided_column_at_a_data_index_is_a_gather() -> None:
    proto, model = load(STRIDED)
    assert run_alone(model, ConstantFolding(), SqueezedRows()) == {"squeezed-rows.slices": 1}
    assert "Gather" in ops(model) and "Slice" not in ops(model)
    toks = np.arange(10, dtype=np.int32).reshape(2, 5)
    for i in (0, 4, -1, -5, -7):  # below -5 a Slice starts at the first column: so must the Gather
        feeds = {"toks": toks, "i": np.array(i, np.int32)}
        assert_matches_onnxruntime(proto, model, feeds)
        np.testing.assert_array_equal(model_row(model, feeds), toks[:, max(i, -5)])
