"""BatchNormalization (inference) and InstanceNormalization against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.backend.trt import to_network
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from loopc.trt import trt
from tests.backend.trt.oracle import build_and_simulate, check_onnx

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


# -- LayerNormalization ----------------------------------------------------------------------------

X4 = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32) * 3 - 1


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_layer_norm_with_mean_and_inv_std_dev_outputs(axis):
    """The training outputs were an internal error ("value 'Mean' has no tensor"): now reductions."""
    shape = X4.shape[axis % 4:]
    s, b = RNG.uniform(0.5, 2, shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
    dims = ",".join(map(str, shape))
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 17]>
        g (float[2,3,4,5] x, float[{dims}] s, float[{dims}] b) => (float[2,3,4,5] y, float[A,B,C,D] mean,
                                                                float[E,F,G,H] inv) {{
            y, mean, inv = LayerNormalization <axis = {axis}, epsilon = 0.01> (x, s, b)
        }}""", {"x": X4, "s": s, "b": b}, rtol=1e-4, atol=1e-5)


def test_layer_norm_with_inv_std_dev_only_no_bias_and_dynamic_shape():
    s = RNG.uniform(0.5, 2, 5).astype(np.float32)
    check_onnx("""<ir_version: 8, opset_import: ["" : 17]>
        g (float[N,3,4,5] x, float[5] s) => (float[N,3,4,5] y, float[N,3,4,1] inv) {
            y, , inv = LayerNormalization(x, s)
        }""", {"x": X4, "s": s}, rtol=1e-4, atol=1e-5)


def test_layer_norm_of_float16_keeps_its_statistics_in_float32():
    """stash_type 1 (the default): Mean and InvStdDev are float32 for a float16 input."""
    s = np.ones(5, np.float16)
    check_onnx("""<ir_version: 8, opset_import: ["" : 17]>
        g (float16[2,3,4,5] x, float16[5] s) => (float16[2,3,4,5] y, float[2,3,4,1] mean) {
            y, mean = LayerNormalization(x, s)
        }""", {"x": X4.astype(np.float16), "s": s}, rtol=2e-3, atol=2e-3)


# -- GroupNormalization ----------------------------------------------------------------------------


@pytest.mark.parametrize("dims, groups", [("2,4,3,5", 2), ("N,4,T", 4), ("2,6,7", 3), ("2,4,3,5", 1)])
def test_group_norm(dims, groups):
    shape = tuple(int(d) if d.isdigit() else 3 for d in dims.split(","))
    c = shape[1]
    x = RNG.standard_normal(shape).astype(np.float32) * 2 + 0.5
    check_onnx(f"""<ir_version: 10, opset_import: ["" : 21]>
        g (float[{dims}] x, float[{c}] s, float[{c}] b) => (float[{dims}] y) {{
            y = GroupNormalization <num_groups = {groups}, epsilon = 0.001> (x, s, b)
        }}""", {"x": x, "s": RNG.uniform(0.5, 2, c).astype(np.float32), "b": RNG.standard_normal(c).astype(np.float32)},
               rtol=1e-4, atol=1e-5)


def test_group_norm_of_rank_2():
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    check_onnx("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[3,6] x, float[6] s, float[6] b) => (float[3,6] y) {
            y = GroupNormalization <num_groups = 2> (x, s, b)
        }""",
               {"x": x, "s": RNG.uniform(0.5, 2, 6).astype(np.float32), "b": np.zeros(6, np.float32)},
               rtol=1e-4, atol=1e-5)


# -- MeanVarianceNormalization, RMSNormalization, LpNormalization ----------------------------------


@pytest.mark.parametrize("axes", ["", "<axes = [1]>", "<axes = [0, 1, 2, 3]>", "<axes = [-1]>"])
def test_mean_variance_norm(axes):
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 13]>
        g (float[2,3,4,5] x) => (float[2,3,4,5] y) {{ y = MeanVarianceNormalization {axes} (x) }}""",
               {"x": X4}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", ["", "<axis = 1, epsilon = 0.1>", "<axis = -2>", "<axis = 0>"])
def test_rms_norm(attrs):
    axis = {"": -1, "<axis = 1, epsilon = 0.1>": 1, "<axis = -2>": -2, "<axis = 0>": 0}[attrs]
    shape = X4.shape[axis % 4:]
    dims = ",".join(map(str, shape))
    check_onnx(f"""<ir_version: 10, opset_import: ["" : 23]>
        g (float[N,3,4,5] x, float[{dims}] s) => (float[N,3,4,5] y) {{ y = RMSNormalization {attrs} (x, s) }}""",
               {"x": X4, "s": RNG.uniform(0.5, 2, shape).astype(np.float32)}, rtol=1e-4, atol=1e-5)


def test_rms_norm_of_float16_in_float32():
    check_onnx("""<ir_version: 10, opset_import: ["" : 23]>
        g (float16[2,3,4,5] x, float16[5] s) => (float16[2,3,4,5] y) { y = RMSNormalization(x, s) }""",
               {"x": X4.astype(np.float16), "s": np.full(5, 1.5, np.float16)}, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("attrs", ["", "<p = 1>", "<axis = 1, p = 2>", "<axis = 0, p = 1>"])
def test_lp_norm(attrs):
    x = X4.copy()
    x[0, 1, 2, :] = 0  # a zero vector along the last axis stays zero
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 22]>
        g (float[2,3,4,5] x) => (float[2,3,4,5] y) {{ y = LpNormalization {attrs} (x) }}""",
               {"x": x}, rtol=1e-5, atol=1e-6)


def test_lp_norm_with_p_3_is_refused_by_node():
    proto = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 22]>
        g (float[2,3] x) => (float[2,3] y) { y = LpNormalization <p = 3> (x) }""")
    with pytest.raises(UnsupportedConversionError, match="p=3"):
        to_network(import_model(proto))


# -- LRN -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims, attrs", [
    ("2,7,4,5", "<size = 3>"),
    ("2,7,4,5", "<size = 5, alpha = 0.5, beta = 0.9, bias = 2.0>"),  # a large alpha: alpha / size shows
    ("N,9,4,T", "<size = 7, alpha = 1.0, beta = 0.5>"),
    ("2,4,3,3", "<size = 1, alpha = 2.0>"),
])
def test_lrn(dims, attrs):
    shape = tuple(int(d) if d.isdigit() else 5 for d in dims.split(","))
    x = RNG.standard_normal(shape).astype(np.float32) * 2
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 13]>
        g (float[{dims}] x) => (float[{dims}] y) {{ y = LRN {attrs} (x) }}""", {"x": x}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 6, 5), (1, 9, 2, 3, 2)])
def test_lrn_of_rank_3_and_5(shape):
    """ONNX defines LRN over [N, C, D1, ..., Dk]; onnxruntime and ONNX's reference take 4-D only, so the
    expected values come from the spec's formula, written out over channels here."""
    size, alpha, beta, bias = 5, 0.8, 0.6, 1.5
    x = RNG.standard_normal(shape).astype(np.float32) * 2
    dims = ",".join(map(str, shape))
    proto = onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : 13]>
        g (float[{dims}] x) => (float[{dims}] y) {{
            y = LRN <size = {size}, alpha = {alpha}, beta = {beta}, bias = {bias}> (x)
        }}""")
    _, got = build_and_simulate(import_model(proto), {"x": x})
    wide = x.astype(np.float64)
    want = np.empty_like(wide)
    for c in range(shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(shape[1] - 1, c + -(-(size - 1) // 2))
        square_sum = (wide[:, lo:hi + 1] ** 2).sum(axis=1)
        want[:, c] = wide[:, c] / (bias + alpha / size * square_sum) ** beta
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs, what", [("<size = 4>", "size=4"), ("<size = 17>", "size=17"),
                                         ("<size = 3, beta = 0.001>", "beta=0.001")])
def test_lrn_tensorrt_cannot_express_is_refused_by_node(attrs, what):
    proto = onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : 13]>
        g (float[1,4,2,2] x) => (float[1,4,2,2] y) {{ y = LRN {attrs} (x) }}""")
    with pytest.raises(UnsupportedConversionError, match=what):
        to_network(import_model(proto))


@pytest.mark.parametrize("dims", ["2,4,3", "N,6,T,2"])
def test_group_norm_of_opset_18_takes_scale_and_bias_per_group(dims):
    """Opset 18's form (which onnx's checker now calls deprecated, so it is compared here by hand with
    onnxruntime, which still runs it)."""
    shape = tuple(int(d) if d.isdigit() else 3 for d in dims.split(","))
    inputs = {"x": RNG.standard_normal(shape).astype(np.float32) * 2, "s": np.array([0.5, 2.0], np.float32),
              "b": np.array([1.0, -3.0], np.float32)}
    proto = onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : 18]>
        g (float[{dims}] x, float[2] s, float[2] b) => (float[{dims}] y) {{
            y = GroupNormalization <num_groups = 2, epsilon = 0.01> (x, s, b)
        }}""")
    _, got = build_and_simulate(import_model(proto), inputs)
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], inputs)[0]
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-5)
    # by hand: each half of the channels normalized together, then that group's scale and bias
    x = inputs["x"].astype(np.float64)
    half = x.reshape(shape[0], 2, -1)
    normalized = (half - half.mean(-1, keepdims=True)) / np.sqrt(half.var(-1, keepdims=True) + 0.01)
    by_hand = (normalized * inputs["s"][None, :, None] + inputs["b"][None, :, None]).reshape(shape)
    np.testing.assert_allclose(got["y"], by_hand, rtol=1e-4, atol=1e-5)


def test_layer_norm_and_group_norm_of_float16_normalize_in_float32():
    """stash_type 1 (the default): the statistics in float32, Y back in float16. Values around 300 square
    past float16's range (65504): an engine's float16 variance would overflow. (The simulator computes
    float16 layers in float32 anyway, so the layers' input type is checked too.)"""
    x = (RNG.standard_normal((2, 4, 3, 5)) * 300).astype(np.float16)
    text = """<ir_version: 10, opset_import: ["" : 21]>
        g (float16[2,4,3,5] x, float16[5] s, float16[4] gs, float16[4] gb) => (float16[2,4,3,5] y,
                                                                             float16[2,4,3,5] z) {
            y = LayerNormalization(x, s)
            z = GroupNormalization <num_groups = 2> (x, gs, gb)
        }"""
    check_onnx(text, {"x": x, "s": np.full(5, 0.5, np.float16), "gs": np.full(4, 2.0, np.float16),
                      "gb": np.full(4, 0.25, np.float16)}, rtol=2e-3, atol=2e-3)
    _, network = to_network(import_model(onnx.parser.parse_model(text)))
    layers = [network.get_layer(i) for i in range(network.num_layers)]
    normalizations = [layer for layer in layers if layer.type.name == "NORMALIZATION"]
    assert len(normalizations) == 2
    assert all(layer.get_input(0).dtype == trt().float32 for layer in normalizations)
