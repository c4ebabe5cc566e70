"""TensorRT backend: IR to INetworkDefinition with real loop layers."""
