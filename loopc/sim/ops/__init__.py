"""Kernels for each TensorRT layer family; importing this package registers them all."""

from loopc.sim.ops import (  # noqa: F401
    conv, elementwise, fill, gather, linalg, normalization, reduce, shuffle, tensors,
)
