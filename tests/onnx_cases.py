"""The ONNX package's node tests that hold given ops at any depth: the conformance models tests share."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np
import onnx


def ops_in(graph: onnx.GraphProto) -> set[str]:
    """Every op type of ``graph`` and of the graphs nested in its nodes."""
    found = set()
    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found |= ops_in(attr.g)
    return found


def node_cases(modules: Iterable[str], ops: set[str]) -> list[Any]:
    """The node tests of ``onnx.backend.test.case.node.<module>`` for each module that hold one of ``ops``, by name."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for module in modules:
            importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return sorted((c for c in node._NodeTestCases if ops_in(c.model.graph) & ops), key=lambda c: c.name)
