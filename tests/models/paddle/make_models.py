"""Make the PaddlePaddle corpus: recurrent Paddle layers exported with paddle2onnx.

paddle2onnx pins an older onnx than loopc, so it runs in a venv of its own, outside the repository:

    python3 -m venv venv-paddle
    venv-paddle/bin/pip install -r tests/models/paddle/requirements.txt
    venv-paddle/bin/python tests/models/paddle/make_models.py

Each model is exported the way a Paddle user does it: ``paddle.onnx.export(layer, prefix,
input_spec=[InputSpec([None, ...])])`` with paddle2onnx's default opset (it picks the lowest opset the
graph needs) and the None dims left dynamic. The expected outputs come from the layer's dygraph
(eager) run; the exported model is checked once against them with onnxruntime.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import paddle
from paddle.static import InputSpec

HERE = Path(__file__).resolve().parent
HIDDEN = 8
FEATURES = 4


@dataclass
class Case:
    name: str
    layer: paddle.nn.Layer
    spec: list[InputSpec]
    inputs: dict[str, np.ndarray]
    about: str
    check: Callable[[dict[str, np.ndarray], list[np.ndarray]], None] | None = None


class StackedLSTM(paddle.nn.Layer):
    """Two-layer LSTM; returns the sequence and the top layer's final (h, c).

    The full (num_layers, batch, hidden) states are not returned: paddle2onnx 2.1 writes only the
    last layer's state there, so that export would be wrong.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lstm = paddle.nn.LSTM(FEATURES, HIDDEN, num_layers=2)

    def forward(self, x: paddle.Tensor) -> tuple[paddle.Tensor, ...]:
        y, (h, c) = self.lstm(x)
        return y, h[-1], c[-1]


class BiGRU(paddle.nn.Layer):
    """Bidirectional GRU; returns the concatenated sequence and both directions' final states."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = paddle.nn.GRU(FEATURES, HIDDEN, direction="bidirect")

    def forward(self, x: paddle.Tensor) -> tuple[paddle.Tensor, ...]:
        y, h = self.gru(x)
        return y, h


class FixedPoint(paddle.nn.Layer):
    """h <- tanh(h W + x U + b) until the step is below `tol` or `n` trips ran.

    ``paddle.static.nn.while_loop`` runs as a Python loop in dygraph and becomes a While op under
    ``to_static``, which paddle2onnx exports as an ONNX Loop with a data-dependent condition.
    """

    def __init__(self) -> None:
        super().__init__()
        self.w = paddle.nn.Linear(HIDDEN, HIDDEN, bias_attr=False)
        self.u = paddle.nn.Linear(HIDDEN, HIDDEN)
        # A contraction, so the iteration converges in a handful of trips.
        self.w.weight.set_value(self.w.weight.numpy() * 0.5)

    def forward(self, x: paddle.Tensor, n: paddle.Tensor, tol: paddle.Tensor) -> tuple[paddle.Tensor, ...]:
        drive = self.u(x)
        i = paddle.zeros([1], dtype="int64")
        step = paddle.full([1], 1.0e30, dtype="float32")

        def cond(i: paddle.Tensor, h: paddle.Tensor, step: paddle.Tensor) -> paddle.Tensor:
            return paddle.logical_and(i < n, step > tol)

        def body(i: paddle.Tensor, h: paddle.Tensor, step: paddle.Tensor) -> list[paddle.Tensor]:
            nxt = paddle.tanh(self.w(h) + drive)
            step = paddle.max(paddle.abs(nxt - h)).reshape([1])
            return [i + 1, nxt, step]

        i, h, step = paddle.static.nn.while_loop(cond, body, [i, paddle.zeros_like(x), step])
        return h, i


def fixed_point_numpy(layer: FixedPoint, x: np.ndarray, n: int, tol: float) -> tuple[np.ndarray, list[float]]:
    """The same iteration in NumPy; returns the final state and every step size."""
    w = layer.w.weight.numpy()
    u, b = layer.u.weight.numpy(), layer.u.bias.numpy()
    h, steps = np.zeros_like(x), []
    while len(steps) < n and (not steps or steps[-1] > tol):
        nxt = np.tanh(h @ w + x @ u + b)
        steps.append(float(np.abs(nxt - h).max()))
        h = nxt
    return h, steps


def cases() -> list[Case]:
    rng = np.random.RandomState(0)
    seq = [InputSpec([None, None, FEATURES], "float32", "x")]
    paddle.seed(1)
    lstm = Case(
        "paddle_lstm",
        StackedLSTM(),
        seq,
        {"x": rng.randn(3, 7, FEATURES).astype(np.float32)},
        "paddle.nn.LSTM(num_layers=2), batch-major, top layer's final h/c as h[-1]/c[-1]; "
        "paddle2onnx 2.1 (paddle.onnx.export, default opset: {opset}): two ONNX LSTM nodes, dynamic batch and time",
    )
    paddle.seed(2)
    gru = Case(
        "paddle_gru",
        BiGRU(),
        seq,
        {"x": rng.randn(2, 6, FEATURES).astype(np.float32)},
        "paddle.nn.GRU(direction='bidirect'); paddle2onnx 2.1 (paddle.onnx.export, default opset: {opset}): "
        "one bidirectional ONNX GRU with linear_before_reset=1, dynamic batch and time",
    )
    paddle.seed(3)
    fixed = FixedPoint()
    n, tol = 30, 2.0e-3

    def check_fixed(inputs: dict[str, np.ndarray], eager: list[np.ndarray]) -> None:
        h, steps = fixed_point_numpy(fixed, inputs["x"], n, tol)
        np.testing.assert_allclose(eager[0], h, rtol=1e-5, atol=1e-6)
        assert int(eager[1][0]) == len(steps) < n, (eager[1], steps)
        # The stopping trip must not hinge on rounding: every step is well away from tol.
        assert all(abs(np.log(s / tol)) > np.log(1.5) for s in steps), steps

    loop = Case(
        "paddle_while_loop",
        fixed,
        [
            InputSpec([None, HIDDEN], "float32", "x"),
            InputSpec([1], "int64", "n"),
            InputSpec([1], "float32", "tol"),
        ],
        {
            "x": rng.randn(5, HIDDEN).astype(np.float32),
            "n": np.array([n], np.int64),
            "tol": np.array([tol], np.float32),
        },
        "paddle.static.nn.while_loop under to_static (fixed-point iteration, stops on a step below tol or "
        "after n trips, returns the trip count); paddle2onnx 2.1 (default opset: {opset}): ONNX Loop with a "
        "data-dependent condition, dynamic batch",
        check_fixed,
    )
    return [lstm, gru, loop]


def export(case: Case) -> Path:
    """Export with paddle.onnx.export into the corpus folder; paddle2onnx's temporaries go elsewhere."""
    tmp = Path(tempfile.mkdtemp())
    try:
        static = paddle.jit.to_static(case.layer, input_spec=case.spec, full_graph=True)
        paddle.onnx.export(static, str(tmp / case.name), input_spec=case.spec)
        target = HERE / f"{case.name}.onnx"
        shutil.move(tmp / f"{case.name}.onnx", target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def save_case(case: Case) -> str:
    case.layer.eval()
    eager = [t.numpy() for t in case.layer(*[paddle.to_tensor(v) for v in case.inputs.values()])]
    if case.check is not None:
        case.check(case.inputs, eager)
    path = export(case)
    model = onnx.load(path)
    onnx.checker.check_model(model)
    names = [o.name for o in model.graph.output]
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    assert len(names) == len(eager), (names, len(eager))
    declared = {i.name: onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type) for i in model.graph.input}
    assert set(declared) == set(case.inputs), (declared, list(case.inputs))
    inputs = {k: v.astype(declared[k]) for k, v in case.inputs.items()}
    expected = dict(zip(names, eager))

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for name, got in zip(names, session.run(names, inputs)):
        assert got.shape == expected[name].shape, (case.name, name, got.shape, expected[name].shape)
        np.testing.assert_allclose(got, expected[name], rtol=1e-4, atol=1e-5, err_msg=f"{case.name}:{name}")

    np.savez(HERE / f"{case.name}.inputs.npz", **inputs)
    np.savez(HERE / f"{case.name}.expected.npz", **expected)
    return (
        f'[[model]]\nname = "{case.name}"\npath = "{case.name}.onnx"\n'
        f'inputs = "{case.name}.inputs.npz"\nexpected = "{case.name}.expected.npz"\n'
        f'about = "{case.about.format(opset=opset)}"\n'
    )


def main() -> None:
    os.environ.setdefault("P2O_KEEP_TEMP_MODEL", "False")
    tables = [save_case(case) for case in cases()]
    header = "# Made by make_models.py; expected outputs are Paddle's dygraph run.\n\n"
    (HERE / "cases.toml").write_text(header + "\n".join(tables))


if __name__ == "__main__":
    main()
