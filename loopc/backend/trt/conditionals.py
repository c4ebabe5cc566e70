"""IR If → TensorRT IIfConditional.

TensorRT decides which layers belong to a branch from the data flow out of the conditional's
input layers, so every outer value a branch reads (at any depth) enters through ``add_input``;
the branches are converted with those values redirected to the input tensors.
"""

from __future__ import annotations

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter, node_error
from loopc.errors import InternalError
from loopc.ir import Graph, If, Node, Value
from loopc.trt import trt


def outer_reads(graph: Graph) -> list[Value]:
    """Values ``graph`` (or a graph nested in it) reads but does not define, in first-use order."""
    defined: set[int] = {id(v) for v in graph.inputs}
    read: dict[int, Value] = {}

    def visit(g: Graph) -> None:
        defined.update(id(v) for v in g.inputs)
        for node in g.nodes:
            for v in node.inputs:
                if v is not None:
                    read.setdefault(id(v), v)
            for sub in node.subgraphs():
                visit(sub)
            defined.update(id(v) for v in node.outputs)
        for v in g.outputs:
            read.setdefault(id(v), v)

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
                bindings[id(value)] = entry.get_output(0)
        with ctx.overlay(bindings):
            ctx.convert_graph(branch)
            results.append([ctx.get(v, node) for v in branch.outputs])
    for k, (value, a, b) in enumerate(zip(node.outputs, *results)):
        if len(a.shape) != len(b.shape):
            raise node_error(node, f"output {k} has rank {len(a.shape)} in one branch, {len(b.shape)} in the other; "
                                   "TensorRT needs equal ranks")
        ctx.set(value, ctx.out(layer.add_output(a, b), node, f"output{k}"))
