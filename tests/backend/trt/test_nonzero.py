"""NonZero and Compress (data-dependent output lengths) against onnxruntime.

TensorRT-RTX builds them through the lowering (cumulative sum, scatter, data-dependent slice);
the INonZeroLayer used with datacenter TensorRT is checked through the simulator."""

from __future__ import annotations

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.backend.trt import to_network
from loopc.frontend.onnx import import_model
from loopc.sim import simulate
from loopc.trt import is_rtx
from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
X = np.array([[0, 1.5, 0, np.nan], [-2, 0, 3, 0], [0, 0, 0, 0]], np.float32)


@pytest.mark.parametrize("dims", ["3,4", "N,M"])
def test_nonzero_of_floats_nan_counts(dims):
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (int64[2,K] y) {{ y = NonZero(x) }}""", {"x": X})


@pytest.mark.parametrize("value", [np.zeros((2, 3, 2), bool), np.ones((2, 3, 2), bool),
                                   np.arange(12).reshape(2, 3, 2) % 5 == 1])
def test_nonzero_of_bool_rank3_none_all_some(value):
    check_onnx(f"""{HEADER}
        g (bool[A,B,C] x) => (int64[3,K] y) {{ y = NonZero(x) }}""", {"x": value})


def test_nonzero_then_gather_nd_selects_the_masked_elements():
    """PyTorch's x[mask] (masked_select): NonZero, Transpose, GatherND."""
    check_onnx(f"""{HEADER}
        g (float[N,4] x, int32[N,4] ids) => (float[K] y) {{
            big = Constant <value = int32 {{1}}> ()
            mask = Greater(ids, big)
            nz = NonZero(mask)
            pts = Transpose <perm = [1, 0]> (nz)
            y = GatherND(x, pts)
        }}""", {"x": np.arange(12, dtype=np.float32).reshape(3, 4), "ids": np.array([[0, 3, 1, 2]] * 3, np.int32)})


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_compress(axis):
    cond = [True, False, True] if axis == 0 else [False, True, True, False]
    shape = ",".join(["3"] if axis == 0 else ["4"])
    attr = "" if axis is None else f"<axis = {axis}>"
    check_onnx(f"""{HEADER}
        g (float[3,4] x, bool[{shape}] c) => (float[A,B] y) {{ y = Compress {attr} (x, c) }}"""
               .replace("float[A,B] y", "float[A] y" if axis is None else "float[A,B] y"),
               {"x": np.arange(12, dtype=np.float32).reshape(3, 4), "c": np.array(cond)})


def test_native_nonzero_layer_on_datacenter_tensorrt(monkeypatch):
    """Datacenter TensorRT gets INonZeroLayer (RTX's builder has no kernel for it): simulated only."""
    import loopc.backend.trt.ops.nonzero as module

    monkeypatch.setattr(module, "is_rtx", lambda: False)
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float[N,M] x) => (int64[2,K] y) {{ y = NonZero(x) }}""")
    _, network = to_network(import_model(proto))
    assert any(network.get_layer(i).type.name == "NON_ZERO" for i in range(network.num_layers))
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})
    np.testing.assert_array_equal(simulate(network, {"x": X})["y"], want[0])


def test_rtx_lowering_has_no_nonzero_layer():
    if not is_rtx():
        pytest.skip("the lowering is for TensorRT-RTX")
    _, network = to_network(import_model(onnx.parser.parse_model(f"""{HEADER}
        g (float[N,M] x) => (int64[2,K] y) {{ y = NonZero(x) }}""")))
    assert all(network.get_layer(i).type.name != "NON_ZERO" for i in range(network.num_layers))
