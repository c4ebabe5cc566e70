"""benchmarks/loop_work.py's own arithmetic, against hand-counted values."""

from __future__ import annotations

from benchmarks.loop_work import fused_kernels, recurrent_limit, recurrent_model, wavefront_limit


def test_a_run_of_pointwise_layers_is_one_kernel_and_a_shuffle_none() -> None:
    path = ["MATRIX_MULTIPLY", "ELEMENTWISE", "ACTIVATION", "SHUFFLE", "ELEMENTWISE", "MATRIX_MULTIPLY",
            "SLICE", "ACTIVATION"]
    assert fused_kernels(path) == 4  # GEMM, (add, sigmoid, -, mul), GEMM, (slice, tanh)
    assert fused_kernels([]) == 0
    assert fused_kernels(["SHUFFLE", "CONSTANT"]) == 0


def test_the_limit_of_stacked_recurrent_layers() -> None:
    """Per trip, h·Rᵀ only: batch 2 × (4 gates · 4 hidden) × 4 hidden per layer and direction."""
    lstm = recurrent_limit(recurrent_model("LSTM", 2, "bidirectional", 5, 2, 3, 4))
    assert lstm is not None
    limit, seq = lstm
    assert seq == 5
    assert limit.macs_per_iteration == 2 * 2 * (2 * 16 * 4)  # layers × directions × (batch × 4H × H)
    assert (limit.kernels_per_trip, limit.serial_kernels, limit.loops) == (2 * 2, 5 * 2 * 2, 2)
    gru = recurrent_limit(recurrent_model("GRU", 1, "forward", 7, 1, 3, 4, lbr=0))
    assert gru is not None
    assert gru[0].macs_per_iteration == 1 * 12 * 4 and gru[0].kernels_per_trip == 4  # r ⊙ h before the 2nd GEMM


def test_loopc_multiplies_a_gru_state_by_3h_squared_per_row_without_linear_before_reset(tmp_path) -> None:
    """h·[Rz|Rr]ᵀ and (r ⊙ h)·Rhᵀ: the limit, not h·Rᵀ (all three gates) and (r ⊙ h)·Rhᵀ again (4H²)."""
    import loopc
    import onnx

    from benchmarks.loop_work import work_of

    model = recurrent_model("GRU", 1, "forward", 6, 2, 3, 5, lbr=0)
    path = tmp_path / "gru.onnx"
    onnx.save(model, str(path))
    compiled = loopc.compile(str(path))
    limit = recurrent_limit(model)
    assert limit is not None
    assert work_of(compiled.network, 6).macs_per_iteration == limit[0].macs_per_iteration == 2 * 3 * 5 * 5


def test_the_wavefront_limit_of_a_forward_stack() -> None:
    """One loop for 2 layers: per trip both layers' h·Rᵀ and the upper layer's x·Wᵀ (x is the lower
    layer's state, H wide): batch 2 × 4H × (H + H + H) with H = 4; 5 + 2 − 1 steps of 2 kernels."""
    model = recurrent_model("LSTM", 2, "forward", 5, 2, 3, 4)
    limit = wavefront_limit(model)
    assert limit is not None
    assert limit.macs_per_iteration == 2 * 16 * (4 + 4 + 4)
    assert (limit.kernels_per_trip, limit.serial_kernels, limit.loops) == (2, 6 * 2, 1)
    gru = wavefront_limit(recurrent_model("GRU", 3, "forward", 5, 1, 3, 4, lbr=0))
    assert gru is not None and (gru.kernels_per_trip, gru.serial_kernels) == (4, 7 * 4)
    assert wavefront_limit(recurrent_model("LSTM", 2, "bidirectional", 5, 2, 3, 4)) is None
    assert wavefront_limit(recurrent_model("LSTM", 1, "forward", 5, 2, 3, 4)) is None


def test_products_outside_every_loop_are_hoisted_macs_convolutions_too() -> None:
    """A Conv (X [1, 2, 8] * K [4, 2, 3] -> [1, 4, 6]: 24 outputs × 2 channels × 3 taps = 144) then a MatMul
    ([1, 4, 6] x [6, 5]: 4 × 5 × 6 = 120), no loop: every MAC is hoisted."""
    import loopc
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from benchmarks.loop_work import work_of

    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["X", "K"], ["C"]), helper.make_node("MatMul", ["C", "W"], ["Y"])], "conv_matmul",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4, 5])],
        [numpy_helper.from_array(rng.standard_normal((4, 2, 3)).astype(np.float32), "K"),
         numpy_helper.from_array(rng.standard_normal((6, 5)).astype(np.float32), "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    work = work_of(loopc.compile(model).network, None)
    assert (work.loops, work.macs_hoisted, work.macs_per_run) == (0, 144 + 120, 144 + 120)
