"""Write the OpenVINO IR samples made from TensorFlow loops, as users convert them.

    pip install -r samples/openvino/requirements-tf.txt   # only to regenerate; not loopc dependencies
    python samples/openvino/make_tf_samples.py

Each ``tf.function`` is handed to ``openvino.convert_model`` (OpenVINO's TensorFlow frontend), its
names made stable, and checked against TensorFlow itself on OpenVINO's CPU plugin before it is saved.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import openvino as ov
import tensorflow as tf
from make_samples import HERE, stable_names, write_inputs


@tf.function(input_signature=[tf.TensorSpec([7, 2, 5], tf.float32)])
def tf_scan(xs: tf.Tensor) -> tf.Tensor:
    """``tf.scan`` of a decaying sum: its output TensorArray is a ``[7,1,1]`` placeholder until the first
    trip writes a ``[2,5]`` row into it, then ``[7,2,5]``."""
    return tf.scan(lambda acc, x: acc * 0.5 + tf.tanh(x), xs, initializer=tf.ones([2, 5], tf.float32))


def cases() -> dict[str, tuple[Callable[..., tf.Tensor], list[np.ndarray]]]:
    """name: (function, example inputs in order)."""
    g = np.random.default_rng(2)
    return {"tf_scan": (tf_scan, [g.standard_normal((7, 2, 5)).astype(np.float32)])}


def main() -> None:
    for name, (function, inputs) in cases().items():
        model = stable_names(ov.convert_model(function))
        want = function(*inputs).numpy()
        got = ov.Core().compile_model(model, "CPU")(inputs)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        xml = HERE / f"{name}.xml"
        ov.save_model(model, str(xml), compress_to_fp16=False)
        write_inputs(name, {port.get_any_name(): array for port, array in zip(model.inputs, inputs)}, xml)


if __name__ == "__main__":
    main()
