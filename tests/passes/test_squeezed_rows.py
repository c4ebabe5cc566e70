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
