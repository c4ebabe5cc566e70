"""The corpus of real exports (``tests/models``): each builds with ``loopc build`` and no flags, and its
simulated engine matches the outputs of the framework's own eager run.

A case whose loop has no bound at all (a data-dependent while loop whose outputs grow) states the
``max-trips`` a user must give: with no flags loopc must refuse, naming that flag and why the loop's trips
could not be counted. A case at a
known limit states loopc's refusal; there TensorRT's own parser must fail too, so that loopc
builds every case the parser builds.
"""

from __future__ import annotations

import pathlib

import pytest

from tests.corpus import Case, build_with_loopc, build_with_parser, load_corpus, run

CASES = load_corpus(pathlib.Path(__file__).resolve().parent / "models")


def test_the_corpus_covers_every_exporter() -> None:
    assert {case.suite for case in CASES} >= {"tf2onnx", "torch", "paddle", "onnxscript", "jax2onnx", "openvino_tf"}


def test_the_parser_is_not_tried_on_an_openvino_ir() -> None:
    case = next(case for case in CASES if case.model.suffix == ".xml")
    attempt = build_with_parser(case)
    assert not attempt.ok and "reads ONNX, not OpenVINO IR" in attempt.detail


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_export_builds_and_matches_its_framework(case: Case) -> None:
    built = build_with_loopc(case)
    if case.refusal is not None:
        assert not built.ok and case.refusal in built.detail, built.detail
        assert not build_with_parser(case).ok, "TensorRT's parser builds a case loopc refuses"
        return
    if case.max_trips is not None:  # refused naming the flag, and why its trips could not be counted
        assert not built.ok and "--max-trips" in built.detail and "(counted-loops: " in built.detail, built.detail
        built = build_with_loopc(case, case.max_trips)
    assert built.ok, built.detail
    result = run(case)
    assert result.ok, result.detail
