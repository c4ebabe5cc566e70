"""Pointwise layers: ElementWise, Unary, Activation, ParametricReLU, Select."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.ops._common import widen
from loopc.sim.registry import Kernel, simulates

_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """Exact (libm) error function; NumPy has none."""
    return np.asarray(_erf(x.astype(np.float64))).astype(np.float64)  # a 0-d input gives a Python float


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # TensorRT integer kDIV truncates toward zero, like C; NumPy's // floors.
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            raise SimulationError("integer division by zero")
        return _int_div(a, b)
    return np.divide(a, b)


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            raise SimulationError("integer division by zero")
        return np.floor_divide(a, b)
    return np.floor(np.divide(a, b))


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return np.power(a, b)


_ELEMENTWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "SUM": np.add,
    "PROD": np.multiply,
    "MAX": np.maximum,
    "MIN": np.minimum,
    "SUB": np.subtract,
    "DIV": _div,
    "POW": _pow,
    "FLOOR_DIV": _floor_div,
    "AND": np.logical_and,
    "OR": np.logical_or,
    "XOR": np.logical_xor,
    "EQUAL": np.equal,
    "GREATER": np.greater,
    "LESS": np.less,
}


@simulates("ELEMENTWISE")
def elementwise(layer: Any) -> Kernel:
    fn = _ELEMENTWISE[layer.op.name]

    def run(ins: Any) -> list[np.ndarray]:
        a, b = ins
        if a.ndim != b.ndim:
            raise SimulationError(f"inputs have ranks {a.ndim} and {b.ndim}; TensorRT broadcasts equal ranks only")
        if a.shape != b.shape and any(x != y and 1 not in (x, y) for x, y in zip(a.shape, b.shape)):
            raise SimulationError(f"inputs of shapes {list(a.shape)} and {list(b.shape)} do not broadcast")
        with np.errstate(all="ignore"):
            return [fn(widen(a), widen(b))]

    return run


def _round(x: np.ndarray) -> np.ndarray:
    return np.round(x) if x.dtype.kind == "f" else x  # half to even, as TensorRT documents


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "EXP": np.exp,
    "LOG": np.log,
    "SQRT": np.sqrt,
    "RECIP": lambda x: np.divide(1, x, dtype=x.dtype if x.dtype.kind == "f" else None),
    "ABS": np.abs,
    "NEG": np.negative,
    "SIN": np.sin,
    "COS": np.cos,
    "TAN": np.tan,
    "SINH": np.sinh,
    "COSH": np.cosh,
    "ASIN": np.arcsin,
    "ACOS": np.arccos,
    "ATAN": np.arctan,
    "ASINH": np.arcsinh,
    "ACOSH": np.arccosh,
    "ATANH": np.arctanh,
    "CEIL": np.ceil,
    "FLOOR": np.floor,
    "ERF": erf,
    "NOT": np.logical_not,
    "SIGN": np.sign,
    "ROUND": _round,
    "ISINF": np.isinf,
    "ISNAN": np.isnan,
}


@simulates("UNARY")
def unary(layer: Any) -> Kernel:
    fn = _UNARY[layer.op.name]

    def run(ins: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [fn(widen(ins[0]))]

    return run


def _activation(kind: str, alpha: float, beta: float) -> Callable[[np.ndarray], np.ndarray]:
    def sigmoid(x: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-x))

    table: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "RELU": lambda x: np.maximum(x, 0),
        "SIGMOID": sigmoid,
        "TANH": np.tanh,
        "LEAKY_RELU": lambda x: np.where(x >= 0, x, alpha * x),
        "ELU": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "SELU": lambda x: beta * np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "SOFTSIGN": lambda x: x / (1 + np.abs(x)),
        "SOFTPLUS": lambda x: alpha * np.logaddexp(0, beta * x),
        "CLIP": lambda x: np.clip(x, alpha, beta),
        "HARD_SIGMOID": lambda x: np.clip(alpha * x + beta, 0, 1),
        "SCALED_TANH": lambda x: alpha * np.tanh(beta * x),
        "THRESHOLDED_RELU": lambda x: np.where(x > alpha, x, 0),
        "GELU_ERF": lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))),
        "GELU_TANH": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    }
    if kind not in table:
        raise SimulationError(f"activation {kind} is not supported")
    return table[kind]


@simulates("ACTIVATION")
def activation(layer: Any) -> Kernel:
    fn = _activation(layer.type.name, float(layer.alpha), float(layer.beta))

    def run(ins: Any) -> list[np.ndarray]:
        x = widen(ins[0])
        with np.errstate(all="ignore"):
            return [fn(x)]

    return run


@simulates("PARAMETRIC_RELU")
def parametric_relu(layer: Any) -> Kernel:
    def run(ins: Any) -> list[np.ndarray]:
        x, slope = widen(ins[0]), widen(ins[1])
        return [np.where(x >= 0, x, x * slope)]

    return run


@simulates("SELECT")
def select(layer: Any) -> Kernel:
    def run(ins: Any) -> list[np.ndarray]:
        cond, a, b = ins
        return [np.where(cond, a, b)]

    return run
