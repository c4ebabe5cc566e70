"""The simulator against ONNX's node tests, on networks built by TensorRT's own ONNX parser.

The oracle is the expected outputs shipped with each test; the networks are NVIDIA's import of
them, so this checks the simulator's layer semantics, not loopc's converters.
"""

from __future__ import annotations

from loopc.conformance import MATCH, Sweep, node_test_cases, sweep

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
