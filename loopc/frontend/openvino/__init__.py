"""OpenVINO IR (``.xml`` + ``.bin``, IR v10/v11) into loopc's IR."""

from loopc.frontend.openvino.importer import import_ir

__all__ = ["import_ir"]
