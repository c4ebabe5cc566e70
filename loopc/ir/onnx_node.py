"""An IR node as one ONNX ``NodeProto``: what ONNX's reference evaluator and its shape functions read.

Operands are named ``in0, in1, ...`` (an absent optional operand is ``""``) and results ``out0, ...``,
so callers feed and read them by position. Array attributes become TensorProtos.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from loopc.ir.core import Node


def operand_names(node: Node) -> list[str]:
    """``in<k>`` for each present operand, ``""`` for an absent one."""
    return [f"in{k}" if v is not None else "" for k, v in enumerate(node.inputs)]


def result_names(node: Node) -> list[str]:
    return [f"out{k}" for k in range(len(node.outputs))]


def node_proto(node: Node) -> onnx.NodeProto:
    """``node`` as an ONNX node reading :func:`operand_names` and writing :func:`result_names`."""
    return helper.make_node(node.op, operand_names(node), result_names(node),
                            **{k: attribute(v) for k, v in node.attrs.items()})


def attribute(value: Any) -> Any:
    """An IR attribute as ``onnx.helper.make_node`` takes it (arrays and NumPy scalars as TensorProto)."""
    return numpy_helper.from_array(np.asarray(value)) if isinstance(value, (np.ndarray, np.generic)) else value
