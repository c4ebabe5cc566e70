"""ONNX's own node tests for the ops added for real exporters (ReverseSequence, Tile, Pad, OneHot,
NonZero, GatherND, Trilu, Dropout, the composed activations, the normalizations, Compress,
EyeLike, Scatter, the global pools), through loopc's converters: built with the real builder, simulated, and compared with the
expected outputs the tests ship. The cases loopc refuses are listed with the reason it gives."""

from __future__ import annotations

from tests.conformance import node_test_cases
from tests.onnx_cases import loopc_failures

OPS = {"ReverseSequence", "Tile", "Pad", "OneHot", "NonZero", "GatherND", "Trilu", "Dropout", "HardSwish", "Mish",
       "Celu", "Shrink", "IsInf", "PRelu", "BatchNormalization", "InstanceNormalization", "Compress", "EyeLike",
       "Scatter", "GlobalAveragePool", "GlobalMaxPool"}

#: Refused, and why: training-mode graphs (random or updating statistics), a float depth input that
#: sizes the output.
REFUSED = {
    "test_batchnorm_example_training_mode": "training mode",
    "test_batchnorm_epsilon_training_mode": "training mode",
    **{f"test_training_dropout{s}": "computed training_mode" for s in
       ("", "_mask", "_default", "_default_mask", "_zero_ratio", "_zero_ratio_mask")},
    **{f"test_onehot_{s}": "floating-point depth input" for s in
       ("without_axis", "with_axis", "negative_indices", "out_of_range_indices", "with_negative_axis",
        "with_bfloat16_values")},
}

#: Match since folded bfloat16 constants convert (they reached TensorRT as NumPy's "V16"): kept by name.
BF16_CONSTANTS = {"test_attention_4d_causal_padded_kv_bf16_expanded", "test_attention_4d_padded_kv_bf16_expanded"}


def test_node_cases_through_loopc():
    """One test over all cases (collecting ONNX's node tests takes seconds: not at collection time)."""
    cases = [c for c in node_test_cases() if {n.op_type for n in c.model.graph.node} & OPS]
    names = {c.name for c in cases}
    assert len(cases) >= 90 and set(REFUSED) | BF16_CONSTANTS <= names, sorted(names)
    wrong = loopc_failures(cases, REFUSED)
    assert not wrong, "\n".join(wrong)


#: Node tests whose axes, split sizes, steps or pads are graph inputs (TensorRT's parser makes them shape
#: tensors), and ArgMax/ArgMin with select_last_index = 1: each must build and match.
COMPUTED_FORMS = {"test_cumsum_": 9, "_select_last_index": 16, "test_split_variable_parts": 6,
                  "test_split_zero_size_splits": 2, "test_slice": 8, "test_constant_pad_": 2}


def test_computed_operand_forms_through_loopc():
    cases = {c.name: c for pattern in COMPUTED_FORMS for c in node_test_cases(pattern)}
    for pattern, count in COMPUTED_FORMS.items():
        assert sum(pattern in name for name in cases) == count, pattern
    wrong = loopc_failures(cases.values())
    assert not wrong, "\n".join(wrong)
