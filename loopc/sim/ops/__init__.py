"""Kernels for each TensorRT layer family; importing this package registers them all."""

from loopc.sim.ops import elementwise, fill, gather, linalg, reduce, resize, shuffle, tensors  # noqa: F401
