"""ONNX into loopc's IR."""

from loopc.frontend.onnx.importer import import_model

__all__ = ["import_model"]
