"""Every pass keeps what the model computes, checked one pass at a time on every real model we have.

For each sample (ONNX, with onnxruntime as the oracle; OpenVINO IR, with OpenVINO's CPU plugin) and
each ONNX node test holding a Loop, Scan, If, LSTM, GRU or RNN (its expected outputs the oracle):
import it, interpret the IR and compare with the oracle, then run the default pipeline and, after
every pass that changed the graph, interpret again and compare with the graph before that pass. A
failure names the model and the pass. Models loopc refuses are skipped only where other tests
expect the same refusal; a refusal by a pass comes after the passes before it were checked.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import onnx
import pytest

from loopc.compiler import load_ir
from loopc.errors import FrontendError, LoopcError
from loopc.ir import Graph
from loopc.ir.interpret import InterpretError, interpret
from loopc.passes import PassManager, default_passes
from tests.frontend.onnx.test_node_cases import SEQUENCE_INPUTS
from tests.onnx_cases import STRUCTURED_CASES, structured_cases

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
OPENVINO = SAMPLES / "openvino"

#: What loopc says refusing a node test (an engine takes tensors): the sequence inputs the frontend
#: tests expect refused, and the If tests with a sequence or optional output, refused by the same
#: rule as tests/frontend/onnx/test_errors.py's optional output.
REFUSED = {**SEQUENCE_INPUTS, "test_if_seq": "graph output 'res' is a sequence",
           "test_if_opt": "graph output 'sequence' is an optional"}
#: The float Range expansions count trips from float inputs: loopc needs --max-trips (test_conformance.py).
MAX_TRIPS = {"test_range_float_type_positive_delta_expanded": 64, "test_range_float16_type_positive_delta_expanded": 64,
             "test_range_bfloat16_type_positive_delta_expanded": 64}

#: Between passes values should not move at all; this allows for a reordered float sum.
PASS_RTOL, PASS_ATOL = 1e-5, 1e-6


@dataclass(frozen=True)
class Case:
    """One model, its inputs and its oracle's outputs (by output name, in order), loaded on demand."""

    id: str
    source: onnx.ModelProto | Path
    load: Callable[[], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]
    max_trips: int | None = None
    refusal: Sequence[str] = ()
    rtol: float = 1e-4
    atol: float = 1e-5


def conformance_cases() -> list[Case]:
    found = structured_cases()

    def loader(test: Any) -> Callable[[], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
        inputs, expected = test.data_sets[0]
        return lambda: ({vi.name: x for vi, x in zip(test.model.graph.input, inputs)},
                        {vi.name: y for vi, y in zip(test.model.graph.output, expected)})

    return [Case(f"onnx/{c.name}", c.model, loader(c), MAX_TRIPS.get(c.name),
                 (REFUSED[c.name], "TensorRT engines take tensors only") if c.name in REFUSED else (), 1e-3, 1e-5)
            for c in found]


def onnx_samples() -> list[Case]:
    def loader(path: Path) -> Callable[[], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
        def load() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
            import onnxruntime as ort

            given = dict(np.load(path.with_name(f"{path.stem}_inputs.npz")))
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            feeds = {i.name: given[i.name] for i in session.get_inputs()}
            return feeds, dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))

        return load

    return [Case(f"samples/{p.stem}", p, loader(p), rtol=1e-5, atol=1e-6) for p in sorted(SAMPLES.glob("*.onnx"))]


def openvino_samples() -> list[Case]:
    """The OpenVINO IR samples as tests/frontend/openvino/test_samples.py runs them (same manifest)."""
    from tests.corpus import openvino_outputs

    def loader(xml: Path, inputs: Path) -> Callable[[], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
        def load() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
            feeds = dict(np.load(inputs))
            return feeds, openvino_outputs(xml, feeds)

        return load

    cases = []
    for entry in tomllib.loads((OPENVINO / "cases.toml").read_text())["sample"]:
        inputs = OPENVINO / entry.get("inputs", f"{entry['name']}_inputs.npz")
        xml = OPENVINO / f"{entry['name']}.xml"
        refusal = entry.get("loopc-refuses", [])
        cases.append(Case(f"openvino/{inputs.name.removesuffix('_inputs.npz')}", xml, loader(xml, inputs),
                          entry.get("max-trips"), [refusal] if isinstance(refusal, str) else refusal,
                          entry.get("rtol", 1e-4), entry.get("atol", 1e-5)))
    return cases


CONFORMANCE = conformance_cases()
CASES = CONFORMANCE + onnx_samples() + openvino_samples()


def compare(got: Sequence[Any], want: dict[str, Any], where: str, rtol: float, atol: float) -> None:
    assert len(got) == len(want), f"{where}: {len(got)} outputs, expected {len(want)}"
    for value, (name, expected) in zip(got, want.items()):
        value, expected = np.asarray(value), np.asarray(expected)
        assert value.shape == expected.shape, f"{where}: output {name!r} has shape {value.shape}, not {expected.shape}"
        assert value.dtype == expected.dtype, f"{where}: output {name!r} is {value.dtype}, not {expected.dtype}"
        np.testing.assert_allclose(value.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{where}: output {name!r}")


def refused(case: Case, error: LoopcError, stage: str) -> NoReturn:
    """Skip a model refused as other tests expect; fail on any other refusal."""
    if not case.refusal or not all(part in str(error) for part in case.refusal):
        raise AssertionError(f"{case.id}: refused by {stage}, which no test expects: {error}") from error
    pytest.skip(f"refused by {stage}, as expected: {error}")


def test_the_conformance_cases_are_all_there() -> None:
    names = {c.id for c in CONFORMANCE}
    for name in ("loop11", "scan9_sum", "if", "lstm_with_peepholes", "gru_seq_length", "simple_rnn_reverse",
                 "affine_grid_2d_expanded", "linear_attention_gated_expanded", "range_float_type_positive_delta_expanded"):
        assert f"onnx/test_{name}" in names
    assert len(CONFORMANCE) == STRUCTURED_CASES


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_pass_keeps_the_outputs(case: Case) -> None:
    feeds, want = case.load()
    try:
        model = load_ir(case.source)
    except FrontendError as error:
        refused(case, error, "the frontend")
    names = [name for name, _ in model.outputs()]
    assert names == list(want), f"{case.id}: loopc's outputs {names}, the oracle's {list(want)}"
    got = interpret(model, feeds)  # checks every value against its declared type as it runs
    compare(got, want, f"{case.id}, as imported", case.rtol, case.atol)
    before = dict(zip(names, got))

    def after(name: str, graph: Graph) -> None:
        nonlocal before
        try:
            now = interpret(graph, feeds)
        except InterpretError as error:
            raise AssertionError(f"{case.id}: after pass {name}: {error}") from error
        compare(now, before, f"{case.id}: pass {name}", PASS_RTOL, PASS_ATOL)
        before = dict(zip(names, now))

    try:
        PassManager(default_passes(case.max_trips), dump=after).run(model.graph)
    except LoopcError as error:
        refused(case, error, "a pass")
    assert not case.refusal, f"{case.id}: loopc was expected to refuse it ({case.refusal})"
    compare(list(before.values()), want, f"{case.id}, after every pass", case.rtol, case.atol)
