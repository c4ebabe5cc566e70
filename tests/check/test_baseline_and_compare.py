"""Baselines and the numbers comparison, on hand-made fingerprints and arrays whose verdicts are worked out here."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.check.baseline import differences
from loopc.check.compare import compare
from loopc.check.manifest import DEFAULT_THRESHOLDS


def fingerprint(*loops: dict, layers: int = 50, engine: int = 1000, build: float = 1.0,
                reference: float = 10.0) -> dict:
    """``build`` is the build time over a reference build of ``reference`` seconds."""
    return {"layers": layers, "loops": list(loops), "engine_bytes": engine, "build_ratio": build,
            "build_seconds": build * reference, "tensorrt": "t 1", "loopc": "0.1"}


def loop(name: str, layers: int = 10, macs: int | None = 256, path: int = 3, children: tuple = ()) -> dict:
    return {"name": name, "kind": "loop", "trip_limits": ["kCOUNT"], "trip_count": 6, "iterators": [],
            "recurrences": [{}], "outputs": [{}], "layers_per_iteration": layers, "macs_per_iteration": macs,
            "critical_path": ["x"] * path, "children": list(children)}


def regressions(old: dict, new: dict, **thresholds: float) -> list[tuple[str, object, object]]:
    limits = {**DEFAULT_THRESHOLDS, **{k.replace("_", "-"): v for k, v in thresholds.items()}}
    return [(d.what, d.baseline, d.current) for d in differences(old, new, limits) if d.regression]


def test_the_same_fingerprint_has_no_differences() -> None:
    same = fingerprint(loop("a"), loop("b"))
    assert differences(same, same, DEFAULT_THRESHOLDS) == []


def test_an_unrolled_loop_is_gone_and_its_layers_moved_out() -> None:
    old = fingerprint(loop("outer", children=(loop("inner"),)), layers=50)
    new = fingerprint(loop("outer"), layers=110)
    assert regressions(old, new) == [("loop inner", "present", "gone"), ("loops", 2, 1),
                                     ("layers (a loop gone and layers up: unrolled?)", 50, 110)]


def test_a_renamed_loop_is_matched_in_order_not_reported_gone() -> None:
    assert regressions(fingerprint(loop("/Loop__1")), fingerprint(loop("/Loop__7"))) == []


def test_work_per_iteration_may_not_grow_by_default() -> None:
    old, new = fingerprint(loop("a")), fingerprint(loop("a", layers=11, macs=512, path=4))
    assert regressions(old, new) == [("loop a: layers per iteration", 10, 11), ("loop a: macs per iteration", 256, 512),
                                     ("loop a: critical path (layers)", 3, 4)]
    assert regressions(old, new, layers_per_iteration=1.2, macs_per_iteration=2.0, critical_path=1.5) == []


def test_less_work_is_listed_but_not_a_regression() -> None:
    found = differences(fingerprint(loop("a")), fingerprint(loop("a", layers=8)), DEFAULT_THRESHOLDS)
    assert [(d.what, d.baseline, d.current, d.regression) for d in found] == [
        ("loop a: layers per iteration", 10, 8, False)]


def test_engine_size_and_build_time_have_ratio_thresholds() -> None:
    old = fingerprint(loop("a"), engine=1000, build=1.0)
    assert regressions(old, fingerprint(loop("a"), engine=1100, build=2.0)) == []  # exactly at 1.10 and 2.0
    assert regressions(old, fingerprint(loop("a"), engine=1101, build=2.01)) == [
        ("engine size (bytes)", 1000, 1101), ("build time (over the reference build)", 1.0, 2.01)]
    quicker = differences(old, fingerprint(loop("a"), build=0.7), DEFAULT_THRESHOLDS)
    assert quicker == []  # a time that did not regress is noise, not a change


def test_a_slower_build_by_less_than_a_second_is_noise() -> None:
    old = fingerprint(loop("a"), build=1.0, reference=0.2)  # 0.2 s then
    assert regressions(old, fingerprint(loop("a"), build=5.0, reference=0.2)) == []  # 1.0 s now: 0.8 s slower
    assert regressions(old, fingerprint(loop("a"), build=6.5, reference=0.2)) == [  # 1.3 s now: 1.1 s slower
        ("build time (over the reference build)", 1.0, 6.5)]


def test_unknown_macs_are_not_compared() -> None:
    assert regressions(fingerprint(loop("a", macs=None)), fingerprint(loop("a", macs=10**9))) == []


def test_growth_from_zero_is_a_regression() -> None:
    assert regressions(fingerprint(loop("a", macs=0)), fingerprint(loop("a", macs=16))) == [
        ("loop a: macs per iteration", 0, 16)]


def test_grown_convolution_macs_are_a_regression() -> None:
    """A loop of 2 convolutions, 8 → 16 channels: 27,648 → 55,296 MACs (see test_conv_fingerprint)."""
    old = fingerprint({**loop("a", macs=27_648), "convolutions_per_iteration": 2})
    new = fingerprint({**loop("a", macs=55_296), "convolutions_per_iteration": 2})
    assert regressions(old, new) == [("loop a: macs per iteration", 27_648, 55_296)]


def test_a_baseline_from_before_convolutions_were_counted_lists_their_macs() -> None:
    """A baseline without ``convolutions_per_iteration`` counted a convolving loop's matrix products only (here
    none): its MACs now include the convolutions', which is no regression; re-recording it counts them."""
    old, new = fingerprint(loop("a", macs=0)), fingerprint({**loop("a", macs=27_648), "convolutions_per_iteration": 2})
    found = differences(old, new, DEFAULT_THRESHOLDS)
    assert [(d.baseline, d.current, d.regression) for d in found] == [(0, 27_648, False)]
    assert "counted no convolutions" in found[0].what
    assert regressions(new, fingerprint({**loop("a", macs=55_296), "convolutions_per_iteration": 2})) != []


def verdict(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    [result] = compare({"y": got}, {"y": want}, rtol, atol)
    return result.passed


@pytest.mark.parametrize("got, want, rtol, atol, passes", [
    ([1.0, 2.05], [1.0, 2.0], 0.0, 0.1, True),       # |0.05| <= atol
    ([1.0, 2.05], [1.0, 2.0], 0.03, 0.0, True),      # 0.05 / 2 = 0.025 <= rtol
    ([1.0, 2.05], [1.0, 2.0], 0.02, 0.04, False),    # neither
    ([100.5], [100.0], 0.01, 0.0, True),             # either tolerance suffices, element by element
    ([0.0, 100.5], [1e-9, 100.0], 0.01, 1e-6, True),
])
def test_tolerances_mean_what_they_mean_in_polygraphy(got: list, want: list, rtol: float, atol: float,
                                                      passes: bool) -> None:
    assert verdict(np.array(got, np.float32), np.array(want, np.float32), rtol, atol) is passes


def test_missing_outputs_and_other_shapes_fail_with_the_reason() -> None:
    found = compare({"a": np.zeros((2, 3), np.float32)}, {"a": np.zeros((3, 2), np.float32), "b": np.zeros(1)},
                    1e-4, 1e-5)
    assert [(r.name, r.passed, r.reason) for r in found] == [
        ("a", False, "shape [2, 3], reference [3, 2]"), ("b", False, "the model has no output 'b'")]


def test_integers_and_booleans_compare_exactly_at_zero_tolerance() -> None:
    assert verdict(np.array([3, 4], np.int64), np.array([3, 4], np.int64), 0, 0)
    assert not verdict(np.array([3, 5], np.int64), np.array([3, 4], np.int64), 0, 0)
    assert not verdict(np.array([True, False]), np.array([True, True]), 0, 0)
    [same] = compare({"y": np.array([1.5])}, {"y": np.array([1.5])}, 0, 0)
    assert (same.max_abs, same.max_rel) == (0.0, 0.0)
