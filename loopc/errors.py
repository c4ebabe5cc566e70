"""One exception root for everything a user can cause, and a separate type for our own bugs.

The CLI prints ``str(error)`` of a :class:`LoopcError` as one line and exits :data:`EXIT_INPUT`;
an :class:`InternalError` (or any other exception) exits :data:`EXIT_INTERNAL`, since it means
loopc is wrong. Command-line usage errors exit 2, as click reports them.

A :class:`LoopcError` may carry the node, the op, its opset and a hint as fields, so that callers
(reports, IDEs, the regression checker) need not parse the message: ``str()`` puts them in one line.

A refusal of something loopc does not handle is an :class:`UnsupportedError`, raised as the error
of the layer that refused it: :class:`UnsupportedOpError` (a frontend cannot translate the node) or
:class:`UnsupportedConversionError` (the TensorRT backend has no layers for it).
"""

from __future__ import annotations

import ast
import re

#: The exit codes ``loopc`` documents: a problem with the user's input, a command-line usage error
#: (click's convention) and a bug in loopc (``EX_SOFTWARE`` from sysexits.h).
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70

#: What an internal error asks of the user (the README's "Reporting bugs" says what to attach).
REPORT_HINT = "this is a bug in loopc: please report it on loopc's issue tracker with the model and the output of -v"


class LoopcError(Exception):
    """An error the user can fix: bad input, unsupported construct, missing GPU.

    ``node`` and ``op`` name the user's node when the error is about one, ``opset`` the op's version
    as the source names it (ONNX's opset number, OpenVINO's ``"opset8"``); ``hint`` says what to do.
    ``where`` replaces the usual ``node 'x' (Op, opset N)`` prefix when the source names its nodes
    otherwise (an OpenVINO layer by id, inside a body): the fields are still filled.
    """

    def __init__(self, message: str, *, node: str | None = None, op: str | None = None,
                 opset: int | str | None = None, hint: str | None = None, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        self.op = op
        self.opset = opset
        self.hint = hint
        self.where = where

    def op_text(self) -> str | None:
        """The op with its opset, as messages show it: ``Loop, opset 13``, ``Gather, opset8``."""
        if self.op is None:
            return None
        if self.opset is None or self.opset == "":
            return self.op
        return f"{self.op}, " + (f"opset {self.opset}" if isinstance(self.opset, int) else self.opset)

    def location(self) -> str | None:
        """How the message names where the error is, None when it names no place."""
        if self.where is not None:
            return self.where
        op = self.op_text()
        if self.node is not None:
            return f"node {self.node!r}" + (f" ({op})" if op else "")
        return op

    def __str__(self) -> str:
        where = self.location()
        return (f"{where}: " if where else "") + self.message + (f"; {self.hint}" if self.hint else "")


class FrontendError(LoopcError):
    """A model file could not be read or translated."""


class PassError(LoopcError):
    """A pass found the IR in a state it cannot handle."""


class BackendError(LoopcError):
    """TensorRT rejected the network or the build configuration."""


class NetworkReadError(BackendError):
    """A TensorRT network cannot be read back (:mod:`loopc.trt.read_back`): TensorRT cannot infer a tensor's shape,
    or the network's structure is broken."""


class UnsupportedError(LoopcError):
    """A node uses an op, or a form of one, that loopc does not handle: catch this for either layer's refusal."""


class UnsupportedOpError(FrontendError, UnsupportedError):
    """A frontend cannot translate a node's op or attribute."""


class UnsupportedConversionError(BackendError, UnsupportedError):
    """The TensorRT backend has no converter for a node's op, or not for the form the node has."""


class SimulationError(LoopcError):
    """The simulator cannot run the network with the given inputs."""


class LimitError(LoopcError):
    """An input would make loopc allocate more than its limits allow (see :mod:`loopc.limits`)."""


class InternalError(Exception):
    """A bug in loopc: an invariant that should hold did not."""


#: How frontends name a source node in an IR node's ``origin`` and in messages: ONNX's
#: ``node 'x' (Op, opset 13)``, OpenVINO's ``layer 3 'x' (Op, opset8)``, then perhaps `` in <body>``.
_ORIGIN = re.compile(r"^(?:node|layer \d+) (?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") "
                     r"\((?P<op>[^(),]*)(?:, (?P<opset>[^()]*))?\)(?: in .+)?$", re.DOTALL)


def origin_fields(origin: str) -> dict[str, str | int | None] | None:
    """The ``node``, ``op`` and ``opset`` an origin names (None for an origin of another form).

    ONNX's opset is its number; OpenVINO's is its version string (``opset8``), absent for ``no version``.
    """
    found = _ORIGIN.match(origin)
    if found is None:
        return None
    try:
        name = ast.literal_eval(found.group("name"))
    except (ValueError, SyntaxError):
        return None
    if not isinstance(name, str):
        return None
    text = found.group("opset")
    opset: str | int | None = text
    numbered = re.fullmatch(r"opset (\d+)", text or "")
    if numbered is not None:
        opset = int(numbered.group(1))
    elif text == "no version":
        opset = None
    return {"node": name, "op": found.group("op"), "opset": opset}


def located(cls: type[LoopcError], origin: str, message: str, hint: str | None = None) -> LoopcError:
    """A ``cls`` error at ``origin`` (how a frontend names a node, see :func:`origin_fields`), its fields
    filled from it; ``str()`` shows the origin as given, then the message."""
    fields = origin_fields(origin)
    if fields is None:
        return cls(message, hint=hint, where=origin)
    error = cls(message, node=str(fields["node"]), op=str(fields["op"]), opset=fields["opset"], hint=hint)
    if error.location() != origin:  # an OpenVINO layer by id, or inside a body: say it as the frontend does
        error.where = origin
    return error
