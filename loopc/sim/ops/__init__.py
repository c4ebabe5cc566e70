"""Kernels for each TensorRT layer family; importing this package registers them all."""

from loopc.sim.ops import attention, elementwise, fill, gather, linalg, quantize, reduce, shuffle, tensors  # noqa: F401
