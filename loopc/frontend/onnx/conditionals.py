"""ONNX ``If`` into :class:`loopc.ir.If`: both branches translated, reading outer values directly.

A branch is a graph without inputs whose free names are outer-scope reads; translating it in a
child :class:`Scope` resolves them to the outer values, which is what TensorRT's conditional
needs (its layers may use tensors from outside the conditional).
"""

from __future__ import annotations

import onnx

from loopc.errors import FrontendError, located
from loopc.frontend.onnx.importer import Context, Scope, lookup, translate_graph
from loopc.frontend.onnx.loops import graph_attr, result_value
from loopc.frontend.onnx.registry import translates
from loopc.ir import Graph, If


@translates("If")
def translate_if(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    what = ctx.describe(node)
    if len(node.input) != 1 or not node.input[0]:
        raise located(FrontendError, what, "If takes exactly one input, the condition")
    cond = lookup(ctx, node, scope, node.input[0])
    if cond.dtype is not None and cond.dtype.kind != "b":
        raise located(FrontendError, what, f"condition {cond.name!r} must be a bool tensor, not {cond.dtype}")
    if cond.shape is not None and any(d != 1 for d in cond.shape):
        raise located(FrontendError, what, f"condition {cond.name!r} must hold one element, not shape {cond.shape}")
    label = node.name or node.output[0]
    branches = []
    for attr in ("then_branch", "else_branch"):
        proto = graph_attr(ctx, node, attr)
        if len(proto.input) != 0:
            raise located(FrontendError, what, f"{attr} declares {len(proto.input)} inputs; If branches take none")
        branch = translate_graph(ctx, proto, Scope(scope), f"{label}_{attr.split('_')[0]}", inputs=[])
        if len(branch.outputs) != len(node.output):
            raise located(FrontendError, what, f"{attr} has {len(branch.outputs)} outputs, the node {len(node.output)}")
        branches.append(branch)
    # Without inference, a branch's type is the result's only when both branches agree on it.
    outputs = [result_value(ctx, name, t.dtype if t.dtype == e.dtype else None, t.shape if t.shape == e.shape else None)
               for name, t, e in zip(node.output, branches[0].outputs, branches[1].outputs)]
    graph.add(If(cond, branches[0], branches[1], outputs, name=ctx.fresh(label), origin=what))
    for name, value in zip(node.output, outputs):
        if name:
            scope.bind(name, value)
