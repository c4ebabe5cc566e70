"""The one place that chooses which TensorRT Python module loopc uses.

Datacenter TensorRT (``tensorrt``) is preferred when it imports, since it is what runs
engines on a GPU host; otherwise TensorRT for RTX (``tensorrt_rtx``), which installs from
the package registry and builds engines ahead of time without a GPU. ``LOOPC_TENSORRT``
(or the CLI's ``--tensorrt``) forces one. The import is lazy so that ``import loopc`` is cheap.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

from loopc.errors import LoopcError

MODULES = ("tensorrt", "tensorrt_rtx")
ENV_VAR = "LOOPC_TENSORRT"

_chosen: ModuleType | None = None
_forced: str | None = None


def force(name: str | None) -> None:
    """Use the module ``name`` (one of :data:`MODULES`) from now on; ``None`` restores the default."""
    global _chosen, _forced
    if name is not None and name not in MODULES:
        raise LoopcError(f"unknown TensorRT module {name!r}; choose one of {', '.join(MODULES)}")
    _forced, _chosen = name, None


def trt() -> ModuleType:
    """Return the TensorRT module, importing it on first use."""
    global _chosen
    if _chosen is None:
        _chosen = _import()
    return _chosen


def _import() -> ModuleType:
    wanted = _forced or os.environ.get(ENV_VAR) or None
    if wanted is not None and wanted not in MODULES:
        raise LoopcError(f"{ENV_VAR}={wanted!r} is not one of {', '.join(MODULES)}")
    candidates = (wanted,) if wanted else MODULES
    failures = []
    for name in candidates:
        try:
            return importlib.import_module(name)
        except Exception as exc:  # a broken install raises more than ImportError
            failures.append(f"{name}: {exc}")
    raise LoopcError(
        "no TensorRT Python module could be imported ("
        + "; ".join(failures)
        + "); install TensorRT-RTX with `pip install tensorrt-rtx-cu12`"
    )


def is_rtx() -> bool:
    """True when the chosen module is TensorRT for RTX (ahead-of-time builds without a GPU)."""
    return trt().__name__ == "tensorrt_rtx"


def enum_name(member: Any) -> str:
    """``member.name`` of a TensorRT enum (a layer type, a data type), read from a table made once per enum type:
    pybind11's own ``.name`` lists the enum's members on every read, some 20 µs, which reading back a network
    of thousands of layers pays for each."""
    names = _ENUM_NAMES.get(type(member))
    if names is None:
        names = _ENUM_NAMES[type(member)] = {value: name for name, value in type(member).__members__.items()}
    return names[member]


_ENUM_NAMES: dict[type, dict[Any, str]] = {}
