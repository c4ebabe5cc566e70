"""An ONNX model's nested graphs (loop and branch bodies), walked once for the frontend, the exporter and its
report."""

from __future__ import annotations

from collections.abc import Iterator

import onnx


def subgraphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graphs ``graph``'s nodes hold (loop and branch bodies), at every depth."""
    for node in graph.node:
        for attr in node.attribute:
            for body in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs):
                yield body
                yield from subgraphs(body)


def all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Every node of ``graph`` and of the graphs its nodes hold."""
    yield from graph.node
    for body in subgraphs(graph):
        yield from body.node
