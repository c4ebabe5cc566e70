"""The ONNX backend: the loop IR after the passes back to an ONNX model (``loopc export``)."""

from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs
from onnx import helper

from loopc.backend.onnx.opset import export_opset
from loopc.backend.onnx.writer import Writer
from loopc.ir import Model
from loopc.onnx_graphs import all_nodes

PRODUCER = "loopc"


def to_onnx(model: Model) -> onnx.ModelProto:
    """``model`` as an ONNX model, stamped with the oldest opset that reads it (see :mod:`.opset`)."""
    from loopc import __version__

    graph = Writer(model).main_graph()
    proto = gs.export_onnx(graph, do_type_check=True)
    _drop_outer_initializers(proto.graph, set())
    opset = export_opset(all_nodes(proto.graph))
    del proto.opset_import[:]
    proto.opset_import.append(helper.make_opsetid("", opset))
    proto.ir_version = helper.find_min_ir_version_for(list(proto.opset_import))
    proto.producer_name, proto.producer_version = PRODUCER, __version__
    return proto


def _drop_outer_initializers(graph: onnx.GraphProto, outer: set[str]) -> None:
    """onnx-graphsurgeon copies a main-graph constant into every nested graph that reads it; ONNX names a value
    once in a graph and the graphs it encloses, so the nested graphs read the enclosing one's."""
    kept = [t for t in graph.initializer if t.name not in outer]
    if len(kept) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(kept)
    names = outer | {t.name for t in graph.initializer}
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _drop_outer_initializers(attr.g, names)


__all__ = ["to_onnx"]
