"""Products: MatMul (with OpenVINO's transpose_a/transpose_b) and Einsum."""

from __future__ import annotations

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


@translates("MatMul")
def matmul(op: Op) -> list[Value]:
    """The transposes swap an operand's last two axes; a 1-D operand has none to swap, so it is left
    as is, and ONNX's MatMul then treats it as a row (first operand) or column (second)."""
    op.expect_inputs(2)
    operands = list(op.inputs)
    for k, key in enumerate(("transpose_a", "transpose_b")):
        if op.bool_attr(key, False):
            rank = op.rank(k)
            if rank >= 2:
                perm = list(range(rank - 2)) + [rank - 1, rank - 2]
                operands[k] = op.op("Transpose", [operands[k]], {"perm": perm})
    return [op.op("MatMul", operands)]


@translates("Einsum", 7)
def einsum(op: Op) -> list[Value]:
    if not op.inputs:
        raise op.error("takes at least one input")
    return [op.op("Einsum", list(op.inputs), {"equation": "".join(op.attr("equation").split())})]
