"""``If-8`` into :class:`loopc.ir.If`: each branch body translated with its Parameters bound to the
outer values its port map names (a branch reads outer values directly, as TensorRT's conditional does)."""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op, translate_net
from loopc.frontend.openvino.registry import translates
from loopc.ir import Graph, If, Value


@translates("If", 8)
def if_op(op: Op) -> list[Value]:
    layer = op.layer
    if not layer.inputs:
        raise op.error("an If takes the condition as its first input")
    op.check_input_ids()
    cond = op.inputs[0]
    if cond.dtype is not None and cond.dtype.kind != "b":
        raise op.error(f"condition {cond.name!r} must be boolean, not {cond.dtype}")
    if cond.shape is not None and any(d != 1 for d in cond.shape):
        raise op.error(f"condition {cond.name!r} must hold one element, not shape {list(cond.shape)}")
    if cond.shape != ():
        cond = op.op("Reshape", [cond, op.const([], np.int64)])
    branches = [_branch(op, which) for which in ("then", "else")]
    outputs = []
    for t, e in zip(branches[0].outputs, branches[1].outputs):
        if t.dtype is not None and e.dtype is not None and t.dtype != e.dtype:
            raise op.error(f"its branches give different types for one output ({t.dtype} and {e.dtype})")
        shape = t.shape if t.shape == e.shape else _common_shape(t.shape, e.shape)
        outputs.append(op.em.value("out", t.dtype or e.dtype, shape))
    op.em.place(If(cond, branches[0], branches[1], outputs, name=op.em.name("if")))
    return outputs


def _branch(op: Op, which: str) -> Graph:
    layer = op.layer
    body = layer.bodies.get(f"{which}_body")
    port_map = layer.port_maps.get(f"{which}_port_map")
    if body is None or port_map is None:
        raise op.error(f"an If needs <{which}_body> and <{which}_port_map>")
    bound: dict[int, Value] = {}
    for entry in port_map.inputs:
        target = body.layers.get(entry.internal_layer_id)
        if target is None or target.type != "Parameter":
            raise op.error(f"{which}_port_map input names body layer {entry.internal_layer_id}, which is not a "
                           f"Parameter of the {which} body")
        if not 1 <= entry.external_port_id < len(op.inputs):
            raise op.error(f"{which}_port_map input names input port {entry.external_port_id}, which the layer "
                           f"does not have (port 0 is the condition)")
        if entry.internal_layer_id in bound:
            raise op.error(f"{which}_port_map maps body Parameter {entry.internal_layer_id} twice")
        bound[entry.internal_layer_id] = op.inputs[entry.external_port_id]
    graph = Graph(op.em.name(which))
    results = {result.id: value for result, value in translate_net(op.ctx, body, graph, bound)}
    by_port = {}
    for entry in port_map.outputs:
        if entry.internal_layer_id not in results:
            raise op.error(f"{which}_port_map output names body layer {entry.internal_layer_id}, which is not a "
                           f"Result of the {which} body")
        if entry.external_port_id in by_port:
            raise op.error(f"{which}_port_map maps output port {entry.external_port_id} twice")
        by_port[entry.external_port_id] = results[entry.internal_layer_id]
    missing = [p.id for p in layer.outputs if p.id not in by_port]
    if missing:
        raise op.error(f"{which}_port_map gives no value for output port(s) {missing}")
    graph.set_outputs([by_port[p.id] for p in layer.outputs])
    return graph


def _common_shape(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))
