"""IR If → TensorRT IIfConditional.

TensorRT decides which layers belong to a branch from the data flow out of the conditional's
input layers, so every outer value a branch reads (at any depth) enters through ``add_input``;
the branches are converted with those values redirected to the input tensors.

A TensorRT conditional's branches give each output one rank. ONNX's may differ; when both are a
single element (``0`` against ``[0.5]``) and every reader broadcasts it against operands of at least
the higher rank, the rank is invisible to the model, and the lower one is raised (see
:func:`_rank_is_invisible`). Other differences are refused, saying what would let the build decide the
conditional (pinned dims or a fixed input: :mod:`loopc.ir.dependence`).
"""

from __future__ import annotations

from typing import Any

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter, node_error
from loopc.errors import InternalError
from loopc.ir import Graph, If, Node, Value
from loopc.ir.ops import traits
from loopc.ir.core import Use
from loopc.ir.dependence import deciding_hint
from loopc.trt import trt


def outer_reads(graph: Graph) -> list[Value]:
    """Values ``graph`` (or a graph nested in it) reads but does not define, in first-use order."""
    defined: set[Value] = set(graph.inputs)
    read: dict[Value, Value] = {}

    def visit(g: Graph) -> None:
        defined.update(v for v in g.inputs)
        for node in g.nodes:
            for v in node.inputs:
                if v is not None:
                    read.setdefault(v, v)
            for sub in node.subgraphs():
                visit(sub)
            defined.update(v for v in node.outputs)
        for v in g.outputs:
            read.setdefault(v, v)

    visit(graph)
    return [v for k, v in read.items() if k not in defined]


@converter("If")
def convert_if(ctx: ConversionContext, node: Node) -> None:
    """One IIfConditional; each IR output becomes ``add_output(then, else)``."""
    if not isinstance(node, If):
        raise InternalError(f"{node.describe()}: an If node that is not an IR If")
    T = trt()
    cond = ctx.scalar0d(ctx.get(node.inputs[0], node), node, "cond")
    if cond.dtype != T.bool:
        cond = ctx.cast(cond, T.bool, node, "cond_bool")
    layer = ctx.network.add_if_conditional()
    ctx.name_loop(layer, node)
    ctx.named(layer.set_condition(cond), node, "condition")
    results = []
    for branch in (node.then_branch, node.else_branch):
        bindings = {}
        for k, value in enumerate(outer_reads(branch)):
            if ctx.has(value):
                entry = ctx.named(layer.add_input(ctx.get(value, node)), node, f"{branch.name}.input{k}")
                bindings[value] = entry.get_output(0)
        with ctx.overlay(bindings):
            ctx.convert_graph(branch)
            results.append([ctx.get(v, node) for v in branch.outputs])
    for k, (value, a, b) in enumerate(zip(node.outputs, *results)):
        if len(a.shape) != len(b.shape) and _rank_is_invisible(value, a, b):
            rank = max(len(a.shape), len(b.shape))
            a, b = (ctx.reshape(t, [1] * rank, node, f"output{k}_rank{j}") if len(t.shape) < rank else t
                    for j, t in enumerate((a, b)))
        if len(a.shape) != len(b.shape):
            raise node_error(node, f"output {k} has rank {len(a.shape)} in one branch, {len(b.shape)} in the other; "
                                   "TensorRT needs equal ranks", hint=deciding_hint(node) or None)
        ctx.set(value, ctx.out(layer.add_output(a, b), node, f"output{k}"))


def _rank_is_invisible(value: Value, a: Any, b: Any) -> bool:
    """Whether ``value`` (one element in both branches, of ranks ``a`` and ``b``) is read only by
    broadcasting ops whose other operands have at least the higher rank (or for its type): its rank
    changes nothing."""
    shapes = (tuple(a.shape), tuple(b.shape))
    if any(any(d != 1 for d in shape) for shape in shapes):
        return False
    rank = max(len(shape) for shape in shapes)
    uses = value.uses()
    return bool(uses) and all(_broadcasts(use, value, rank) for use in uses)


def _broadcasts(use: Use, value: Value, rank: int) -> bool:
    user = use.user
    if isinstance(user, Node) and user.op == "CastLike" and use.slot == 1:
        return True  # reads the type only
    if not isinstance(user, Node) or traits(user.op).broadcast != "multi":
        return False  # a graph output, or an op that could see the rank
    others = [v for v in user.inputs if v is not None and v is not value]
    return bool(others) and all(v.shape is not None and len(v.shape) >= rank for v in others)
