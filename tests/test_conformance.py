"""The simulator against ONNX's node tests, on networks built by TensorRT's own ONNX parser.

The oracle is the expected outputs shipped with each test; the networks are NVIDIA's import of
them, so this checks the simulator's layer semantics, not loopc's converters.
"""

from __future__ import annotations

from tests.conformance import MATCH, Sweep, node_test_cases, sweep

# Floors measured when this test was written: if TensorRT's parser or builder stops accepting
# cases, the rates below could pass on too few cases, so the counts are guarded too.
MIN_JUDGED = 800
MIN_LOOP_CASES = 34


def test_onnx_node_conformance() -> None:
    result = Sweep(list(sweep(node_test_cases())))
    table = result.table()
    print(table)
    # "Judged" leaves out the cases whose parsed network TensorRT itself declares with an output
    # shape the test does not expect: those are wrong before any simulation.
    judged = result.judged
    loops = [r for r in judged if r.has_loop]
    assert len(judged) >= MIN_JUDGED, table
    assert len(loops) >= MIN_LOOP_CASES, table
    failing_loops = [f"{r.name}: {r.detail}" for r in loops if r.status != MATCH]
    assert not failing_loops, "\n".join(failing_loops)
    assert result.rate(judged) >= 0.98, table


def test_loopc_builds_every_onnx_loop_case() -> None:
    """ONNX's node tests with Loop, Scan, LSTM, GRU or RNN, through loopc: each builds with the real
    builder and matches — except graphs whose inputs/outputs are sequences (no engine takes those).
    The float Range expansions compute their trip count from float inputs, which TensorRT cannot
    count with: without --max-trips loopc refuses them and says so; with it, they build and match."""
    from benchmarks.loop_conformance import has_loop
    from tests.conformance import NOT_TENSORS, run_case

    cases = [case for case in node_test_cases() if has_loop(case)]
    results = [run_case(case, "loopc") for case in cases]
    float_range = [r for r in results if "range_float" in r.name or "range_bfloat" in r.name]
    failing = [f"{r.name}: {r.status}: {r.detail}" for r in results
               if r.status not in (MATCH, NOT_TENSORS) and r not in float_range]
    assert not failing, "\n".join(failing)
    assert sum(r.status == MATCH for r in results) >= 38
    refused = [r for r in results if r.status == NOT_TENSORS]
    assert len(refused) == 8 and all("TensorRT engines take tensors only" in r.detail for r in refused), refused
    assert len(float_range) == 3
    for r in float_range:
        assert "computed from floating-point values" in r.detail and "--max-trips" in r.detail, r.detail
    bounded = [run_case(case, "loopc", max_trips=64) for case in cases if case.name in {r.name for r in float_range}]
    assert [r.status for r in bounded] == [MATCH] * 3, [r.detail for r in bounded]
