"""The ONNX package's node tests that hold given ops at any depth: the conformance models tests share."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import onnx

#: The node-test modules whose cases hold a loop, a conditional or a recurrent op (importing only
#: these keeps collection fast: collecting every node test takes seconds), and those ops.
STRUCTURED_MODULES = ["loop", "scan", "lstm", "gru", "rnn", "rangeop", "sequence_map", "linear_attention", "if_",
                      "affinegrid"]
STRUCTURED_OPS = {"Loop", "Scan", "If", "LSTM", "GRU", "RNN"}
#: How many there are (onnx 1.23): the tests that use them check it, so that none goes missing unseen.
STRUCTURED_CASES = 56


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


def structured_cases() -> list[Any]:
    """The node tests with a loop, a conditional or a recurrent op at any depth, by name."""
    return node_cases(STRUCTURED_MODULES, STRUCTURED_OPS)


def loopc_failures(cases: Iterable[Any], refused: Mapping[str, str] | None = None) -> list[str]:
    """Each of ``cases`` run through loopc (the real builder, the simulator, the case's expected outputs):
    one line per case that does not match, or, when ``refused`` names it, is not refused by the frontend
    with one line holding the reason given. Empty when all is well."""
    from tests.conformance import MATCH, PARSE_FAILED, run_case

    refused = refused or {}
    failures = []
    for case in cases:
        result = run_case(case, "loopc")
        if case.name in refused:
            ok = result.status == PARSE_FAILED and refused[case.name] in result.detail and "\n" not in result.detail
        else:
            ok = result.status == MATCH
        if not ok:
            failures.append(f"{case.name}: {result.status}: {result.detail}")
    return failures
