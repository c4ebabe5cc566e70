"""Kernels for each TensorRT layer family; importing this package registers them all."""

from loopc.sim.ops import (  # noqa: F401
    elementwise, fill, gather, linalg, normalization, pooling, reduce, shuffle, tensors,
)
