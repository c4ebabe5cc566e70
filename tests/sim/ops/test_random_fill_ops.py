"""Random fills (IFillLayer kRANDOM_UNIFORM / kRANDOM_NORMAL) against their distributions: no value can
be predicted, so the tests check what the distribution fixes — the range, the moments, the shape and type."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.errors import BackendError, SimulationError
from loopc.sim import simulate

N = 20_000


def test_uniform_fill_stays_in_its_range_with_uniform_moments(nb: Any) -> None:
    layer = nb.network.add_fill((100, N // 100), nb.trt.FillOperation.RANDOM_UNIFORM, nb.trt.float32)
    layer.alpha, layer.beta = -2.0, 6.0
    nb.output(layer.get_output(0), "y")
    y = nb.build_and_simulate({})["y"]
    assert y.shape == (100, N // 100) and y.dtype == np.float32
    y = y.astype(np.float64)
    assert y.min() >= -2.0 and y.max() <= 6.0
    # uniform on [a, b]: mean (a + b) / 2 = 2, variance (b - a)^2 / 12 = 16 / 3; standard errors ~0.016, ~0.03
    assert abs(y.mean() - 2.0) < 0.1
    assert abs(y.var() - 16 / 3) < 0.2
    assert len(np.unique(y)) > N // 2


def test_normal_fill_has_its_mean_and_deviation(nb: Any) -> None:
    layer = nb.network.add_fill((N,), nb.trt.FillOperation.RANDOM_NORMAL, nb.trt.float16)
    layer.alpha, layer.beta = 1.5, 0.5
    nb.output(layer.get_output(0), "y")
    y = nb.build_and_simulate({})["y"]
    assert y.shape == (N,) and y.dtype == np.float16
    y = y.astype(np.float64)
    assert abs(y.mean() - 1.5) < 0.02 and abs(y.std() - 0.5) < 0.02
    # about 95.4% within two deviations
    assert 0.94 < np.mean(np.abs(y - 1.5) < 1.0) < 0.97


def test_uniform_fill_of_computed_shape_and_parameters(nb: Any) -> None:
    shape = nb.input("shape", nb.trt.int64, (2,))
    layer = nb.network.add_fill((0, 0), nb.trt.FillOperation.RANDOM_UNIFORM, nb.trt.float32)
    layer.set_input(0, shape)
    layer.set_input(1, nb.const(np.array(10.0, np.float32)))
    layer.set_input(2, nb.const(np.array(10.5, np.float32)))
    nb.output(layer.get_output(0), "y")
    nb.serialize({"shape": np.array([30, 40], np.int64)})
    y = simulate(nb.network, {"shape": np.array([30, 40], np.int64)})["y"]
    assert y.shape == (30, 40)
    assert y.min() >= 10.0 and y.max() <= 10.5 and y.std() > 0.1


@pytest.mark.parametrize("op, alpha, beta", [("RANDOM_UNIFORM", 3.25, 3.25), ("RANDOM_NORMAL", 3.25, 0.0)])
def test_a_degenerate_distribution_is_refused(nb: Any, op: str, alpha: float, beta: float) -> None:
    """TensorRT's builder refuses min = max and a zero deviation ("Min/Max Range is not valid", "beta > 0");
    so does the simulator."""
    layer = nb.network.add_fill((7,), getattr(nb.trt.FillOperation, op), nb.trt.float32)
    layer.alpha, layer.beta = alpha, beta
    nb.output(layer.get_output(0), "y")
    with pytest.raises(BackendError):
        nb.serialize({})
    with pytest.raises(SimulationError, match="minimum 3.25 is not below its maximum|deviation 0.0 is not positive"):
        simulate(nb.network, {})
