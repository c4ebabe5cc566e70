"""Convolution and Deconvolution kernels against TensorRT's documented semantics: literal hand-worked
numbers, and naive loops over every output (or input) element written here from the definitions."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from loopc.errors import SimulationError
from loopc.sim import Simulator, simulate


def data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def naive_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: tuple[int, ...], pre: tuple[int, ...],
               post: tuple[int, ...], dilation: tuple[int, ...], groups: int) -> np.ndarray:
    """out[n, m, o] = b[m] + sum over c in m's group and k of x_padded[n, c, o * S + k * D] w[m, c, k]."""
    n_, c_, *_ = x.shape
    m_, per_group, *kernel = w.shape
    maps_per_group = m_ // groups
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(pre, post)))
    out_sizes = [(xp.shape[2 + i] - ((k - 1) * dilation[i] + 1)) // stride[i] + 1 for i, k in enumerate(kernel)]
    out = np.zeros([n_, m_] + out_sizes, np.float64)
    for n, m in itertools.product(range(n_), range(m_)):
        g = m // maps_per_group
        for o in itertools.product(*(range(s) for s in out_sizes)):
            total = 0.0 if b is None else float(b[m])
            for c in range(per_group):
                for k in itertools.product(*(range(s) for s in kernel)):
                    at = tuple(oi * s + ki * d for oi, ki, s, d in zip(o, k, stride, dilation))
                    total += float(xp[(n, g * per_group + c) + at]) * float(w[(m, c) + k])
            out[(n, m) + o] = total
    return out


def naive_deconv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: tuple[int, ...],
                 pre: tuple[int, ...], post: tuple[int, ...], dilation: tuple[int, ...], groups: int) -> np.ndarray:
    """Every input element scatters x[n, c, i] w[c, j, k] to out[n, g M/G + j, i * S + k * D]; the
    full output then loses ``pre`` elements at its start and ``post`` at its end."""
    n_, c_, *sizes = x.shape
    _, maps_per_group, *kernel = w.shape
    per_group = c_ // groups
    full = [(s - 1) * st + (k - 1) * d + 1 for s, st, k, d in zip(sizes, stride, kernel, dilation)]
    out = np.zeros([n_, maps_per_group * groups] + full, np.float64)
    for n, c in itertools.product(range(n_), range(c_)):
        g = c // per_group
        for i in itertools.product(*(range(s) for s in sizes)):
            for j in range(maps_per_group):
                for k in itertools.product(*(range(s) for s in kernel)):
                    at = tuple(ii * s + ki * d for ii, ki, s, d in zip(i, k, stride, dilation))
                    out[(n, g * maps_per_group + j) + at] += float(x[(n, c) + i]) * float(w[(c, j) + k])
    crop = tuple(slice(p, f - q) for p, q, f in zip(pre, post, full))
    out = out[(slice(None), slice(None)) + crop]
    return out if b is None else out + b.reshape((1, -1) + (1,) * len(sizes))


def layer_net(nb: Any, transposed: bool, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, maps: int,
              kernel_as_input: bool = False, **attrs: Any) -> Any:
    """One (de)convolution layer; ``attrs`` are layer attributes (stride_nd, pre_padding, padding_mode, ...)."""
    T = nb.trt
    x_t = nb.input("x", T.float32 if x.dtype == np.float32 else T.float16, x.shape)
    kernel = T.Weights() if kernel_as_input else T.Weights(w)
    bias = T.Weights() if b is None or kernel_as_input else T.Weights(b)
    add = nb.network.add_deconvolution_nd if transposed else nb.network.add_convolution_nd
    layer = add(x_t, maps, tuple(w.shape[2:]), kernel, bias)
    if kernel_as_input:
        layer.set_input(1, nb.const(w.astype(x.dtype)))
        if b is not None:
            layer.set_input(2, nb.const(b.astype(x.dtype)))
    for name, value in attrs.items():
        setattr(layer, name, getattr(T.PaddingMode, value) if name == "padding_mode" else value)
    nb.output(layer.get_output(0), "y")
    return layer


# -- literal numbers ----------------------------------------------------------------------------------


def test_convolution_by_hand(nb: Any) -> None:
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)  # [[1 2 3] [4 5 6] [7 8 9]]
    w = np.array([[[[1, 2], [3, 4]]]], np.float32)
    layer_net(nb, False, x, w, np.array([1], np.float32), 1)
    got = nb.build_and_simulate({"x": x})["y"]
    # 1*1 + 2*2 + 4*3 + 5*4 + 1 = 38, and so on one step right / down
    np.testing.assert_array_equal(got, [[[[38, 48], [68, 78]]]])


def test_convolution_by_hand_with_stride_and_padding(nb: Any) -> None:
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), np.float32)
    layer_net(nb, False, x, w, None, 1, stride_nd=(2, 2), pre_padding=(1, 1), post_padding=(0, 0))
    got = nb.build_and_simulate({"x": x})["y"]
    # windows at padded rows/cols (0,1) and (2,3): 1 | 2+3 // 4+7 | 5+6+8+9
    np.testing.assert_array_equal(got, [[[[1, 5], [11, 28]]]])


@pytest.mark.parametrize("stride, want", [(1, [1, 12, 20]), (2, [1, 10, 2, 20])])
def test_deconvolution_by_hand(nb: Any, stride: int, want: list[int]) -> None:
    x = np.array([1, 2], np.float32).reshape(1, 1, 1, 2)
    w = np.array([1, 10], np.float32).reshape(1, 1, 1, 2)
    layer_net(nb, True, x, w, None, 1, stride_nd=(1, stride))
    np.testing.assert_array_equal(nb.build_and_simulate({"x": x})["y"].reshape(-1), want)


def test_deconvolution_by_hand_crops_pre_and_post_padding(nb: Any) -> None:
    x = np.array([1, 2, 3], np.float32).reshape(1, 1, 1, 3)
    w = np.array([1, 1, 1], np.float32).reshape(1, 1, 1, 3)
    layer_net(nb, True, x, w, np.array([0.5], np.float32), 1, pre_padding=(0, 1), post_padding=(0, 0))
    # full: [1, 3, 6, 5, 3]; one element dropped at the start
    np.testing.assert_array_equal(nb.build_and_simulate({"x": x})["y"].reshape(-1), [3.5, 6.5, 5.5, 3.5])


# -- against the naive loops ------------------------------------------------------------------------


@pytest.mark.parametrize("x_shape, w_shape, groups, stride, pre, post, dilation", [
    ((2, 3, 7, 6), (4, 3, 3, 3), 1, (1, 1), (0, 0), (0, 0), (1, 1)),
    ((1, 3, 9, 8), (5, 3, 3, 2), 1, (2, 3), (1, 0), (2, 1), (1, 1)),  # strides, asymmetric padding
    ((1, 2, 9, 9), (3, 2, 2, 3), 1, (2, 1), (0, 1), (1, 1), (3, 2)),  # dilation
    ((2, 4, 6, 6), (6, 2, 3, 3), 2, (1, 2), (1, 1), (1, 1), (1, 1)),  # groups
    ((1, 3, 6, 7), (6, 1, 3, 3), 3, (1, 1), (1, 1), (1, 1), (2, 1)),  # depthwise, multiplier 2
    ((1, 3, 9, 1), (2, 3, 4, 1), 1, (2, 1), (3, 0), (0, 0), (1, 1)),  # 1-D, as a trailing unit axis
    ((1, 2, 4, 5, 6), (4, 1, 2, 3, 2), 2, (1, 2, 2), (1, 0, 1), (0, 1, 1), (2, 1, 1)),  # 3-D
])
@pytest.mark.parametrize("kernel_as_input", [False, True])
def test_convolution_matches_the_naive_loop(nb: Any, x_shape, w_shape, groups, stride, pre, post, dilation,
                                            kernel_as_input) -> None:
    x, w, b = data(x_shape, 1), data(w_shape, 2), data((w_shape[0],), 3)
    layer_net(nb, False, x, w, b, w_shape[0], kernel_as_input, num_groups=groups, stride_nd=stride,
              pre_padding=pre, post_padding=post, dilation_nd=dilation)
    got = nb.build_and_simulate({"x": x})["y"]
    np.testing.assert_allclose(got, naive_conv(x, w, b, stride, pre, post, dilation, groups), rtol=1e-5, atol=1e-5)


def same_padding(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    """TensorRT's SAME: P = floor((I - 1) / S) * S + DK - I, the odd element after (UPPER) or before (LOWER)."""
    total = (size - 1) // stride * stride + (kernel - 1) * dilation + 1 - size
    return (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("size, kernel, stride, dilation", [((7, 8), (3, 4), (2, 3), (1, 1)),
                                                          ((6, 5), (2, 3), (1, 2), (2, 1))])
def test_convolution_same_padding_modes(nb: Any, mode, size, kernel, stride, dilation) -> None:
    x, w = data((1, 2) + size, 4), data((3, 2) + kernel, 5)
    layer_net(nb, False, x, w, None, 3, stride_nd=stride, dilation_nd=dilation, padding_mode=mode)
    got = nb.build_and_simulate({"x": x})["y"]
    pads = [same_padding(*axis, upper=mode == "SAME_UPPER") for axis in zip(size, kernel, stride, dilation)]
    want = naive_conv(x, w, None, stride, tuple(p for p, _ in pads), tuple(q for _, q in pads), dilation, 1)
    assert got.shape[2:] == tuple(-(-i // s) for i, s in zip(size, stride))  # ceil(I / S)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_convolution_explicit_round_up_reads_zeros_past_the_padding(nb: Any) -> None:
    x, w = data((1, 1, 8, 7), 6), data((1, 1, 3, 2), 7)
    layer_net(nb, False, x, w, None, 1, stride_nd=(2, 2), pre_padding=(1, 0), post_padding=(0, 0),
              padding_mode="EXPLICIT_ROUND_UP")
    got = nb.build_and_simulate({"x": x})["y"]
    # ceil((9 - 3) / 2) + 1 = 4 rows, ceil((7 - 2) / 2) + 1 = 4 columns: the last window of each needs one zero more
    assert got.shape == (1, 1, 4, 4)
    np.testing.assert_allclose(got, naive_conv(x, w, None, (2, 2), (1, 0), (1, 1), (1, 1), 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_shape, w_shape, groups, stride, pre, post, dilation", [
    ((2, 3, 4, 5), (3, 2, 3, 3), 1, (1, 1), (0, 0), (0, 0), (1, 1)),
    ((1, 2, 3, 4), (2, 3, 3, 2), 1, (3, 2), (1, 0), (2, 1), (1, 1)),  # strides, asymmetric cropping
    ((1, 2, 4, 3), (2, 2, 2, 3), 1, (1, 1), (0, 1), (1, 0), (2, 3)),  # dilation
    ((2, 4, 3, 3), (4, 3, 3, 2), 2, (2, 1), (1, 1), (0, 1), (1, 1)),  # groups
    ((1, 3, 3, 4), (3, 1, 3, 3), 3, (2, 2), (1, 1), (1, 1), (1, 1)),  # depthwise
    ((1, 2, 5, 1), (2, 3, 3, 1), 1, (2, 1), (1, 0), (0, 0), (1, 1)),  # 1-D, as a trailing unit axis
    ((1, 2, 3, 2, 3), (2, 2, 2, 3, 2), 1, (2, 1, 2), (0, 1, 1), (1, 0, 0), (1, 1, 1)),  # 3-D
])
@pytest.mark.parametrize("kernel_as_input", [False, True])
def test_deconvolution_matches_the_naive_loop(nb: Any, x_shape, w_shape, groups, stride, pre, post, dilation,
                                              kernel_as_input) -> None:
    x, w = data(x_shape, 8), data(w_shape, 9)
    maps = w_shape[1] * groups
    b = data((maps,), 10)
    layer_net(nb, True, x, w, b, maps, kernel_as_input, num_groups=groups, stride_nd=stride, pre_padding=pre,
              post_padding=post, dilation_nd=dilation)
    # TensorRT's builder refuses deconvolutions both strided and dilated: simulate those without building
    built = max(stride) == 1 or max(dilation) == 1
    got = nb.build_and_simulate({"x": x}) if built else simulate(nb.network, {"x": x})
    np.testing.assert_allclose(got["y"], naive_deconv(x, w, b, stride, pre, post, dilation, groups),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("kernel, stride", [((4, 3), (2, 2)), ((3, 2), (1, 3))])
def test_deconvolution_same_padding_modes(nb: Any, mode, kernel, stride) -> None:
    x, w = data((1, 2, 3, 4), 11), data((2, 2) + kernel, 12)
    layer_net(nb, True, x, w, None, 2, stride_nd=stride, padding_mode=mode)
    got = nb.build_and_simulate({"x": x})["y"]
    # P = max(DK - S, 0) dropped from the full output, the odd element at the end (UPPER) or start (LOWER)
    totals = [max(k - s, 0) for k, s in zip(kernel, stride)]
    upper = mode == "SAME_UPPER"
    pre = tuple(p // 2 if upper else p - p // 2 for p in totals)
    post = tuple(p - q for p, q in zip(totals, pre))
    want = naive_deconv(x, w, None, stride, pre, post, (1, 1), 1)
    assert got.shape[2:] == tuple(min(i * s, (i - 1) * s + k) for i, s, k in zip((3, 4), stride, kernel))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_deconvolution_with_output_padding_as_loopc_builds_it(nb: Any) -> None:
    """ONNX's output_padding: the full deconvolution, zeros appended by a FILL slice, then the bias."""
    T = nb.trt
    x, w, b = data((1, 2, 3, 3), 13), data((2, 3, 3, 3), 14), data((3,), 15)
    layer = nb.network.add_deconvolution_nd(nb.input("x", T.float32, x.shape), 3, (3, 3), T.Weights(w), T.Weights())
    layer.stride_nd = (3, 2)
    padded = nb.network.add_slice(layer.get_output(0), (0, 0, 0, 0), (1, 3, 10, 8), (1, 1, 1, 1))
    padded.mode = T.SampleMode.FILL
    bias = nb.network.add_elementwise(padded.get_output(0), nb.const(b.reshape(1, 3, 1, 1)),
                                      T.ElementWiseOperation.SUM)
    nb.output(bias.get_output(0), "y")
    got = nb.build_and_simulate({"x": x})["y"]
    want = np.pad(naive_deconv(x, w, None, (3, 2), (0, 0), (0, 0), (1, 1), 1), [(0, 0), (0, 0), (0, 1), (0, 1)])
    np.testing.assert_allclose(got, want + b.reshape(1, 3, 1, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transposed", [False, True])
def test_a_network_runs_again_on_new_inputs(nb: Any, transposed: bool) -> None:
    """Kernels prepare weight matrices once: later runs (other inputs, another batch) still use them right."""
    w = data((4, 2, 3, 3), 20)
    reference = naive_deconv if transposed else naive_conv
    layer_net(nb, transposed, data((1, 4, 5, 5), 21), w, None, 4, num_groups=2, stride_nd=(2, 1))
    nb.serialize({"x": data((1, 4, 5, 5), 21)})
    simulator = Simulator(nb.network)
    for seed in (22, 23):
        x = data((1, 4, 5, 5), seed)
        np.testing.assert_allclose(simulator.run({"x": x})["y"],
                                   reference(x, w, None, (2, 1), (0, 0), (0, 0), (1, 1), 2), rtol=1e-5, atol=1e-5)


def test_float16_is_computed_in_float32_and_rounded(nb: Any) -> None:
    x, w = data((1, 2, 5, 5), 16).astype(np.float16), data((3, 2, 3, 3), 17).astype(np.float16)
    layer_net(nb, False, x, w, None, 3, kernel_as_input=True, pre_padding=(1, 1), post_padding=(1, 1))
    got = nb.build_and_simulate({"x": x})["y"]
    assert got.dtype == np.float16
    want = naive_conv(x.astype(np.float32), w.astype(np.float32), None, (1, 1), (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(got, want.astype(np.float16), rtol=1e-3, atol=1e-3)


def test_same_padding_that_would_be_negative_is_an_error(nb: Any) -> None:
    """A dilated kernel shorter than the stride gives TensorRT's SAME formula a negative padding."""
    x, w = data((1, 1, 8, 8), 18), data((1, 1, 1, 1), 19)
    layer_net(nb, False, x, w, None, 1, stride_nd=(3, 3), padding_mode="SAME_UPPER")
    with pytest.raises(SimulationError, match="documents no meaning"):
        simulate(nb.network, {"x": x})


def test_networks_tensorrts_parser_builds_for_conv_node_tests_simulate_to_a_match() -> None:
    """Independent evidence: NVIDIA's parser builds these networks (kernels as inputs, its own padding
    modes, 1-D as 2-D), and the simulator's outputs must be the node tests' expected ones."""
    from tests.conformance import MATCH, node_test_cases, run_case

    cases = [c for c in node_test_cases() if {n.op_type for n in c.model.graph.node} & {"Conv", "ConvTranspose"}]
    assert len(cases) >= 30
    results = [run_case(case, "trt-onnx") for case in cases]
    assert sum("DECONVOLUTION" in r.layer_types for r in results) >= 11
    wrong = [f"{r.name}: {r.status}: {r.detail}" for r in results if r.status != MATCH]
    assert not wrong, "\n".join(wrong)
