"""``loopc export`` on every sample, OpenVINO sample and corpus model: the export passes ONNX's full checker,
onnxruntime running it matches the reference outputs (onnxruntime on the original, OpenVINO's CPU plugin, or
the framework's own), exporting the export changes nothing, and loopc builds the same loops from it."""

from __future__ import annotations

import copy

import onnx
import pytest

from loopc.compiler import compile
from tests.corpus import compare
from loopc.exporter import export_model
from loopc.fileio import load_arrays
from loopc.fingerprint import LoopInfo, Node
from tests.backend.onnx.cases import ExportCase, export_cases, onnxruntime_outputs

CASES = export_cases()

@pytest.fixture(scope="module")
def exports() -> dict[str, onnx.ModelProto]:
    return {}


def exported(case: ExportCase, cache: dict[str, onnx.ModelProto]) -> onnx.ModelProto:
    if case.id not in cache:
        cache[case.id] = export_model(case.model, max_trips=case.max_trips)[0]
    return cache[case.id]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_export_is_valid_onnx_and_matches_the_reference(case: ExportCase, exports: dict[str, onnx.ModelProto]) -> None:
    model = exported(case, exports)
    onnx.checker.check_model(model, full_check=True)
    feeds = load_arrays(case.inputs)
    got = onnxruntime_outputs(model, feeds)
    result = compare(got, case.reference(feeds), case.rtol, case.atol)
    assert result.ok, result.detail


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_exporting_the_export_changes_nothing(case: ExportCase, exports: dict[str, onnx.ModelProto]) -> None:
    first = exported(case, exports)
    second, _ = export_model(first, max_trips=case.max_trips)
    assert canonical(second) == canonical(first)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_building_the_export_gives_the_same_loops(case: ExportCase, exports: dict[str, onnx.ModelProto]) -> None:
    original = compile(case.model, max_trips=case.max_trips).report.loops
    again = compile(exported(case, exports), max_trips=case.max_trips).report.loops
    assert loop_shape(again) == loop_shape(original)


def canonical(model: onnx.ModelProto) -> bytes:
    """``model`` with its names replaced by their order of appearance and the dims of nested graphs' inputs and
    outputs (declared types, which a second round of inference may state more or less precisely) dropped."""
    model = copy.deepcopy(model)
    names: dict[str, str] = {}

    def name(text: str) -> str:
        return names.setdefault(text, f"v{len(names)}") if text else text

    def visit(graph: onnx.GraphProto, nested: bool) -> None:
        graph.name = ""
        del graph.value_info[:]
        for tensor in graph.initializer:
            tensor.name = name(tensor.name)
        for info in graph.input:
            info.name = name(info.name)
        for node in graph.node:
            node.name = ""
            node.input[:] = [name(v) for v in node.input]
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    visit(attr.g, True)
                elif attr.type == onnx.AttributeProto.TENSOR:
                    attr.t.name = ""
            node.output[:] = [name(v) for v in node.output]
        for info in graph.output:
            info.name = name(info.name)
        if nested:
            for info in [*graph.input, *graph.output]:
                info.type.tensor_type.ClearField("shape")

    visit(model.graph, False)
    return model.SerializeToString()


def loop_shape(nodes: list[Node]) -> list[tuple[object, ...]]:
    """The loops of a network without their layers' names, each role list in a stable order."""
    shape: list[tuple[object, ...]] = []
    for node in nodes:
        if isinstance(node, LoopInfo):
            shape.append(("loop", node.trip_limits, node.trip_count, sorted((i.axis, i.reverse) for i in node.iterators),
                          sorted(tuple(r.shape) for r in node.recurrences),
                          sorted((o.kind, o.axis or 0) for o in node.outputs), node.layers_per_iteration,
                          node.matmuls_per_iteration, node.macs_per_iteration, loop_shape(node.children)))
        else:
            shape.append(("if", node.layers, loop_shape(node.children)))
    return shape


def test_canonical_tells_a_changed_model_apart() -> None:
    """The fixed-point test above would pass whatever it compared if canonical() lost what differs."""
    case = next(c for c in CASES if c.id == "samples/running_sum")
    model, _ = export_model(case.model)
    changed = copy.deepcopy(model)
    changed.graph.node[0].op_type = "Sub" if changed.graph.node[0].op_type != "Sub" else "Add"
    renamed = copy.deepcopy(model)
    renamed.graph.node[0].name = "another"
    assert canonical(changed) != canonical(model)
    assert canonical(renamed) == canonical(model)
