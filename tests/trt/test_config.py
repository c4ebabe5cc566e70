"""The TensorRT module choice and the builder configuration for machines without a GPU."""

from __future__ import annotations

import pytest

from loopc.errors import BackendError, LoopcError
from loopc.trt import force, gpu, is_rtx, trt
from loopc.precision import Precision
from loopc.trt.config import Session, build_serialized, builder_config, compute_capability_enum, targets

def test_default_module_imports() -> None:
    assert trt().__name__ in ("tensorrt", "tensorrt_rtx")

def test_force_rejects_unknown_module() -> None:
    with pytest.raises(LoopcError, match="unknown TensorRT module 'tensorflow'"):
        force("tensorflow")

@pytest.mark.parametrize("spelling", ["sm89", "SM89", "8.9"])
def test_target_spellings(spelling: str) -> None:
    if not is_rtx():
        pytest.skip("compute-capability targets are a TensorRT-RTX feature")
    assert compute_capability_enum(spelling) == trt().ComputeCapability.SM89

def rtx_targets() -> list[str]:
    """The module's compute capabilities by their values, lower case as users type them, in numeric order."""
    if not is_rtx():
        pytest.skip("compute-capability targets are a TensorRT-RTX feature")
    members = trt().ComputeCapability.__members__.values()
    return [f"sm{int(m)}" for m in sorted(members, key=int) if m.name.startswith("SM")]


def test_targets_are_the_modules_compute_capabilities_lower_case_in_numeric_order() -> None:
    listed = rtx_targets()
    assert targets() == listed
    assert listed.index("sm75") < listed.index("sm89") < listed.index("sm120")  # 120 after 89, not after 12


def test_unknown_target_lists_the_targets_as_users_type_them() -> None:
    listed = ", ".join(rtx_targets())
    with pytest.raises(LoopcError) as refused:
        compute_capability_enum("sm12")
    assert str(refused.value) == f'unknown target \'sm12\'; TensorRT-RTX builds for {listed} (e.g. target="sm89")'


@pytest.mark.parametrize(("target", "gpus"), [
    ("sm90", "Hopper: H100, H200, GH200"), ("9.0", "Hopper: H100, H200, GH200"), ("sm100", "Blackwell: B200, GB200")])
def test_a_datacenter_gpu_is_sent_to_datacenter_tensorrt(target: str, gpus: str) -> None:
    listed = ", ".join(rtx_targets())
    with pytest.raises(LoopcError) as refused:
        compute_capability_enum(target)
    assert str(refused.value) == (
        f"target {target!r} ({gpus}) is not one TensorRT-RTX builds for ({listed}); build for it with datacenter "
        "TensorRT (pip install tensorrt; loopc then uses it), which builds for the GPU present, on a machine with "
        "that GPU")


def test_an_older_gpu_is_named_with_what_tensorrt_rtx_builds_for() -> None:
    listed = ", ".join(rtx_targets())
    with pytest.raises(LoopcError) as refused:
        compute_capability_enum("sm70")
    assert str(refused.value) == f"target 'sm70' (Volta: V100) is not one TensorRT-RTX builds for ({listed})"

def test_builds_ahead_of_time_without_gpu() -> None:
    session = Session()
    network = session.create_network()
    x = network.add_input("x", trt().float32, (2, 3))
    network.mark_output(network.add_unary(x, trt().UnaryOperation.EXP).get_output(0))
    plan = build_serialized(session, network, builder_config(session))
    assert len(plan) > 1000

def test_builder_failure_carries_tensorrt_reason() -> None:
    session = Session()
    network = session.create_network()
    x = network.add_input("x", trt().float32, (-1, 3))  # dynamic, but no optimization profile given
    network.mark_output(network.add_unary(x, trt().UnaryOperation.EXP).get_output(0))
    with pytest.raises(BackendError, match="TensorRT could not build the network: .*profile"):
        build_serialized(session, network, builder_config(session))

def test_gpu_probe_answers() -> None:
    cc = gpu.compute_capability()
    assert cc is None or (len(cc) == 2 and cc[0] >= 3)
    assert gpu.available() == (cc is not None)


def test_half_precision_is_a_builder_flag_only_where_the_builder_has_one() -> None:
    """TensorRT-RTX has no FP16 flag (loopc retypes the network instead); datacenter TensorRT gets its flag."""
    cfg = builder_config(Session(), precision=Precision("fp16"))
    if not hasattr(trt().BuilderFlag, "FP16"):
        assert is_rtx()
    else:
        assert cfg.get_flag(trt().BuilderFlag.FP16)
