"""Converters by op family; importing this package registers them all."""

from loopc.backend.trt.ops import (  # noqa: F401
    elementwise, gather, linalg, masks, nonzero, normalization, reduce, resize, sampling, shape, tensors, unary,
)
