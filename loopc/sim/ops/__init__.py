"""Kernels for each TensorRT layer family; importing this package registers them all."""

from loopc.sim.ops import (  # noqa: F401
    attention, elementwise, fill, gather, linalg, normalization, quantize, reduce, shuffle, tensors,
)
