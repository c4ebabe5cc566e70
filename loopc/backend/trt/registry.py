"""Op type → converter: adding an op is adding one decorated function (``ops/<family>.py``).

A converter receives the context and the node, builds layers, and binds each node output with
``ctx.set``. It reads its inputs with ``ctx.get`` and never touches another node. Loop and If
register here like any op (:mod:`loopc.backend.trt.loops`, :mod:`loopc.backend.trt.conditionals`)
and convert their bodies through ``ctx.convert_graph``.

A converter may declare a *capability* check, as Torch-TensorRT's converters do: a function of the
node that returns why the converter cannot handle it (None when it can). The refusal is an
:class:`~loopc.errors.UnsupportedConversionError` naming the node, raised before any layer is added.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loopc.errors import BackendError, LoopcError, UnsupportedConversionError, located
from loopc.registry import Registry

if TYPE_CHECKING:
    from loopc.backend.trt.context import ConversionContext
    from loopc.ir import Node

Convert = Callable[["ConversionContext", "Node"], None]
#: Why the converter cannot handle ``node`` (what the refusal says), or None when it can.
Capability = Callable[["Node"], "str | None"]


@dataclass(frozen=True)
class Converter:
    """A registered converter and the capability check it declared, if any."""

    convert: Convert
    capability: Capability | None = None

    def refusal(self, node: Node) -> str | None:
        return None if self.capability is None else self.capability(node)


CONVERTERS: Registry[str, Converter] = Registry(
    "TensorRT converter",
    loaders=("loopc.backend.trt.ops", "loopc.backend.trt.loops", "loopc.backend.trt.conditionals"),
)


def converter(*ops: str, capability: Capability | None = None) -> Callable[[Convert], Convert]:
    """Register the decorated function as the converter of ``ops`` (IR op types, ONNX's names).

    ``capability(node)`` returns why a node of these ops is not supported, None when it is.
    """

    def register(fn: Convert) -> Convert:
        for op in ops:
            CONVERTERS.add(op, Converter(fn, capability))
        return fn

    return register


def supported_ops() -> list[str]:
    """Every op type the backend converts (Loop and If included)."""
    return sorted(CONVERTERS.keys())


def converter_for(node: Node) -> Convert:
    """The converter for ``node``; an op without one, or a node its capability check refuses, is the
    user's to know about, by node."""
    found = CONVERTERS.lookup(node.op, lambda op: unsupported(
        node, f"op {op!r}", hint="supported ops are listed by `loopc ops`", verb="has no TensorRT converter"))
    reason = found.refusal(node)
    if reason is not None:
        raise unsupported(node, reason)
    return found.convert


def node_error(node: Node, message: str, cls: type[LoopcError] = BackendError, hint: str | None = None) -> LoopcError:
    """An error about ``node``, its source node's name, op and opset as the error's fields."""
    return located(cls, node.describe(), message, hint)


def unsupported(node: Node, what: str, hint: str | None = None,
                verb: str = "is not supported by the TensorRT backend") -> LoopcError:
    """The backend's refusal of ``node``: ``what`` (an op, or a form of one) it cannot convert."""
    return node_error(node, f"{what} {verb}", UnsupportedConversionError, hint)
