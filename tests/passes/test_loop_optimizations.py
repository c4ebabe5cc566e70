"""The loop optimizations (inline-one-trip, scatter-to-concat, loop-distribution), on the models they are
for, with and without them: PyTorch time loops around a cell and linear-attention recurrences from the
corpus (tests/models/torch). Each network is simulated against onnxruntime on the same model, and
against the eager PyTorch module (the corpus's expected values); the optimized loop is checked for
what was taken out of it.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest

from loopc.compiler import compile
from tests.corpus import load_arrays
from loopc.ir import Loop
from loopc.passes import OPTIMIZATIONS
from loopc.sim import simulate

TORCH = pathlib.Path(__file__).resolve().parents[1] / "models" / "torch"
MODELS = ["lstm_cell_loop", "gru_cell_loop", "chunk_lstm_loop", "linear_attention", "retention_decay",
          "lstm_bidir_2layer", "gru_bidir_2layer"]


def outputs(name: str, disabled: tuple[str, ...]) -> tuple[Loop, dict[str, np.ndarray]]:
    compiled = compile(str(TORCH / f"{name}.onnx"), disabled=disabled)
    got = simulate(compiled.network, load_arrays(str(TORCH / f"{name}.inputs.npz")))
    loops = [node for _, node in compiled.model.graph.walk() if isinstance(node, Loop)]
    return loops[0], got


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("disabled", [(), tuple(OPTIMIZATIONS)], ids=["optimized", "O0"])
def test_matches_onnxruntime_and_pytorch_with_and_without(name: str, disabled: tuple[str, ...]) -> None:
    _, got = outputs(name, disabled)
    session = ort.InferenceSession(str(TORCH / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    runtime = dict(zip([o.name for o in session.get_outputs()],
                       session.run(None, load_arrays(str(TORCH / f"{name}.inputs.npz")))))
    pytorch = load_arrays(str(TORCH / f"{name}.expected.npz"))
    assert set(runtime) == set(pytorch) == set(got)
    for key in runtime:
        np.testing.assert_allclose(got[key], runtime[key], rtol=1e-4, atol=1e-5, err_msg=f"{key} vs onnxruntime")
        np.testing.assert_allclose(got[key], pytorch[key], rtol=1e-4, atol=1e-5, err_msg=f"{key} vs PyTorch")


def _matmuls(loop: Loop) -> int:
    return sum(node.op in ("MatMul", "Gemm", "Einsum") for _, node in loop.body.walk())


@pytest.mark.parametrize(("name", "before", "after"), [
    # x[t]·Wᵀ and the head leave; h·Rᵀ stays (the nested 1-trip LSTM loop is inlined first)
    ("lstm_cell_loop", 3, 1),
    # out[t] = head(h) is a concatenated output, so the head leaves too; x[t]·Wᵀ leaves
    ("gru_cell_loop", 3, 1),
    ("chunk_lstm_loop", 2, 1),
    # the projections leave; the state update and read-out stay
    ("linear_attention", 6, 3),
    # the projections and the read-out (which only feeds y) leave: the state's update is what stays
    ("retention_decay", 4, 0),
])
def test_iteration_parallel_products_leave_the_loop(name: str, before: int, after: int) -> None:
    plain, _ = outputs(name, tuple(OPTIMIZATIONS))
    optimized, _ = outputs(name, ())
    assert (_matmuls(plain), _matmuls(optimized)) == (before, after)
    assert not any(isinstance(node, Loop) for _, node in optimized.body.walk())  # no nested loop left
    assert not any(node.op == "ScatterND" for node in optimized.body.nodes)


def test_each_optimization_can_be_left_out() -> None:
    loop, _ = outputs("lstm_cell_loop", ("loop-distribution",))
    assert _matmuls(loop) == 3  # inlined, but nothing moved out
    loop, _ = outputs("lstm_cell_loop", ("inline-one-trip",))
    assert any(isinstance(node, Loop) for _, node in loop.body.walk())
    loop, _ = outputs("gru_cell_loop", ("scatter-to-concat",))
    assert any(node.op == "ScatterND" for node in loop.body.nodes)
    with pytest.raises(ValueError, match="cannot disable dead-code"):
        compile(str(TORCH / "lstm_cell_loop.onnx"), disabled=("dead-code",))
