"""Kernels for each TensorRT layer family; importing this package registers them all."""

from loopc.sim.ops import elementwise, tensors  # noqa: F401
