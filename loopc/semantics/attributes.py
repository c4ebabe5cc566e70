"""ONNX's attribute defaults, read from ONNX's own op schemas: no reader restates one.

A node keeps the attributes its source gave it (an imported node as written, a node a pass builds as
built, a node parsed from IR text as written), so an absent attribute means its default. :func:`attr`
reads an attribute or, absent, the default of the op's newest schema (the IR's contract: the newest
opset's form).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from onnx import defs, helper

from loopc.errors import InternalError

if TYPE_CHECKING:
    from loopc.ir import Node


@functools.cache
def defaults(op: str) -> dict[str, Any]:
    """The attributes of ``op`` that have a default, with it (strings as str); empty for an op ONNX does not
    define."""
    try:
        schema = defs.get_schema(op, defs.onnx_opset_version())
    except defs.SchemaError:
        return {}
    found = {}
    for name, spec in schema.attributes.items():
        if spec.default_value.type:
            value = helper.get_attribute_value(spec.default_value)
            found[name] = value.decode() if isinstance(value, bytes) else value
    return found


def attr(node: Node, name: str) -> Any:
    """``node``'s attribute ``name``, or ONNX's default for it when absent. An attribute with no default (a
    required one) that is absent is our bug: a node without it is not ONNX."""
    if name in node.attrs:
        return node.attrs[name]
    try:
        return defaults(node.op)[name]
    except KeyError:
        raise InternalError(f"{node.describe()}: {node.op} has no attribute {name!r} and ONNX gives it no "
                            "default") from None


def text(node: Node, name: str) -> str:
    """A string attribute (or its default) as str: an ONNX attribute may reach a node as bytes."""
    value = attr(node, name)
    return value.decode() if isinstance(value, bytes) else str(value)
