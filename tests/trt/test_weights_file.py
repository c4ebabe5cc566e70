"""The weights a build sends its worker: written to a file that the worker maps, read back as they were, and no
copy of them made to give them to TensorRT."""

from __future__ import annotations

import pathlib
import pickle
import tempfile

import ml_dtypes
import numpy as np
import pytest

import loopc
from loopc.backend.trt.context import ConversionContext, held_array
from loopc.trt import is_rtx, trt
from loopc.trt.config import Session
from loopc.trt.messages import captured
from loopc.trt.isolated import BuilderCrashError, WeightsFile

RNG = np.random.default_rng(7)

ARRAYS: dict[str, np.ndarray] = {
    "float32": RNG.standard_normal((33, 17)).astype(np.float32),
    "int64": np.arange(-5, 20, dtype=np.int64).reshape(5, 5),
    "bool": RNG.random(19) < 0.5,
    "bfloat16": RNG.standard_normal(21).astype(ml_dtypes.bfloat16),
    "float8": RNG.standard_normal((3, 7)).astype(ml_dtypes.float8_e4m3fn),
    "int4": np.array([-8, -1, 0, 3, 7] * 4, dtype=ml_dtypes.int4),
    "scalar": np.array(2.5, np.float64),
    "empty": np.zeros((0, 4), np.float32),
    "strings": np.array(["a", "loop", "ä"]),
    "objects": np.array([b"x", None, 3], dtype=object),
    "transposed": np.arange(12, dtype=np.int32).reshape(3, 4).T,
}


@pytest.fixture
def temp_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_arrays_come_back_from_the_mapped_file_as_they_went(temp_dir: pathlib.Path) -> None:
    stored = pickle.loads(pickle.dumps(WeightsFile.write(ARRAYS)))  # as the worker receives it
    assert len(list(temp_dir.iterdir())) == 1
    assert {offset % WeightsFile.ALIGNMENT for offset, _, _ in stored.placed.values()} == {0}
    assert set(stored.carried) == {"objects"}
    got = stored.arrays()
    assert list(temp_dir.iterdir()) == []  # mapped, then removed
    assert got.keys() == ARRAYS.keys()
    for key, want in ARRAYS.items():
        assert (got[key].dtype, got[key].shape) == (want.dtype, want.shape), key
        if key == "objects":
            assert got[key].tolist() == want.tolist()
            continue
        assert not got[key].flags.writeable, key
        assert got[key].tobytes() == want.tobytes(), key


def test_without_a_temporary_folder_the_arrays_travel_with_the_request(tmp_path: pathlib.Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    stored = pickle.loads(pickle.dumps(WeightsFile.write(ARRAYS)))
    assert stored.path == "" and not stored.placed
    got = stored.arrays()
    assert got.keys() == ARRAYS.keys()
    for key, want in ARRAYS.items():
        assert got[key].dtype == want.dtype and got[key].tolist() == want.tolist(), key


def test_a_file_of_no_bytes_is_not_mapped(temp_dir: pathlib.Path) -> None:
    got = WeightsFile.write({"empty": np.zeros((2, 0), np.int8)}).arrays()
    assert got["empty"].shape == (2, 0) and list(temp_dir.iterdir()) == []


def test_an_array_tensorrt_can_hold_is_given_without_a_copy_under_numpys_own_dtype() -> None:
    weights = RNG.standard_normal((64, 32)).astype(np.float32)
    weights.flags.writeable = False
    unpickled = pickle.loads(pickle.dumps(weights))
    assert unpickled.dtype is not np.dtype(np.float32)  # what TensorRT's binding refuses
    for given in (weights, weights.reshape(32, 64), weights[8:24], unpickled):
        held = held_array(given)
        assert held.dtype is np.dtype(np.float32) and held.flags.c_contiguous
        assert np.shares_memory(held, given)
        np.testing.assert_array_equal(held, given)


def test_a_mapped_array_becomes_a_constant_with_its_values() -> None:
    weights = RNG.standard_normal((16, 8)).astype(np.float32)
    mapped = pickle.loads(pickle.dumps(WeightsFile.write({"w": weights}))).arrays()["w"]
    session = Session()
    ctx = ConversionContext(session, session.create_network())
    refused: list[str] = []
    with captured(refused), pytest.raises(TypeError):  # the mapped array's dtype object, equal but not NumPy's
        ctx.network.add_constant(mapped.shape, mapped)
    assert "Could not implicitly convert NumPy data type" in " ".join(refused)
    ctx.constant(mapped, "w")
    layer = ctx.network.get_layer(ctx.network.num_layers - 1)
    layer.__class__ = trt().IConstantLayer
    np.testing.assert_array_equal(layer.weights.reshape(16, 8), weights)


@pytest.mark.parametrize("given, want", [
    (np.arange(6, dtype=np.float32).reshape(2, 3).T, np.array([[0, 3], [1, 4], [2, 5]], np.float32)),
    (np.array([0.5, 1 / 3], np.float64), np.array([0.5, 1 / 3], np.float32)),
    (np.array([1, -2], ">i4"), np.array([1, -2], np.int32)),
    (np.array(7, np.uint16), np.array(7, np.int32)),
])
def test_an_array_tensorrt_cannot_hold_as_it_is_is_copied_into_one_it_can(given: np.ndarray, want: np.ndarray) -> None:
    held = held_array(given)
    assert held.dtype is want.dtype and held.flags.c_contiguous and held.shape == want.shape
    assert not np.shares_memory(held, given)
    np.testing.assert_array_equal(held, want)


@pytest.mark.skipif(not is_rtx(), reason="the crash is TensorRT-RTX 1.7's")
def test_no_file_is_left_after_a_build_nor_after_a_crash(temp_dir: pathlib.Path) -> None:
    models = pathlib.Path(__file__).parent / "models"
    loopc.build(models / "reversed_rnn.onnx", temp_dir / "m.plan", shapes="x:4x2x8")
    assert [p.name for p in temp_dir.iterdir()] == ["m.plan"]
    with pytest.raises(BuilderCrashError):
        loopc.build(models / "shape_where_in_loop.onnx", temp_dir / "crash.plan", min_shapes="x:1x1x16",
                    opt_shapes="x:8x8x16", max_shapes="x:64x64x16")
    assert [p.name for p in temp_dir.iterdir()] == ["m.plan"]
