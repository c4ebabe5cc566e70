"""Write the small sample models (and example inputs) in this folder.

    python samples/make_samples.py

running_sum.onnx: an ONNX Loop over the rows of x [T, 3] (trip count T taken from x's shape):
carries the running sum of the rows, reads row i with Gather(x, iteration_num), and emits
each partial sum as a scan output.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = pathlib.Path(__file__).resolve().parent


def running_sum() -> onnx.ModelProto:
    f32 = TensorProto.FLOAT
    body = helper.make_graph(
        [
            helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
            helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
            helper.make_node("Identity", ["sum_out"], ["partial"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("sum_in", f32, [3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("sum_out", f32, [3]),
            helper.make_tensor_value_info("partial", f32, [3]),
        ],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["x_shape"]),
            helper.make_node("Constant", [], ["zero_i"], value=helper.make_tensor("z", TensorProto.INT64, [1], [0])),
            helper.make_node("Gather", ["x_shape", "zero_i"], ["trips_1d"], axis=0),
            helper.make_node("Squeeze", ["trips_1d"], ["trips"]),
            helper.make_node("Constant", [], ["true"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
            helper.make_node("Constant", [], ["init"], value=helper.make_tensor("s", f32, [3], [0, 0, 0])),
            helper.make_node("Loop", ["trips", "true", "init"], ["total", "partials"], body=body),
        ],
        "running_sum",
        [helper.make_tensor_value_info("x", f32, [5, 3])],
        [helper.make_tensor_value_info("total", f32, [3]), helper.make_tensor_value_info("partials", f32, ["n", 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="loopc-samples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    onnx.save(running_sum(), HERE / "running_sum.onnx")
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    np.savez(HERE / "running_sum_inputs.npz", x=x)
    print("wrote running_sum.onnx and running_sum_inputs.npz")


if __name__ == "__main__":
    main()
