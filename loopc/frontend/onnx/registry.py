"""ONNX op type → translator, for the nodes that are not plain ops, and → rewrite, for older op forms.

Plain nodes keep their op type and attributes (the importer copies them); the nodes registered in
:data:`TRANSLATORS` — Loop, Scan, If and the recurrent ops loopc lowers itself — are translated by
their own function. :data:`UPGRADES` holds the local rewrites of older opsets' forms into the newest
(see :mod:`loopc.frontend.onnx.upgrade`). The modules that register import the importer, so this
module names them and the registries import them on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import onnx

from loopc.registry import Registry

if TYPE_CHECKING:
    from loopc.frontend.onnx.importer import Context, Scope
    from loopc.ir import Graph

#: (context, node, scope, graph) -> None: translate ``node`` into ``graph``, binding its outputs in ``scope``.
Translator = Callable[["Context", onnx.NodeProto, "Scope", "Graph"], None]
#: (context, node) -> the nodes computing the same in the newest opset's form.
Rewrite = Callable[["Context", onnx.NodeProto], "list[onnx.NodeProto]"]

TRANSLATORS: Registry[str, Translator] = Registry(
    "ONNX translator",
    loaders=("loopc.frontend.onnx.loops", "loopc.frontend.onnx.conditionals", "loopc.frontend.onnx.rnn"),
)
UPGRADES: Registry[str, Rewrite] = Registry("ONNX op-form rewrite", loaders=("loopc.frontend.onnx.upgrade",))


def translates(*op_types: str) -> Callable[[Translator], Translator]:
    """Register the decorated function as the translator of ``op_types`` (default-domain ONNX ops)."""
    return TRANSLATORS.register(*op_types)


def upgrades(*op_types: str) -> Callable[[Rewrite], Rewrite]:
    """Register the decorated function as the rewrite of ``op_types``' older forms."""
    return UPGRADES.register(*op_types)


def structural_ops() -> list[str]:
    """The ONNX ops translated by their own function (``loopc ops`` lists them apart)."""
    return sorted(TRANSLATORS.keys())
