"""Converters by op family; importing this package registers them all."""

from loopc.backend.trt.ops import elementwise, gather, linalg, nonzero, reduce, sampling, shape, tensors, unary  # noqa: F401
