"""TensorRT backend: IR to INetworkDefinition with real loop layers."""

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.network import to_network
from loopc.backend.trt.registry import converter, converter_for, supported_ops

__all__ = ["ConversionContext", "converter", "converter_for", "supported_ops", "to_network"]
