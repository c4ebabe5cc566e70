"""loopc: compile models with loops into TensorRT engines whose loops are TensorRT loops.

``build``, ``compile``, ``run``, ``export`` and ``simulate`` are :mod:`loopc.api`'s, loaded on first use so that
``import loopc`` (and ``loopc --version``) stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from loopc.errors import InternalError, LoopcError, SimulationError

if TYPE_CHECKING:
    from loopc.api import build, compile, export, run, simulate  # noqa: A004

__version__ = "0.1.0"

__all__ = ["InternalError", "LoopcError", "SimulationError", "__version__", "build", "compile", "export", "run", "simulate"]
_API = __all__[4:]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module("loopc.api"), name)
    raise AttributeError(f"module 'loopc' has no attribute {name!r}")
