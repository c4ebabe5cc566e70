"""Check a text ONNX model end to end: import, convert, build with the real builder, simulate,
and compare with onnxruntime on the same inputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort

from loopc.backend.trt import to_network
from loopc.frontend.onnx import import_model
from loopc.sim import simulate
from loopc.trt.config import build_serialized, builder_config, pin_profile


def build_and_simulate(model: Any, inputs: Mapping[str, np.ndarray]) -> tuple[Any, dict[str, np.ndarray]]:
    """Convert an IR model, build it (the builder must accept it), and simulate it."""
    session, network = to_network(model)
    cfg = builder_config(session)
    pin_profile(session, network, cfg, inputs)
    build_serialized(session, network, cfg)
    return network, simulate(network, inputs)


def check_onnx(text: str, inputs: Mapping[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-6) -> dict[str, Any]:
    """Run the model through loopc and onnxruntime; assert the outputs agree and return loopc's."""
    proto = onnx.parser.parse_model(text)
    onnx.checker.check_model(proto)
    ir = import_model(proto)
    network, got = build_and_simulate(ir, inputs)
    names = [o.name for o in proto.graph.output]
    assert [network.get_output(i).name for i in range(network.num_outputs)] == names
    options = ort.SessionOptions()
    # op by op, as ONNX defines them: onnxruntime's fusions (a Q/DQ pair and a MatMul into an int8 kernel) round
    # otherwise
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    oracle = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    want = oracle.run(names, dict(inputs))
    for name, expected in zip(names, want):
        assert got[name].shape == expected.shape, f"{name}: shape {got[name].shape} != {expected.shape}"
        assert got[name].dtype == expected.dtype, f"{name}: dtype {got[name].dtype} != {expected.dtype}"
        np.testing.assert_allclose(got[name], expected, rtol=rtol, atol=atol, err_msg=name)
    return got
