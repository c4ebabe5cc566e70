"""Activations, tests and remainders OpenVINO names or parametrizes differently from ONNX: Gelu,
HSigmoid, HardSigmoid, Selu, Swish, Elu, PReLU, Round, IsInf, IsFinite, Mod, FloorMod."""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import cast, dim
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


def _float(op: Op, k: int = 0) -> np.dtype:
    dtype = op.inputs[k].dtype
    return dtype if dtype is not None else np.dtype(np.float32)


@translates("Gelu", 2, 7)
def gelu(op: Op) -> list[Value]:
    """Gelu-2 is the erf form; Gelu-7 chooses erf or tanh."""
    op.expect_inputs(1)
    mode = op.choice_attr("approximation_mode", ("erf", "tanh"), "erf") if op.version >= 7 else "erf"
    return [op.op("Gelu", [op.inputs[0]], {"approximate": "tanh" if mode == "tanh" else "none"})]


@translates("HSigmoid", 5)
def hsigmoid(op: Op) -> list[Value]:
    """min(max(x + 3, 0), 6) / 6, written out as the spec does."""
    op.expect_inputs(1)
    dtype = _float(op)
    shifted = op.op("Add", [op.inputs[0], op.const(3, dtype)])
    return [op.op("Div", [op.op("Clip", [shifted, op.const(0, dtype), op.const(6, dtype)]), op.const(6, dtype)])]


def _scalar_attr(op: Op, k: int, role: str) -> float:
    """A constant scalar input that ONNX takes as a float attribute."""
    value = op.require_constant(k, role)
    if value.size != 1:
        raise op.error(f"input {k} ({role}) must hold one value, not {value.size}")
    return float(value.reshape(-1)[0])


@translates("HardSigmoid")
def hard_sigmoid(op: Op) -> list[Value]:
    """max(0, min(1, alpha * x + beta)) with constant alpha and beta inputs."""
    op.expect_inputs(3)
    return [op.op("HardSigmoid", [op.inputs[0]], {"alpha": _scalar_attr(op, 1, "alpha"),
                                                   "beta": _scalar_attr(op, 2, "beta")})]


@translates("Selu")
def selu(op: Op) -> list[Value]:
    """lambda * (x if x > 0 else alpha * (e^x - 1)) with constant alpha and lambda inputs."""
    op.expect_inputs(3)
    return [op.op("Selu", [op.inputs[0]], {"alpha": _scalar_attr(op, 1, "alpha"),
                                            "gamma": _scalar_attr(op, 2, "lambda")})]


@translates("IsInf", 10)
def is_inf(op: Op) -> list[Value]:
    op.expect_inputs(1)
    attrs = {"detect_negative": int(op.bool_attr("detect_negative", True)),
             "detect_positive": int(op.bool_attr("detect_positive", True))}
    return [op.op("IsInf", [op.inputs[0]], attrs)]


@translates("IsFinite", 10)
def is_finite(op: Op) -> list[Value]:
    """Neither NaN nor infinite."""
    op.expect_inputs(1)
    x = op.inputs[0]
    return [op.op("Not", [op.op("Or", [op.op("IsNaN", [x]), op.op("IsInf", [x])])])]


@translates("Swish", 4)
def swish(op: Op) -> list[Value]:
    """x * sigmoid(beta * x); beta is an optional scalar input, 1 when absent."""
    op.expect_inputs(1, 2)
    x = op.inputs[0]
    scaled = op.op("Mul", [x, op.inputs[1]]) if len(op.inputs) > 1 else x
    return [op.op("Mul", [x, op.op("Sigmoid", [scaled])])]


@translates("Elu")
def elu(op: Op) -> list[Value]:
    op.expect_inputs(1)
    return [op.op("Elu", [op.inputs[0]], {"alpha": op.float_attr("alpha")})]


@translates("PReLU")
def prelu(op: Op) -> list[Value]:
    """A 1-D slope as long as the channel axis (axis 1) applies per channel; any other slope broadcasts
    numpy-style, as in ONNX."""
    op.expect_inputs(2)
    x, slope = op.inputs
    rank = op.rank(0)
    if rank > 2 and slope.shape is not None and len(slope.shape) == 1:
        channels, length = dim(x, 1), slope.shape[0]
        if isinstance(length, int) and length == channels and length != 1:
            slope = op.op("Reshape", [slope, op.const([length] + [1] * (rank - 2), np.int64)])
        elif channels is None or not isinstance(length, int):
            raise op.unsupported("a 1-D slope with the channel dim or its own length unknown: whether it applies "
                                 "per channel or to the last axis depends on them")
    return [op.op("PRelu", [x, slope])]


@translates("Round", 5)
def round_(op: Op) -> list[Value]:
    """half_to_even is ONNX's Round; half_away_from_zero is sign(x) * (floor(|x|) + (frac >= 0.5)),
    exact because |x| - floor(|x|) is."""
    op.expect_inputs(1)
    x = op.inputs[0]
    mode = op.choice_attr("mode", ("half_to_even", "half_away_from_zero"))
    if x.dtype is not None and x.dtype.kind in "iub":
        return [op.op("Identity", [x])]
    if mode == "half_to_even":
        return [op.op("Round", [x])]
    dtype = _float(op)
    magnitude = op.op("Abs", [x])
    whole = op.op("Floor", [magnitude])
    up = op.op("GreaterOrEqual", [op.op("Sub", [magnitude, whole]), op.const(0.5, dtype)])
    rounded = op.op("Add", [whole, cast(op, up, dtype)])
    return [op.op("Mul", [op.op("Sign", [x]), rounded])]


def _remainder(fmod: int):
    def translate(op: Op) -> list[Value]:
        op.expect_inputs(2)
        op.choice_attr("auto_broadcast", ("numpy", "none"), "numpy")
        return [op.op("Mod", list(op.inputs), {"fmod": fmod})]

    return translate


#: Mod takes the dividend's sign (C's fmod, ONNX fmod=1); FloorMod the divisor's (Python's %, fmod=0).
translates("Mod")(_remainder(1))
translates("FloorMod")(_remainder(0))
