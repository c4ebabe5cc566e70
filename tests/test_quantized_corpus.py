"""Quantized weights stay quantized: the corpus of quantized loop models (``tests/models/quantized``, made by
onnxruntime's quantizer and NVIDIA ModelOpt) reaches TensorRT with each weight DequantizeLinear as a Dequantize
layer over a constant of the quantized type, so the network holds a quarter (int8, fp8) or an eighth (int4) of
the float weights' bytes. (That each case builds and matches onnxruntime is ``tests/test_corpus.py``'s.)"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Iterator

import numpy as np
import onnx
import pytest

from loopc.compiler import compile as compile_model
from loopc.trt.dtypes import held_bytes
from loopc.onnx_graphs import subgraphs
from loopc.trt import trt
from tests.corpus import load_manifest

HERE = pathlib.Path(__file__).resolve().parent / "models" / "quantized"
CASES = load_manifest(HERE / "cases.toml")
#: Types a quantized weight is held in.
QUANTIZED = ("INT8", "FP8", "INT4")
#: onnx element types of quantized weights (int32 DQs are quantized biases, folded to float as TensorRT wants).
WEIGHT_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT4, onnx.TensorProto.UINT4,
                onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E5M2}


def weight_dequantizes(model: onnx.ModelProto) -> int:
    """The model's DequantizeLinear nodes of a constant quantized weight (an initializer or Constant of an integer
    or float8 type, or a QuantizeLinear of a float constant, as ModelOpt writes them), at every depth."""
    graphs = [model.graph, *subgraphs(model.graph)]
    constants = {t.name: t.data_type for g in graphs for t in g.initializer}
    constants |= {n.output[0]: a.t.data_type for g in graphs for n in g.node if n.op_type == "Constant"
                  for a in n.attribute if a.name == "value"}
    quantized = {n.output[0]: _output_type(n) for g in graphs for n in g.node
                 if n.op_type == "QuantizeLinear" and n.input[0] in constants}
    return sum(1 for g in graphs for n in g.node if n.op_type == "DequantizeLinear"
               and (constants.get(n.input[0]) in WEIGHT_TYPES or n.input[0] in quantized))


def _output_type(node: onnx.NodeProto) -> int:
    return next((a.i for a in node.attribute if a.name == "output_dtype" and a.i), onnx.TensorProto.UINT8)


def _layers(network: object) -> Iterator[object]:
    for i in range(network.num_layers):  # type: ignore[attr-defined]
        yield network.get_layer(i)  # type: ignore[attr-defined]


def quantized_weight_layers(network: object) -> list[object]:
    """The Dequantize layers of ``network`` that read a constant of a quantized type."""
    made = {layer.get_output(k).name: layer for layer in _layers(network) for k in range(layer.num_outputs)}
    found = []
    for layer in _layers(network):
        if layer.type == trt().LayerType.DEQUANTIZE:
            source = made.get(layer.get_input(0).name)
            if source is not None and source.type == trt().LayerType.CONSTANT \
                    and layer.get_input(0).dtype.name in QUANTIZED:
                found.append(layer)
    return found


def dequantized_bytes(layer: object) -> float:
    """The bytes a Dequantize layer's constant operands hold (the weight at its type's width, its scale)."""
    return sum(held_bytes(t.dtype.name, math.prod(tuple(t.shape)))
               for t in (layer.get_input(k) for k in range(layer.num_inputs)) if t is not None)  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_weight_dequantize_is_a_dequantize_layer_over_a_quantized_constant(case) -> None:  # noqa: ANN001
    model = onnx.load(case.model)
    network = compile_model(case.model).network
    assert len(quantized_weight_layers(network)) == weight_dequantizes(model)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_quantized_weights_hold_a_quarter_of_the_float_bytes_or_less(case) -> None:  # noqa: ANN001
    """A quantized weight and its scales hold at most 0.3 of its float32 bytes (int8, fp8), 0.2 (int4)."""
    layers = quantized_weight_layers(compile_model(case.model).network)
    held = sum(dequantized_bytes(layer) for layer in layers)
    as_float = sum(4 * float(np.prod(tuple(layer.get_input(0).shape))) for layer in layers)
    limit = 0.2 if "int4" in case.name else 0.3
    assert held <= limit * as_float, (held, as_float)
