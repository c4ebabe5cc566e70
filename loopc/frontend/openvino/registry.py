"""Op translators by IR type string and op version, with OpenVINO's version resolution.

A layer says ``type="Gather" version="opset8"``: ``opsetN`` names the opset that *introduced* the
op version, and any later opset still holding that version reads the same (``LSTMCell`` ``opset5``
is LSTMCell-4). So a translator registers the introducing opsets of the versions it implements
(keys ``(type, opset)`` of one :class:`loopc.registry.Registry`), and a layer resolves to the newest
of them not after its own opset. Loop, TensorIterator and If register here like any op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from loopc.errors import InternalError, UnsupportedOpError, located
from loopc.registry import Registry

if TYPE_CHECKING:
    from loopc.frontend.openvino.importer import Op
    from loopc.frontend.openvino.reader import Layer
    from loopc.ir import Value

#: The newest opset OpenVINO 2026.4 knows; ``opset0``, ``opset99`` and other names are not opsets.
MAX_OPSET = 17

Translator = Callable[["Op"], "list[Value]"]
#: (type, introducing opset) → translator.
TRANSLATORS: Registry[tuple[str, int], Translator] = Registry(
    "OpenVINO translator", loaders=("loopc.frontend.openvino.ops",))
#: Versions of a type that exist but loopc does not read (so they do not resolve to an older one).
UNSUPPORTED_VERSIONS: dict[str, set[int]] = {}
#: Other spellings OpenVINO's reader accepts for a type.
ALIASES = {"Softmax": "SoftMax", "Relu": "ReLU", "Ceil": "Ceiling"}


def translates(op_type: str, *opsets: int) -> Callable[[Translator], Translator]:
    """Register a translator for ``op_type`` versions introduced in ``opsets`` (default: opset1)."""
    return TRANSLATORS.register(*((op_type, opset) for opset in opsets or (1,)))


def openvino_types() -> dict[str, set[int]]:
    """Each IR type loopc reads, with the introducing opsets of the versions it reads."""
    found: dict[str, set[int]] = {}
    for op_type, opset in TRANSLATORS.keys():
        found.setdefault(op_type, set()).add(opset)
    return found


_versions: dict[str, set[int]] = {}


def _versions_of(op_type: str) -> set[int] | None:
    """The registered versions of ``op_type``, from an index rebuilt when a translator was added."""
    if sum(map(len, _versions.values())) != len(TRANSLATORS):
        _versions.clear()
        _versions.update(openvino_types())
    return _versions.get(op_type)


def resolve(layer: Layer, what: str) -> tuple[Translator, int]:
    """The translator for ``layer`` (named ``what`` in errors) and the introducing opset of its version."""
    op_type = ALIASES.get(layer.type, layer.type)
    opset = _opset_number(layer, what)
    versions = _versions_of(op_type)
    if versions is None:
        raise located(UnsupportedOpError, what, f"loopc does not support the op type {layer.type!r}")
    known = sorted(versions | UNSUPPORTED_VERSIONS.get(op_type, set()))
    introduced = max((v for v in known if v <= opset), default=None)
    if introduced is None:
        raise located(UnsupportedOpError, what, f"{layer.version} has no {layer.type} (its first version "
                      f"is in opset{known[0]})")
    if introduced not in versions:
        raise located(UnsupportedOpError, what, f"{layer.type}-{introduced} (of opset{introduced}) is not "
                      f"supported; loopc reads the versions of "
                      f"{', '.join(f'opset{v}' for v in sorted(versions))}")
    return TRANSLATORS.lookup((op_type, introduced), lambda key: InternalError(f"no translator for {key}")), introduced


def check_version(layer: Layer, what: str) -> None:
    """Parameter, Const and Result have one version since opset1, but a version loopc does not know is still
    one OpenVINO refuses: check it as any layer's."""
    _opset_number(layer, what)


def _opset_number(layer: Layer, what: str) -> int:
    text = layer.version
    digits = text[len("opset"):] if text.startswith("opset") else ""
    if not digits.isdigit() or not 1 <= int(digits) <= MAX_OPSET:
        raise located(UnsupportedOpError, what, f"version {text!r} is not an opset loopc knows "
                      f"(opset1 … opset{MAX_OPSET})")
    return int(digits)
