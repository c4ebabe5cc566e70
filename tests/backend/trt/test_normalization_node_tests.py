"""ONNX's own node tests for the normalizations, Hardmax, Swish/SwiGLU, the windows and the random ops,
through loopc's converters (built with the real builder, simulated, compared with the expected outputs the
tests ship) and, for the layers these add to the simulator (LRN, grouped NORMALIZATION), through the
networks TensorRT's own parser builds: evidence about the simulator that loopc did not write.

The random ops' cases are built and simulated, with outputs of the expected shapes, but their values are
drawn: ``run_case`` reports them as RANDOM and their op tests check them statistically."""

from __future__ import annotations

from tests.conformance import MATCH, RANDOM, node_test_cases, run_case

PREFIXES = ("test_layer_normalization", "test_group_normalization", "test_lrn", "test_lpnormalization", "test_mvn",
            "test_rms_normalization", "test_hardmax", "test_swish", "test_swiglu", "test_blackmanwindow",
            "test_hammingwindow", "test_hannwindow", "test_bernoulli")
RANDOM_PREFIXES = ("test_bernoulli",)
#: Cases of the new simulator layers that TensorRT's parser builds, run on its networks.
PARSER_BUILT = ("test_lrn", "test_group_normalization")


def _cases(prefixes: tuple[str, ...]) -> list:
    return [c for c in node_test_cases() if c.name.startswith(prefixes)]


def test_node_cases_through_loopc():
    """One test over all cases (collecting ONNX's node tests takes seconds: not at collection time)."""
    cases = _cases(PREFIXES)
    assert len(cases) == 138, len(cases)
    wrong = []
    for case in cases:
        result = run_case(case, "loopc")
        want = RANDOM if case.name.startswith(RANDOM_PREFIXES) else MATCH
        if result.status != want:
            wrong.append(f"{case.name}: {result.status}: {result.detail}")
    assert not wrong, "\n".join(wrong)


def test_parser_built_networks_of_the_new_layers_simulate_to_the_expected_outputs():
    cases = _cases(PARSER_BUILT)
    assert len(cases) >= 6
    results = {c.name: run_case(c, "trt-onnx") for c in cases}
    assert {r.status for r in results.values()} == {MATCH}, {n: r.detail for n, r in results.items()}
    assert any("LRN" in r.layer_types for r in results.values())
