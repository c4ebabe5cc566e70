"""The ONNX backend: the loop IR after the passes back to an ONNX model (``loopc export``)."""

from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs
from onnx import helper

from loopc.backend.onnx.opset import export_opset, value_types
from loopc.backend.onnx.writer import Writer
from loopc.ir import Model
from loopc.onnx_graphs import all_nodes, subgraphs

PRODUCER = "loopc"


def to_onnx(model: Model) -> onnx.ModelProto:
    """``model`` as an ONNX model, stamped with the oldest opset that reads it (see :mod:`.opset`)."""
    from loopc import __version__

    graph = Writer(model).main_graph()
    proto = gs.export_onnx(graph, do_type_check=True)
    _initializers_in_main(proto.graph)
    opset = export_opset(all_nodes(proto.graph), value_types([proto.graph, *subgraphs(proto.graph)]))
    del proto.opset_import[:]
    proto.opset_import.append(helper.make_opsetid("", opset))
    proto.ir_version = helper.find_min_ir_version_for(list(proto.opset_import))
    proto.producer_name, proto.producer_version = PRODUCER, __version__
    _sharpen_outputs(proto)
    return proto


def _sharpen_outputs(proto: onnx.ModelProto) -> None:
    """Give the main graph's outputs the dims ONNX's shape inference proves and the IR did not know (a pass's
    new node keeps the type of the value it replaced): a reader of the export learns them anyway, so writing
    them makes the export say all it knows, and exporting it again changes nothing. Inference runs on the model
    without its weights (:mod:`loopc.frontend.onnx.weightless`: it reads none of their values), which it would
    otherwise serialize and copy."""
    from loopc.frontend.onnx import weightless

    try:
        stripped = weightless.strip(proto, weightless.Weights())
        inferred = onnx.shape_inference.infer_shapes(stripped, data_prop=True).graph.output
    except Exception:  # noqa: BLE001  (inference is a help: the IR's own dims stand)
        return
    for mine, found in zip(proto.graph.output, inferred):
        dims, known = mine.type.tensor_type.shape.dim, found.type.tensor_type.shape.dim
        if len(dims) != len(known):
            continue
        for dim, other in zip(dims, known):
            if not dim.HasField("dim_value") and not dim.dim_param:
                if other.HasField("dim_value"):
                    dim.dim_value = other.dim_value
                elif other.dim_param and not other.dim_param.startswith("unk__"):
                    dim.dim_param = other.dim_param


def _initializers_in_main(main: onnx.GraphProto) -> None:
    """Every initializer in the main graph. The writer makes initializers of main-graph constants only, and
    onnx-graphsurgeon writes one into each nested graph that reads it (into the main graph only when a main
    node reads it too): ONNX names a value once in a graph and those it encloses, and a reader of the export
    would take a nested graph's initializer for a constant of that graph."""
    have = {t.name for t in main.initializer}
    for graph in subgraphs(main):
        for tensor in graph.initializer:
            if tensor.name not in have:
                have.add(tensor.name)
                main.initializer.append(tensor)
        del graph.initializer[:]


__all__ = ["to_onnx"]
