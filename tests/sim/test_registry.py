"""The simulator's registries: kernels for arithmetic layers, rules for loop and conditional layers."""

from __future__ import annotations

from loopc.sim import supported_layer_types
from loopc.sim.registry import KERNELS, STRUCTURE, rule_for

#: Every layer of TensorRT's loop and conditional language (``ILoop``, ``IIfConditional``).
CONTROL = {"TRIP_LIMIT", "ITERATOR", "RECURRENCE", "LOOP_OUTPUT", "CONDITION", "CONDITIONAL_INPUT",
           "CONDITIONAL_OUTPUT"}


def test_loop_and_conditional_layers_are_registered_rules_not_kernels() -> None:
    assert set(STRUCTURE.keys()) == CONTROL
    assert not CONTROL & set(KERNELS.keys())
    assert CONTROL <= supported_layer_types()
    assert rule_for("ELEMENTWISE") is None

