"""``loopc export`` keeps the quantized corpus' Q/DQ form, so TensorRT's own ONNX parser builds from the export the
network loopc builds: each weight DequantizeLinear a Dequantize layer over an INT8, FP8 or INT4 constant.

The parser reads several of these sources less well than their exports: it refuses onnxruntime's int32 bias DQs and
the greedy decoders' sequences, and keeps ModelOpt's float weight → QuantizeLinear as a Quantize layer over a float
constant; the export has folded each. Every case's parser network builds, the block-wise INT4 ones included:
the parser gives their Dequantize layers no ``block_shape`` (TensorRT infers the blocks from the scale's shape),
and TensorRT-RTX builds that form, though it refuses INT4 with ``block_shape`` set ("Blockwise dequantization
requires input type to be int8 or fp8e4m3 or fp4e2m1").
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from loopc.backend.trt.context import packed_nibbles
from loopc.compiler import compile as compile_model
from loopc.exporter import export_model
from loopc.fileio import load_arrays
from loopc.onnx_graphs import subgraphs
from loopc.trt.dtypes import FOUR_BIT
from loopc.trt.onnx_parser import parse_onnx
from tests.backend.onnx.cases import onnxruntime_outputs
from tests.corpus import Case, compare, parser_plan
from tests.test_quantized_corpus import CASES, WEIGHT_TYPES, quantized_weight_layers, weight_dequantizes

#: A weight this long is found in an engine by its bytes only if the engine holds it (shorter ones may recur).
FINGERPRINT_BYTES = 64


@pytest.fixture(scope="module")
def exports() -> dict[str, onnx.ModelProto]:
    return {}


def exported(case: Case, cache: dict[str, onnx.ModelProto]) -> onnx.ModelProto:
    if case.name not in cache:
        cache[case.name] = export_model(case.model)[0]
    return cache[case.name]


def held_types(network: object) -> Counter[str]:
    """How many weight Dequantize layers read a constant of each quantized type."""
    return Counter(layer.get_input(0).dtype.name for layer in quantized_weight_layers(network))  # type: ignore[attr-defined]


def weight_initializers(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The quantized initializers a DequantizeLinear reads, at any depth (an export's are all in its main graph)."""
    graphs = [model.graph, *subgraphs(model.graph)]
    tensors = {t.name: t for g in graphs for t in g.initializer if t.data_type in WEIGHT_TYPES}
    read = {n.input[0] for g in graphs for n in g.node if n.op_type == "DequantizeLinear"}
    return [tensors[name] for name in sorted(read & set(tensors))]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_export_matches_onnxruntime(case: Case, exports: dict[str, onnx.ModelProto]) -> None:
    """onnxruntime (graph optimizations off, as for the corpus' expected outputs) on the export."""
    got = onnxruntime_outputs(exported(case, exports), load_arrays(case.inputs))
    result = compare(got, load_arrays(case.expected), case.rtol, case.atol)
    assert result.ok, result.detail


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_parser_reads_each_weight_dequantize_of_the_export_as_loopc_does(
        case: Case, exports: dict[str, onnx.ModelProto]) -> None:
    model = exported(case, exports)
    source = weight_dequantizes(onnx.load(case.model))
    parser = held_types(parse_onnx(model).network)
    loopc = held_types(compile_model(case.model).network)
    assert source > 0
    assert (weight_dequantizes(model), parser.total(), parser) == (source, source, loopc)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_parser_builds_the_export_holding_its_quantized_weights(
        case: Case, exports: dict[str, onnx.ModelProto]) -> None:
    """The plan holds each quantized weight byte for byte as the export stores it (INT4 two to a byte), or
    transposed: a Dequantize the builder fuses into a product keeps its weight [out, in], as a GEMM reads it."""
    model = exported(case, exports)
    plan = parser_plan(model)
    weights = [t for t in weight_initializers(model) if len(t.raw_data) >= FINGERPRINT_BYTES]
    assert weights
    missing = [t.name for t in weights if t.raw_data not in plan
               and ((flipped := _transposed_bytes(t)) is None or flipped not in plan)]
    assert missing == []


def _transposed_bytes(tensor: onnx.TensorProto) -> bytes | None:
    """A 2-D weight's bytes as TensorRT holds it transposed (4-bit values packed two to a byte); None for others."""
    array = numpy_helper.to_array(tensor)
    if array.ndim != 2:
        return None
    flipped = np.ascontiguousarray(array.T)
    return packed_nibbles(flipped).tobytes() if flipped.dtype in FOUR_BIT else flipped.tobytes()
