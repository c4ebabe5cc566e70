"""Write the OpenVINO IR samples made from PyTorch loops, as users convert them.

    pip install -r samples/openvino/requirements-torch.txt   # only to regenerate; not loopc dependencies
    python samples/openvino/make_torch_samples.py

Tracing unrolls Python loops, so each module is scripted (``torch.jit.script``) and handed to
``openvino.convert_model`` (OpenVINO's TorchScript frontend). Where that frontend fails, the
scripted module is exported to ONNX (``torch.onnx.export(dynamo=False)``) and that is converted;
the route each sample took is printed and recorded in ``cases.toml``. Outputs are given plain tensor
names (the TorchScript frontend names them by graph value numbers). Every IR is run on OpenVINO's
CPU plugin before the script finishes; seeds are fixed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import openvino as ov
import torch
from make_samples import HERE, stable_names, write_inputs
from torch import Tensor, nn

OPSET = 17


class WhileBreak(nn.Module):
    """Grow y until its sum passes a limit, at most 20 steps: a counted while loop left by `break`."""

    def forward(self, x: Tensor, limit: Tensor) -> Tensor:
        y = x
        i = 0
        while i < 20:
            y = y * 1.5 + 1.0
            if bool(y.sum() > limit):
                break
            i += 1
        return y


class GrowingCat(nn.Module):
    """Collect one row per step with torch.cat (the accumulator is only appended to)."""

    def forward(self, x: Tensor, n: Tensor) -> Tensor:
        out = torch.zeros(0, x.size(0))
        h = x
        for i in range(int(n)):
            h = torch.tanh(h * 0.9 + 0.1 * i)
            out = torch.cat([out, h.unsqueeze(0)], 0)
        return out


class GrowingCatRead(nn.Module):
    """Each step appends a row computed from the previous last row: the growing value is read in the loop."""

    def forward(self, x: Tensor, n: Tensor) -> Tensor:
        out = x.unsqueeze(0)
        for i in range(int(n)):
            out = torch.cat([out, out[-1:] * 0.5 + i], 0)
        return out


class NestedFor(nn.Module):
    """Two nested for loops, the inner one's length set by the outer index."""

    def forward(self, x: Tensor) -> Tensor:
        acc = torch.zeros(x.size(1))
        for i in range(x.size(0)):
            for j in range(i + 1):
                acc = acc + x[j] * (i + 1)
        return acc


class IfInLoop(nn.Module):
    """An RNN step taken only for rows with a positive sum; other rows halve the state."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4) * 0.5)

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        for t in range(x.size(0)):
            if bool(x[t].sum() > 0):
                h = torch.tanh(h @ self.w + x[t])
            else:
                h = h * 0.5
        return h


def cases() -> dict[str, tuple[nn.Module, dict[str, np.ndarray], list[str]]]:
    """name: (module, example inputs by argument name, output names)."""
    torch.manual_seed(0)
    g = np.random.default_rng(50)
    f32 = np.float32
    return {
        "torch_while_break": (WhileBreak(), {"x": np.array([0.5, 1.0, -0.25], f32), "limit": np.array(60.0, f32)},
                              ["y"]),
        "torch_growing_cat": (GrowingCat(), {"x": g.standard_normal(3).astype(f32), "n": np.array(5, np.int64)},
                              ["rows"]),
        "torch_growing_cat_read": (GrowingCatRead(), {"x": np.array([1.0, -2.0], f32), "n": np.array(4, np.int64)},
                                   ["rows"]),
        "torch_nested_for": (NestedFor(), {"x": g.standard_normal((4, 3)).astype(f32)}, ["acc"]),
        "torch_if_in_loop": (IfInLoop(), {"x": g.standard_normal((6, 4)).astype(f32),
                                          "h": g.standard_normal(4).astype(f32)}, ["h_out"]),
    }


def convert(module: nn.Module, inputs: dict[str, np.ndarray], tmp: Path) -> tuple[ov.Model, str]:
    """TorchScript -> convert_model; on failure, TorchScript -> ONNX -> convert_model."""
    scripted = torch.jit.script(module.eval())
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    try:
        converted = ov.convert_model(scripted, example_input=args)
        ov.Core().compile_model(converted, "CPU")
        return converted, "torchscript"
    except Exception as error:  # noqa: BLE001 - any frontend failure sends us down the ONNX route
        print(f"   TorchScript frontend failed ({str(error).strip().splitlines()[0][:120]}); exporting ONNX")
    path = tmp / "model.onnx"
    torch.onnx.export(scripted, args, path, dynamo=False, opset_version=OPSET, input_names=list(inputs))
    return ov.convert_model(path), "onnx"


def main() -> None:
    for name, (module, inputs, outputs) in cases().items():
        with tempfile.TemporaryDirectory() as tmp:
            converted, route = convert(module, inputs, Path(tmp))
        for port, tensor_name in zip(converted.inputs, inputs):
            port.get_tensor().set_names({tensor_name})
        for port, tensor_name in zip(converted.outputs, outputs, strict=True):
            port.get_tensor().set_names({tensor_name})
        ov.save_model(stable_names(converted), HERE / f"{name}.xml", compress_to_fp16=False)
        print(f"{name}: via {route}")
        write_inputs(name, inputs)


if __name__ == "__main__":
    main()
