"""Converters by op family; importing this package registers them all."""

from loopc.backend.trt.ops import (  # noqa: F401
    cumulative, elementwise, gather, linalg, masks, nonzero, normalization, random_ops, reduce, sampling, shape,
    spectral, suppression, tensors, unary, windows,
)
