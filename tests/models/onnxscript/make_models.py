"""Make the onnxscript corpus: Python control flow that onnxscript turns into ONNX Loop and If.

onnxscript is not a loopc dependency; it runs in a venv of its own, outside the repository:

    python3 -m venv venv-onnxscript
    venv-onnxscript/bin/pip install -r tests/models/onnxscript/requirements.txt
    venv-onnxscript/bin/python tests/models/onnxscript/make_models.py

Each case is an ``@script()`` function: ``for i in range(n)`` becomes a Loop with a trip count,
``while cond:`` a Loop driven by its condition, an ``if`` inside a loop an If in the Loop body.
The models are written by ``to_model_proto()`` unchanged, with the symbolic dims of the signature
(``FLOAT["N", 4]``) as dynamic dims. Expected outputs are onnxscript's eager run (the Python
function executed op by op on ONNX's reference evaluator), checked against a NumPy reference
written here; onnxruntime only checks the exported models once.

onnxscript orders a loop's carried values by Python's string hashing, so the Loop's inputs and the
graph's output names change from one interpreter to the next: the script re-runs itself with
PYTHONHASHSEED=0 so that the corpus is the same each time it is made.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxscript import FLOAT, INT64, script
from onnxscript import opset18 as op
from onnxscript.evaluator import OnnxReferenceRuntimeEvaluator, default_as

HERE = Path(__file__).resolve().parent


@script()
def running_sum_product(X: FLOAT["N", 4]) -> tuple[FLOAT["N", 4], FLOAT[4]]:
    """Running sum of the rows (stacked, one row per trip) and the product of all rows."""
    n = op.Squeeze(op.Shape(X, start=0, end=1))
    acc = op.ReduceSum(X, [0], keepdims=0) * 0.0
    prod = acc + 1.0
    rows = op.Slice(X, [0], [0], [0])
    for i in range(n):
        row = op.Gather(X, i, axis=0)
        acc = acc + row
        prod = prod * row
        rows = op.Concat(rows, op.Unsqueeze(acc, [0]), axis=0)
    return rows, prod


def running_sum_product_numpy(x: np.ndarray) -> list[np.ndarray]:
    return [np.cumsum(x, axis=0), np.prod(x, axis=0)]


@script()
def newton_sqrt(A: FLOAT["N"], tol: FLOAT) -> tuple[FLOAT["N"], INT64]:
    """Newton's iteration for sqrt(A) until the largest step is at most tol; counts the trips."""
    x = A
    count = op.Constant(value=np.array(0, dtype=np.int64))
    step = op.ReduceMax(op.Abs(x), keepdims=0)
    going = step > tol
    while going:
        nxt = 0.5 * (x + A / x)
        step = op.ReduceMax(op.Abs(nxt - x), keepdims=0)
        x = nxt
        count = count + 1
        going = step > tol
    return x, count


def newton_steps(a: np.ndarray, tol: float) -> tuple[np.ndarray, list[float]]:
    """Newton's iteration in NumPy (float32, as the model); returns the root and every step size."""
    x, steps = a.copy(), []
    while not steps or steps[-1] > tol:
        nxt = np.float32(0.5) * (x + a / x)
        steps.append(float(np.abs(nxt - x).max()))
        x = nxt
    return x, steps


def newton_sqrt_numpy(a: np.ndarray, tol: np.ndarray) -> list[np.ndarray]:
    x, steps = newton_steps(a, float(tol))
    return [x, np.array(len(steps), np.int64)]


@script()
def newton_sqrt_history(A: FLOAT["N"], tol: FLOAT) -> tuple[FLOAT["T", "N"], INT64]:
    """Newton's iteration as newton_sqrt, also stacking every iterate: an output that grows with the trips."""
    x = A
    count = op.Constant(value=np.array(0, dtype=np.int64))
    history = op.Unsqueeze(A, [0])
    going = op.ReduceMax(op.Abs(x), keepdims=0) > tol
    while going:
        nxt = 0.5 * (x + A / x)
        going = op.ReduceMax(op.Abs(nxt - x), keepdims=0) > tol
        x = nxt
        count = count + 1
        history = op.Concat(history, op.Unsqueeze(x, [0]), axis=0)
    return history, count


def newton_sqrt_history_numpy(a: np.ndarray, tol: np.ndarray) -> list[np.ndarray]:
    x, history = a.copy(), [a.copy()]
    _, steps = newton_steps(a, float(tol))
    for _ in steps:
        x = np.float32(0.5) * (x + a / x)
        history.append(x)
    return [np.stack(history), np.array(len(steps), np.int64)]


@script()
def sign_gate(X: FLOAT["N", 4]) -> tuple[FLOAT[4], INT64]:
    """Per row: add it if its sum is positive (and count it), else halve the total and subtract the row."""
    n = op.Squeeze(op.Shape(X, start=0, end=1))
    acc = op.ReduceSum(X, [0], keepdims=0) * 0.0
    npos = op.Constant(value=np.array(0, dtype=np.int64))
    for i in range(n):
        row = op.Gather(X, i, axis=0)
        if op.ReduceSum(row, keepdims=0) > 0.0:
            acc = acc + row
            npos = npos + 1
        else:
            acc = acc * 0.5 - row
    return acc, npos


def sign_gate_numpy(x: np.ndarray) -> list[np.ndarray]:
    acc, npos = np.zeros(x.shape[1], np.float32), 0
    for row in x:
        if row.sum() > 0:
            acc, npos = acc + row, npos + 1
        else:
            acc = acc * np.float32(0.5) - row
    return [acc, np.array(npos, np.int64)]


@dataclass
class Case:
    name: str
    function: Callable
    reference: Callable[..., list[np.ndarray]]
    inputs: list[np.ndarray]
    about: str
    max_trips: int | None = None


def cases() -> list[Case]:
    rng = np.random.RandomState(0)
    rows = rng.uniform(0.5, 1.5, (9, 4)).astype(np.float32) * rng.choice([-1, 1], (9, 4)).astype(np.float32)
    squares = np.array([2.0, 9.0, 0.25, 100.0, 0.5, 7.0], np.float32)
    tol = np.array(3e-4, np.float32)
    gates = rng.randn(12, 4).astype(np.float32)
    sums = gates.sum(axis=1, keepdims=True)
    gates += np.where(np.abs(sums) < 0.2, np.where(sums < 0, -0.1, 0.1), 0.0).astype(np.float32)
    # The branch taken must not hinge on rounding: every row sum is well away from 0.
    assert np.abs(gates.sum(axis=1)).min() > 1e-2
    _, steps = newton_steps(squares, float(tol))
    # The stopping trip must not hinge on rounding either: every step is well away from tol.
    assert all(abs(np.log(s / float(tol))) > np.log(2) for s in steps if s > 0), steps
    return [
        Case(
            "onnxscript_for_cumsum",
            running_sum_product,
            running_sum_product_numpy,
            [rows],
            "for i in range(N) over rows: running sum stacked by a growing Concat, running product carried; "
            "onnxscript {version} @script to_model_proto, opset {opset}: Loop with a trip count from Shape, dynamic N",
        ),
        Case(
            "onnxscript_while",
            newton_sqrt,
            newton_sqrt_numpy,
            [squares, tol],
            "while step > tol: Newton's sqrt with a trip counter; onnxscript {version} @script to_model_proto, "
            "opset {opset}: Loop with no trip count, a data-dependent condition, dynamic N",
        ),
        Case(
            "onnxscript_while_history",
            newton_sqrt_history,
            newton_sqrt_history_numpy,
            [squares, tol],
            "while step > tol: Newton's sqrt stacking every iterate by a growing Concat (no bound but "
            "max-trips); onnxscript {version} @script to_model_proto, opset {opset}: condition-driven Loop, dynamic N",
            max_trips=64,
        ),
        Case(
            "onnxscript_if_in_loop",
            sign_gate,
            sign_gate_numpy,
            [gates],
            "for i in range(N) with an if/else on each row's sum; onnxscript {version} @script to_model_proto, "
            "opset {opset}: If (two carried values) inside a Loop body, dynamic N",
        ),
    ]


def save_case(case: Case) -> str:
    import onnxscript

    with default_as(OnnxReferenceRuntimeEvaluator()):
        eager = case.function(*case.inputs)
    eager = [np.asarray(v) for v in (eager if isinstance(eager, tuple) else (eager,))]
    reference = case.reference(*case.inputs)
    for got, want in zip(eager, reference, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape, (case.name, got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=case.name)

    model = case.function.to_model_proto()
    onnx.checker.check_model(model, full_check=True)
    path = HERE / f"{case.name}.onnx"
    onnx.save(model, path)
    in_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    inputs = dict(zip(in_names, case.inputs, strict=True))
    expected = dict(zip(out_names, eager, strict=True))

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for name, got in zip(out_names, session.run(out_names, inputs)):
        assert got.dtype == expected[name].dtype and got.shape == expected[name].shape, (case.name, name)
        np.testing.assert_allclose(got, expected[name], rtol=1e-5, atol=1e-6, err_msg=f"{case.name}:{name}")

    np.savez(HERE / f"{case.name}.inputs.npz", **inputs)
    np.savez(HERE / f"{case.name}.expected.npz", **expected)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    about = case.about.format(version=onnxscript.__version__, opset=opset)
    table = (
        f'[[model]]\nname = "{case.name}"\npath = "{case.name}.onnx"\n'
        f'inputs = "{case.name}.inputs.npz"\nexpected = "{case.name}.expected.npz"\nabout = "{about}"\n'
    )
    if case.max_trips is not None:
        table += f"max-trips = {case.max_trips}\n"
    return table


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    tables = [save_case(case) for case in cases()]
    header = "# Made by make_models.py; expected outputs are onnxscript's eager run on ONNX's reference evaluator.\n\n"
    (HERE / "cases.toml").write_text(header + "\n".join(tables))


if __name__ == "__main__":
    main()
