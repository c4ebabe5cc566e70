"""Elementwise ops: arithmetic, comparisons, logic, activations and conversions.

Most are ONNX's op under another name. OpenVINO's binary ops broadcast numpy-style
(``auto_broadcast="numpy"``, the default) exactly as ONNX's do; ``"none"`` asks for equal shapes,
which broadcasting also computes; PaddlePaddle's ``"pdpd"`` rule is refused.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value

BINARY = {"Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Maximum": "Max", "Minimum": "Min", "Power": "Pow",
          "Equal": "Equal", "Greater": "Greater", "GreaterEqual": "GreaterOrEqual", "Less": "Less",
          "LessEqual": "LessOrEqual", "LogicalAnd": "And", "LogicalOr": "Or", "LogicalXor": "Xor"}
UNARY = {"Abs": "Abs", "Ceiling": "Ceil", "Floor": "Floor", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt",
         "Tanh": "Tanh", "Sigmoid": "Sigmoid", "Erf": "Erf", "Negative": "Neg", "ReLU": "Relu", "LogicalNot": "Not",
         "Sin": "Sin", "Cos": "Cos", "Tan": "Tan", "Asin": "Asin", "Acos": "Acos", "Atan": "Atan", "Sinh": "Sinh",
         "Cosh": "Cosh", "Sign": "Sign", "SoftPlus": "Softplus", "Mish": "Mish", "HSwish": "HardSwish",
         "SoftSign": "Softsign", "Asinh": "Asinh", "Acosh": "Acosh", "Atanh": "Atanh", "IsNaN": "IsNaN"}
#: Op versions that moved to a later opset than opset1.
INTRODUCED = {"Asinh": (4,), "SoftPlus": (4,), "Mish": (4,), "HSwish": (4,), "SoftSign": (9,),
              "Acosh": (4,), "Atanh": (4,), "IsNaN": (10,)}


def _binary(onnx_op: str):
    def translate(op: Op) -> list[Value]:
        op.expect_inputs(2)
        broadcast = op.choice_attr("auto_broadcast", ("numpy", "none"), "numpy")
        del broadcast  # both are ONNX's multidirectional broadcasting for well-formed inputs
        return [op.op(onnx_op, list(op.inputs))]

    return translate


#: Ops OpenVINO computes on integers as the identity (PyTorch's ``torch.floor`` of an int tensor), where ONNX's
#: take floats only.
WHOLE_ALREADY = {"Floor", "Ceil"}


def _unary(onnx_op: str):
    def translate(op: Op) -> list[Value]:
        op.expect_inputs(1)
        dtype = op.inputs[0].dtype
        if onnx_op in WHOLE_ALREADY and dtype is not None and dtype.kind in "iu":
            return [op.op("Identity", list(op.inputs))]
        return [op.op(onnx_op, list(op.inputs))]

    return translate


for _ov, _onnx in BINARY.items():
    translates(_ov, *INTRODUCED.get(_ov, (1,)))(_binary(_onnx))
for _ov, _onnx in UNARY.items():
    translates(_ov, *INTRODUCED.get(_ov, (1,)))(_unary(_onnx))


#: BitwiseX-13 → (ONNX op on booleans, ONNX op on integers): OpenVINO's PyTorch frontend writes ``a & b``,
#: ``a | b``, ``a ^ b`` and ``~a`` of bool tensors (masks, loop conditions) as these.
BITWISE = {"BitwiseAnd": ("And", "BitwiseAnd"), "BitwiseOr": ("Or", "BitwiseOr"), "BitwiseXor": ("Xor", "BitwiseXor"),
           "BitwiseNot": ("Not", "BitwiseNot")}


def _bitwise(logical: str, integer: str):
    def translate(op: Op) -> list[Value]:
        unary = integer == "BitwiseNot"
        op.expect_inputs(1 if unary else 2)
        if not unary:
            op.choice_attr("auto_broadcast", ("numpy", "none"), "numpy")
        dtype = op.inputs[0].dtype
        return [op.op(logical if dtype is not None and dtype.kind == "b" else integer, list(op.inputs))]

    return translate


for _ov, (_logical, _integer) in BITWISE.items():
    translates(_ov, 13)(_bitwise(_logical, _integer))


@translates("NotEqual")
def not_equal(op: Op) -> list[Value]:
    op.expect_inputs(2)
    return [op.op("Not", [op.op("Equal", list(op.inputs))])]


@translates("Convert")
def convert(op: Op) -> list[Value]:
    op.expect_inputs(1)
    target = op.dtype_attr("destination_type")
    from onnx import helper

    return [op.op("Cast", list(op.inputs), {"to": helper.np_dtype_to_tensor_dtype(target)})]


@translates("ConvertLike")
def convert_like(op: Op) -> list[Value]:
    op.expect_inputs(2)
    return [op.op("CastLike", list(op.inputs))]


@translates("Divide")
def divide(op: Op) -> list[Value]:
    """ONNX's Div, truncating integers: OpenVINO's CPU plugin truncates whatever ``m_pythondiv`` says
    (measured: -3 / 2 is -1 with it true, the default), and OpenVINO's ONNX converter writes it true
    for ONNX's truncating Div — so the runtime, not the spec's floor, is what models rely on."""
    op.expect_inputs(2)
    op.bool_attr("m_pythondiv", True)  # validated, then read as the runtime reads it
    return [op.op("Div", list(op.inputs))]


@translates("SquaredDifference")
def squared_difference(op: Op) -> list[Value]:
    op.expect_inputs(2)
    diff = op.op("Sub", list(op.inputs))
    return [op.op("Mul", [diff, diff])]


@translates("Clamp")
def clamp(op: Op) -> list[Value]:
    op.expect_inputs(1)
    x = op.inputs[0]
    dtype = x.dtype or np.dtype(np.float32)
    low, high = op.float_attr("min"), op.float_attr("max")
    if dtype.kind in "iu":  # OpenVINO rounds integer bounds inward
        low, high = np.ceil(low), np.floor(high)
    return [op.op("Clip", [x, op.const(low, dtype), op.const(high, dtype)])]


@translates("Select")
def select(op: Op) -> list[Value]:
    op.expect_inputs(3)
    op.choice_attr("auto_broadcast", ("numpy", "none"), "numpy")
    return [op.op("Where", list(op.inputs))]
