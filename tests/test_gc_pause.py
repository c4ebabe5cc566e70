"""The cyclic collector is paused while loopc builds and is the user's again afterwards, whatever happens."""

from __future__ import annotations

import gc
import pathlib
from collections.abc import Iterator

import pytest

from loopc.compiler import load_ir, optimize
from loopc.errors import LoopcError
from loopc.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_resumed_after_nested_pauses() -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "the inner pause's end resumed collection inside the outer one"
    assert gc.isenabled()


def test_resumed_after_an_error() -> None:
    with pytest.raises(LoopcError, match="no such file"):
        load_ir("no-such-model.onnx")
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_compiling_a_sample_leaves_the_collector_on() -> None:
    model = load_ir(str(pathlib.Path(__file__).resolve().parents[1] / "samples" / "nested_loops.onnx"))
    optimize(model)
    assert gc.isenabled()
