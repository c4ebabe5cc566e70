"""Products read a Transpose of their operand's last two dims with ``MatrixOperation.TRANSPOSE``, and a weight
read before a loop and inside it is stored once in the engine.

TensorRT-RTX stores a [K, N] weight read by the prompt's product and by the loop's step twice, and once when
it is held [N, K] and both read it transposed (``benchmarks/weight_storage.py``); ``weight-layout`` holds it
so. The engine is searched for the weight's bytes, as held and transposed, as that benchmark counts copies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.compiler import build_plan, compile
from loopc.frontend.onnx import import_model
from loopc.precision import Precision
from loopc.trt import trt
from tests.backend.trt.oracle import check_onnx
from tests.passes.test_weight_layout import decoder, weight

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'
RNG = np.random.default_rng(3)


def products(network: Any) -> list[Any]:
    """The network's matrix multiply layers, downcast to read their operations."""
    found = []
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        if layer.type == trt().LayerType.MATRIX_MULTIPLY:
            layer.__class__ = trt().IMatrixMultiplyLayer
            found.append(layer)
    return found


def producers(network: Any) -> dict[str, Any]:
    """Each tensor's producing layer, by tensor name."""
    return {network.get_layer(i).get_output(k).name: network.get_layer(i)
            for i in range(network.num_layers) for k in range(network.get_layer(i).num_outputs)}


def operations(text: str, inputs: dict[str, np.ndarray]) -> list[tuple[str, str, str]]:
    """Check ``text`` against onnxruntime (loopc's network, no passes, simulated), then per product: its two
    operations and what makes its right operand (a layer's type, or the network input's name)."""
    check_onnx(text, inputs, rtol=1e-5, atol=1e-5)
    import onnx.parser

    from loopc.backend.trt import to_network

    _, network = to_network(import_model(onnx.parser.parse_model(text)))
    made = producers(network)
    found = []
    for layer in products(network):
        name = layer.get_input(1).name
        found.append((layer.op0.name, layer.op1.name, made[name].type.name if name in made else name))
    return found


def test_a_transposed_right_operand_is_read_transposed() -> None:
    ops = operations(f"""{HEADER}
        g (float[3,4] a, float[5,4] b) => (float[3,5] y) {{
            bt = Transpose <perm = [1, 0]> (b)
            y = MatMul(a, bt)
        }}""", {"a": RNG.standard_normal((3, 4)).astype(np.float32),
                "b": RNG.standard_normal((5, 4)).astype(np.float32)})
    assert ops == [("NONE", "TRANSPOSE", "b")]


def test_a_transposed_left_operand_of_a_batch_is_read_transposed() -> None:
    ops = operations(f"""{HEADER}
        g (float[2,4,3] a, float[2,4,5] b) => (float[2,3,5] y) {{
            at = Transpose <perm = [0, 2, 1]> (a)
            y = MatMul(at, b)
        }}""", {"a": RNG.standard_normal((2, 4, 3)).astype(np.float32),
                "b": RNG.standard_normal((2, 4, 5)).astype(np.float32)})
    assert [op[:2] for op in ops] == [("TRANSPOSE", "NONE")]


def test_a_gemm_with_trans_b_of_a_transposed_operand_reads_it_as_it_is() -> None:
    ops = operations(f"""{HEADER}
        g (float[3,4] a, float[4,5] b) => (float[3,5] y) {{
            bt = Transpose <perm = [1, 0]> (b)
            y = Gemm <transB = 1, alpha = 2.0> (a, bt)
        }}""", {"a": RNG.standard_normal((3, 4)).astype(np.float32),
                "b": RNG.standard_normal((4, 5)).astype(np.float32)})
    assert [op[:2] for op in ops] == [("NONE", "NONE")]


def test_a_transpose_of_other_dims_stays_a_shuffle() -> None:
    ops = operations(f"""{HEADER}
        g (float[3,3,4] a, float[3,2,4,5] b) => (float[2,3,3,5] y) {{
            bt = Transpose <perm = [1, 0, 2, 3]> (b)
            y = MatMul(a, bt)
        }}""", {"a": RNG.standard_normal((3, 3, 4)).astype(np.float32),
                "b": RNG.standard_normal((3, 2, 4, 5)).astype(np.float32)})
    assert ops == [("NONE", "NONE", "SHUFFLE")]


@pytest.mark.parametrize("half", [False, True], ids=["float32", "fp16"])
def test_a_weight_read_before_and_inside_a_loop_is_stored_once(half: bool) -> None:
    """256 x 256 (256 KiB in float32): found once in the engine, as Wᵀ, and never as W. Without the layout the
    engine holds both; in fp16 the products read a cast of the transposed weight, stored once in half."""
    if half and not trt().__name__.endswith("_rtx"):
        pytest.skip("loopc retypes networks to half precision for TensorRT-RTX only")
    w = weight(256, 256)
    compiled = compile(decoder("W", {"W": w}, k=256), precision=Precision.of(fp16=half))
    assert [(p.op0.name, p.op1.name) for p in products(compiled.network)] == [("NONE", "TRANSPOSE")] * 2
    plan, _ = build_plan(compiled)
    held = w.astype(np.float16) if half else w
    assert (plan.count(held.tobytes()), plan.count(np.ascontiguousarray(held.T).tobytes())) == (0, 1)
