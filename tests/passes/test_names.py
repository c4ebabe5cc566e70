"""Names and origins after the passes: the same model gives the same IR text in any process state,
and every node the passes made leads back to a node of the user's model."""

from __future__ import annotations

import pathlib

import pytest

from loopc.compiler import load_ir, optimize
from loopc.ir import Model, format_model

SAMPLES = sorted((pathlib.Path(__file__).resolve().parents[2] / "samples").glob("*.onnx"))


def compiled(path: pathlib.Path) -> Model:
    model = load_ir(str(path))
    optimize(model)
    return model


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_the_ir_is_the_same_whatever_was_compiled_before(path: pathlib.Path) -> None:
    first = format_model(compiled(path))
    for other in SAMPLES:  # whatever else this process compiles in between
        compiled(other)
    assert format_model(compiled(path)) == first


#: Samples whose passes make nodes (trip counters, cuts of padded outputs, merged concatenations, folds).
MAKING = ["cumulative", "greedy_gru_decoder", "growing_cat", "running_sum"]


@pytest.mark.parametrize("name", MAKING)
def test_nodes_made_by_passes_carry_an_origin(name: str) -> None:
    imported = load_ir(str(next(p for p in SAMPLES if p.stem == name)))
    before = {id(node) for _, node in imported.graph.walk()}
    optimize(imported)
    made = [node for _, node in imported.graph.walk() if id(node) not in before]
    assert made, "the passes made no node here: pick another sample"
    assert [node for node in made if not node.origin] == []
    assert all(node.origin.startswith("node ") for node in made)  # an ONNX node of the user's model
