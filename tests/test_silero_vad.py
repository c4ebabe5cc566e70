"""Silero VAD as the ``silero-vad`` package ships it: its ONNX variants, with their trained weights.

Each takes audio chunks as Silero's own wrapper feeds them (512 samples at 16 kHz, 256 at 8 kHz, each after
the previous chunk's last 64 or 32 samples) and a recurrent state. Their decoders squeeze the time axis
under an ``If`` on its length (branches of different ranks), and one model holds both rates' networks under
an ``If`` on the sample-rate input. Every variant builds at both rates and matches onnxruntime; what a
build cannot decide, loopc says how to decide.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest

from loopc import LoopcError, api
from tests.shipped import shipped

VERSION = "6.2.3"
#: The window each rate feeds: its chunk after the previous chunk's context.
WINDOW = {16000: 512 + 64, 8000: 256 + 32}
#: Variant → the rates it serves.
VARIANTS = {
    "silero_vad": (16000, 8000),
    "silero_vad_half": (16000, 8000),
    "silero_vad_16k_op15": (16000, 8000),
    "silero_vad_op18_ifless": (16000, 8000),
    "silero_vad_16k_sequence": (16000,),
    "silero_vad_openvino_16k": (16000,),
}


@pytest.fixture(scope="module")
def models() -> pathlib.Path:
    return shipped("silero-vad", VERSION) / "silero_vad" / "data"


def feeds(path: pathlib.Path, rate: int, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs as the package's wrapper gives them (the sequence variant: ``batch`` windows of one stream)."""
    rng = np.random.default_rng(seed)
    names = {i.name for i in ort.InferenceSession(str(path)).get_inputs()}
    given = {"input": (rng.standard_normal((batch, WINDOW[rate])) * 0.3).astype(np.float32),
             "state": (rng.standard_normal((2, batch, 128)) * 0.3).astype(np.float32),
             "sr": np.array(rate, np.int64),
             "h": (rng.standard_normal((1, 1, 128)) * 0.3).astype(np.float32),
             "c": (rng.standard_normal((1, 1, 128)) * 0.3).astype(np.float32)}
    return {name: value for name, value in given.items() if name in names}


def fixed_rate(variant: str, rate: int) -> dict[str, int] | None:
    """The one model holding both rates' networks needs its rate fixed (see test_a_rate_left_open_is_named)."""
    return {"sr": rate} if variant == "silero_vad" else None


def assert_matches(path: pathlib.Path, inputs: dict[str, np.ndarray], fix: dict[str, int] | None) -> None:
    session = ort.InferenceSession(str(path))
    want = dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))
    got = api.run(path, inputs, fix_input=fix)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


CASES = [(variant, rate) for variant, rates in VARIANTS.items() for rate in rates]


@pytest.mark.parametrize(("variant", "rate"), CASES, ids=[f"{v}-{r // 1000}k" for v, r in CASES])
def test_variant_matches_onnxruntime(models: pathlib.Path, variant: str, rate: int) -> None:
    path = models / f"{variant}.onnx"
    batch = 1 if variant == "silero_vad_openvino_16k" else 2  # its input is [1, 576]
    assert_matches(path, feeds(path, rate, batch), fixed_rate(variant, rate))


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_batches_of_streams(models: pathlib.Path, batch: int) -> None:
    path = models / "silero_vad_half.onnx"
    assert_matches(path, feeds(path, 8000, batch, seed=batch), None)


def test_engine_builds_with_the_example_inputs(models: pathlib.Path, tmp_path: pathlib.Path) -> None:
    path = models / "silero_vad.onnx"
    report = api.build(path, tmp_path / "vad.plan", inputs=feeds(path, 16000, 4), fix_input={"sr": 16000})
    assert report.engine_bytes > 0 and sorted(report.inputs) == ["input", "state"]


def test_squeeze_of_an_unpinned_dim_names_the_input(models: pathlib.Path, tmp_path: pathlib.Path) -> None:
    with pytest.raises(LoopcError, match=r"/decoder/If.*rank 2 in one branch, 3 in the other.*shape of input "
                                         r"'input'.*shapes="):
        api.build(models / "silero_vad_half.onnx", tmp_path / "vad.plan", warn=lambda message: None)


def test_a_rate_left_open_is_named(models: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """At 16 kHz windows the 8 kHz network cannot run (its time axis is no longer squeezed): only fixing the
    rate leaves it out of the engine."""
    path = models / "silero_vad.onnx"
    with pytest.raises(LoopcError, match=r"'If_0'.*a branch cannot run.*value of input 'sr'.*fix_input= sr=VALUE"):
        api.build(path, tmp_path / "vad.plan", inputs=feeds(path, 16000, 1))


def test_a_fixed_input_must_fit(models: pathlib.Path) -> None:
    path = models / "silero_vad.onnx"
    with pytest.raises(LoopcError, match=r"fixed to 8000 .* the inputs give 16000"):
        api.run(path, feeds(path, 16000, 1), fix_input={"sr": 8000})
    audio = {name: value for name, value in feeds(path, 16000, 1).items() if name != "sr"}
    with pytest.raises(LoopcError, match=r"1.5 is not a value of the input's type int64"):
        api.run(path, audio, fix_input={"sr": 1.5})
