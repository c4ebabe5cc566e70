"""Kernels for each TensorRT layer family; importing this package registers them all."""

from loopc.sim.ops import conv, elementwise, fill, gather, linalg, reduce, shuffle, tensors  # noqa: F401
