"""Make the models whose dynamic dims the default range (1 / 8 / 64) does not fit: each builds with no flags
only when loopc derives what the graph requires of its dims.

Run outside the test suite (it needs torch and openvino, which the venv has; loopc's tests do not run it)::

    python tests/models/profiles/make_models.py

Weights are random from fixed seeds. For each case it writes the model (``<case>.onnx``, or ``<case>.xml`` +
``.bin``), ``<case>.inputs.npz`` (example inputs, keyed by the model's input names), ``<case>.expected.npz``
(the outputs of onnxruntime, or of OpenVINO's CPU plugin at f32 for the IR, keyed by output names) and
``cases.toml``.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import onnx.helper as oh
import onnxruntime as ort
import openvino as ov
import torch
from torch import nn

HERE = pathlib.Path(__file__).resolve().parent
TABLES: list[str] = []


class CRNN(nn.Module):
    """An OCR recognizer in the usual CRNN shape: a conv stack over a [B, 1, 48, W] text line, the channels and
    the remaining height merged into features per column, a bidirectional LSTM over the columns, a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),          # 48 -> 24, W -> W/2
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),         # 24 -> 12, W/2 -> W/4
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d((2, 1)),   # 12 -> 6
        )
        self.rnn = nn.LSTM(16 * 6, 24, bidirectional=True, batch_first=True)
        self.head = nn.Linear(48, 11)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.convs(image)
        b, c, h, w = x.shape
        x = x.permute(0, 3, 1, 2).reshape(b, w, c * h)
        y, _ = self.rnn(x)
        return self.head(y).log_softmax(-1)


def _save_onnx_case(name: str, proto: onnx.ModelProto, feeds: dict[str, np.ndarray], about: str) -> None:
    onnx.checker.check_model(proto, full_check=True)
    onnx.save(proto, HERE / f"{name}.onnx")
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(names, feeds)))
    _save_arrays(name, f"{name}.onnx", feeds, outputs, about)


def _save_arrays(name: str, path: str, feeds: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
                 about: str) -> None:
    np.savez(HERE / f"{name}.inputs.npz", **feeds)
    np.savez(HERE / f"{name}.expected.npz", **outputs)
    TABLES.append(f'[[model]]\nname = "{name}"\npath = "{path}"\ninputs = "{name}.inputs.npz"\n'
                  f'expected = "{name}.expected.npz"\nabout = "{about}"\n')


def crnn_ocr() -> None:
    torch.manual_seed(0)
    model = CRNN().eval()
    image = torch.rand(2, 1, 48, 40)
    path = HERE / "crnn_ocr.onnx"
    torch.onnx.export(model, (image,), path, input_names=["image"], output_names=["logits"], opset_version=17,
                      dynamo=False, dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"},
                                                  "logits": {0: "batch", 1: "steps"}})
    proto = onnx.load(path)
    _save_onnx_case("crnn_ocr", proto, {"image": image.numpy()},
                    f"CRNN text recognizer: 3 conv+pool over [batch, 1, height, width], permute and reshape to "
                    f"(batch, width/4, 16*height/8), bidirectional LSTM(96, 24), Linear; traced, TorchScript "
                    f"exporter (torch {torch.__version__.split('+')[0]}), opset 17, dynamic batch, height, width: "
                    f"height must be 48")


def gru_all_dynamic() -> onnx.ModelProto:
    """An ONNX GRU whose every input dim is declared dynamic: its feature dim must be W's 5, its initial state's
    hidden dim R's 6 and its batch the sequence's."""
    rng = np.random.default_rng(1)
    hidden, features = 6, 5
    weights = [oh.make_tensor(name, onnx.TensorProto.FLOAT, shape, rng.uniform(-0.5, 0.5, shape).ravel())
               for name, shape in (("W", [1, 3 * hidden, features]), ("R", [1, 3 * hidden, hidden]),
                                   ("B", [1, 6 * hidden]))]
    graph = oh.make_graph(
        [oh.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "h"], hidden_size=hidden,
                      linear_before_reset=1)],
        "gru_all_dynamic",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["seq", "batch", "features"]),
         oh.make_tensor_value_info("h0", onnx.TensorProto.FLOAT, ["dirs", "batch_h", "hidden"])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["seq", "dirs_y", "batch", "hidden_y"]),
         oh.make_tensor_value_info("h", onnx.TensorProto.FLOAT, ["dirs", "batch", "hidden_y"])],
        weights,
    )
    proto = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": rng.standard_normal((7, 3, features)).astype(np.float32),
             "h0": rng.standard_normal((1, 3, hidden)).astype(np.float32)}
    _save_onnx_case("gru_all_dynamic", proto, feeds,
                    "ONNX GRU (hidden 6, linear_before_reset) with every dim of x and h0 dynamic, each named apart: "
                    "features must be 5, hidden 6, and h0's batch x's; written with onnx.helper, opset 17")
    return proto


def gru_sequence_ir(source: onnx.ModelProto) -> None:
    """The same GRU as OpenVINO IR (a GRUSequence with every input dim dynamic), as OpenVINO's ONNX frontend
    writes it."""
    onnx_path = HERE / "gru_all_dynamic.onnx"
    converted = ov.convert_model(str(onnx_path))
    xml = HERE / "gru_sequence_ir.xml"
    ov.save_model(converted, xml, compress_to_fp16=False)
    model = ov.Core().read_model(xml)
    assert "GRUSequence" in {op.get_type_name() for op in model.get_ops()}
    feeds = dict(np.load(HERE / "gru_all_dynamic.inputs.npz"))
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled.create_infer_request().infer({p.get_any_name(): feeds[p.get_any_name()]
                                                    for p in compiled.inputs})
    outputs = {p.get_any_name(): np.asarray(result[p]) for p in compiled.outputs}
    _save_arrays("gru_sequence_ir", "gru_sequence_ir.xml", feeds, outputs,
                 f"the gru_all_dynamic model through OpenVINO {ov.__version__.split('-')[0]}'s ONNX frontend "
                 "(openvino.convert_model, then save_model with compress_to_fp16=False): a GRUSequence with every "
                 "input dim dynamic")


def main() -> None:
    crnn_ocr()
    gru_sequence_ir(gru_all_dynamic())
    (HERE / "cases.toml").write_text("# Made by make_models.py; one table per case (see make_models.py).\n\n"
                                     + "\n".join(TABLES))


if __name__ == "__main__":
    main()
