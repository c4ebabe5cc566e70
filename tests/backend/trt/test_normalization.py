"""BatchNormalization (inference) and InstanceNormalization against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx.parser
import pytest

from loopc.backend.trt import to_network
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3, 5)).astype(np.float32) * 2 + 1


def _stats(c: int) -> dict[str, np.ndarray]:
    return {"s": RNG.uniform(0.5, 2, c).astype(np.float32), "b": RNG.standard_normal(c).astype(np.float32),
            "m": RNG.standard_normal(c).astype(np.float32), "v": RNG.uniform(0.1, 3, c).astype(np.float32)}


def _const(name: str, a: np.ndarray) -> str:
    return f"{name} = Constant <value = float[{a.size}] {{{', '.join(repr(float(v)) for v in a)}}}> ()"


@pytest.mark.parametrize("dims", ["2,3,5", "N,3,T"])
def test_batch_norm_with_constant_statistics(dims):
    stats = _stats(3)
    consts = "\n".join(_const(k, v) for k, v in stats.items())
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (float[{dims}] y) {{
            {consts}
            y = BatchNormalization <epsilon = 0.001> (x, s, b, m, v)
        }}""", {"x": X}, rtol=1e-5, atol=1e-5)


def test_batch_norm_of_rank2_with_statistics_as_inputs():
    stats = _stats(3)
    check_onnx(f"""{HEADER}
        g (float[N,3] x, float[3] s, float[3] b, float[3] m, float[3] v) => (float[N,3] y) {{
            y = BatchNormalization(x, s, b, m, v)
        }}""", {"x": X[:, :, 0], **stats}, rtol=1e-5, atol=1e-5)


def test_batch_norm_opset_7_with_spatial_attribute():
    stats = _stats(3)
    consts = "\n".join(_const(k, v) for k, v in stats.items())
    check_onnx(f"""<ir_version: 4, opset_import: ["" : 7]>
        g (float[2,3,5] x) => (float[2,3,5] y) {{
            {consts}
            y = BatchNormalization <spatial = 1> (x, s, b, m, v)
        }}""", {"x": X}, rtol=1e-5, atol=1e-5)


def test_batch_norm_training_mode_is_refused_by_node():
    stats = _stats(3)
    consts = "\n".join(_const(k, v) for k, v in stats.items())
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float[2,3,5] x) => (float[2,3,5] y) {{
            {consts}
            y, rm, rv = BatchNormalization <training_mode = 1> (x, s, b, m, v)
        }}""")
    with pytest.raises(UnsupportedConversionError, match="BatchNormalization.*training mode"):
        to_network(import_model(proto))


@pytest.mark.parametrize("dims", ["2,3,5", "N,3,T"])
def test_instance_norm(dims):
    stats = _stats(3)
    check_onnx(f"""{HEADER}
        g (float[{dims}] x, float[3] s, float[3] b) => (float[{dims}] y) {{
            y = InstanceNormalization <epsilon = 0.01> (x, s, b)
        }}""", {"x": X, "s": stats["s"], "b": stats["b"]}, rtol=1e-4, atol=1e-5)


def test_instance_norm_rank4():
    x = RNG.standard_normal((2, 3, 4, 2)).astype(np.float32)
    stats = _stats(3)
    check_onnx(f"""{HEADER}
        g (float[2,3,4,2] x, float[3] s, float[3] b) => (float[2,3,4,2] y) {{ y = InstanceNormalization(x, s, b) }}""",
               {"x": x, "s": stats["s"], "b": stats["b"]}, rtol=1e-4, atol=1e-5)
