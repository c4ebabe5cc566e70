"""The IR as text: what ``loopc inspect`` and ``--dump-ir`` print, and what :mod:`loopc.ir.parser` reads back.

The text is lossless: ``parse(format_graph(g))`` rebuilds a graph that prints exactly as ``g`` did (types,
loop roles, ``padded``, node names and origins, attributes to the bit), and ``format_graph(parse(t)) == t``
for any text the printer writes. An example::

    model opset=17 source="running_sum.onnx" outputs=["total", "partials"]
    graph main(%x: f32[5,3], %n: i64[], %init: f32[3]) -> (%total, %partials) {
      %total: f32[3], %partials: f32[?,3] = loop count=%n @"/Loop" from "node '/Loop' (Loop, opset 17)" {
        counter %i: i64[]
        iterator %row: f32[3] = %x[axis 0]
        recurrence %sum: f32[3] = %init -> %next
        %two: f32[] = Constant() value=f32[]:[2]
        %next: f32[3] = Add(%sum, %row)
        last %total = %sum
        concat %partials = %next axis 0
      }
    }

Grammar (one statement per line; ``;`` starts a comment; ``[x]`` optional, ``{x}`` repeated)::

    model   := ['model' ['opset=' INT] ['source=' STRING] ['outputs=' '[' STRING {',' STRING} ']']] graph
    graph   := 'graph' NAME '(' [def {',' def}] ')' '->' '(' [VALUE {',' VALUE}] ')' '{' {stmt} '}'
    def     := VALUE [':' type]                        no type: element type and shape unknown
    type    := DTYPE '[' ('...' | [dim {',' dim}]) ']' ``...``: unknown rank; DTYPE ``?``: unknown
    dim     := INT | '?' | NAME                        ``?``: unknown size; NAME: a symbolic size
    stmt    := defs '=' (call | loop | if)
    defs    := '()' | def {',' def}
    call    := OP '(' [(VALUE | '_') {',' (VALUE | '_')}] ')' {attr} meta      ``_``: an absent input
    attr    := NAME '=' literal
    meta    := ['@' NAME] ['from' STRING]          node name (when not the default, below), origin
    loop    := 'loop' ['count=' VALUE] ['while=' VALUE] ['max_trips=' VALUE] ['padded'] ['body=' NAME]
               {attr} meta '{' {role} {stmt} {output} '}'
    role    := 'counter' def
             | 'iterator' def '=' VALUE '[' 'axis' INT ['reverse'] ']'
             | 'recurrence' def '=' VALUE '->' VALUE                  init (outside) -> next (in the body)
    output  := ('last' | 'concat' | 'reverse') VALUE '=' VALUE ['axis' INT]   one per loop result, in order
    if      := 'if' VALUE {attr} meta '{' branch branch '}'
    branch  := ('then' | 'else') [NAME] ['(' def {',' def} ')'] '{' {stmt} 'yield' [VALUE {',' VALUE}] '}'
    literal := INT | FLOAT | STRING | BYTES | 'true' | 'false' | 'none'
             | '[' [literal {',' literal}] ']' | '(' [literal ','] [literal {',' literal}] ')'   list, tuple
             | DTYPE '[' [INT {',' INT}] ']' ':' '[' [elem {',' elem}] ']'     an array, flat in C order
             | '<' DTYPE '[' [INT {',' INT}] ']' '#' INT '>'              an array in the constants store
             | DTYPE ':' elem                                             a NumPy scalar
    elem    := INT | FLOAT | 'inf' | '-inf' | 'nan' | 'nan(' HEX ')' | 'true' | 'false' | STRING | BYTES
             | 'none' | '(' elem ',' elem ')'      HEX: a NaN's bits; a pair: a complex number

``VALUE`` is ``%`` and a name — bare when it is made of ``A-Z a-z 0-9 _ . /``, else a quoted string — with
``#2``, ``#3``... for the second, third... value of the same name. ``NAME``, ``OP`` and ``DTYPE`` are bare
identifiers or quoted strings; strings take ``\\" \\\\ \\n \\t \\r \\xHH \\uHHHH \\UHHHHHHHH`` escapes and
bytes are ``b"..."``. ``DTYPE`` is ``f32 f16 bf16 f64 i64 i32 i16 i8 u8 u16 u32 u64 bool`` or a NumPy /
ml_dtypes name (``complex64``, ``float8_e4m3fn``, ``int4``...), quoted when it is not an identifier.
Floats are written as the shortest text that reads back to the same bits. An array with more than
``inline_limit`` elements (or of a kind with no literal) is written ``<f32[512,512] #3>`` and kept in the
``constants`` dict the printer fills and the parser takes (``numpy.savez`` can store it).
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from loopc.ir.core import SHORT_DTYPES, Graph, Model, Node, Value
from loopc.ir.loop import If, Loop

#: Arrays with more elements than this are kept in the constants store (by default).
INLINE_LIMIT = 16

#: Keywords the parser reads where a name could stand; such names are quoted.
KEYWORDS = frozenset({"graph", "model", "loop", "if", "then", "else", "yield", "counter", "iterator", "recurrence",
                      "last", "concat", "reverse", "from", "padded", "true", "false", "none", "nan", "inf", "_"})

_WORD = re.compile(r"[A-Za-z0-9_./]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_SOURCE = re.compile(r"""node ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*") \(""")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def format_graph(graph: Graph, indent: int = 0, *, constants: dict[str, np.ndarray] | None = None,
                 inline_limit: int | None = INLINE_LIMIT, node_names: bool = True) -> str:
    """The whole graph, nested graphs indented.

    Args:
        graph: the graph to print.
        indent: spaces before every line.
        constants: filled with the arrays too large to print inline, by the key the text names them with.
        inline_limit: the largest array printed inline (None: every array).
        node_names: False leaves out node names (the text then reads back with default names).
    """
    printer = _Printer(constants, inline_limit, node_names)
    printer.graph(graph, indent)
    return "\n".join(printer.lines)


def format_model(model: Model, *, constants: dict[str, np.ndarray] | None = None,
                 inline_limit: int | None = INLINE_LIMIT, node_names: bool = True) -> str:
    """A ``model`` line (opset, source, output names) and the graph; see :func:`format_graph`."""
    head = ["model"]
    if model.opset:
        head.append(f"opset={model.opset}")
    if model.source:
        head.append(f"source={quote(model.source)}")
    if model.output_names:
        head.append("outputs=[" + ", ".join(quote(n) for n in model.output_names) + "]")
    body = format_graph(model.graph, constants=constants, inline_limit=inline_limit, node_names=node_names)
    return " ".join(head) + "\n" + body


def format_loop(loop: Loop, indent: int = 0, *, node_names: bool = True) -> str:
    """One loop's statement: its results, roles and body (outer values appear by name only)."""
    printer = _Printer(None, INLINE_LIMIT, node_names)
    printer.node(loop, indent)
    return "\n".join(printer.lines)


def default_node_name(node: Node) -> str:
    """The name the parser gives a node written without ``@name`` (see :func:`default_name`)."""
    return default_name(node.outputs, node.op, node.origin)


def default_name(outputs: Sequence[Value], op: str, origin: str) -> str:
    """The source node's name when the origin gives one (``node 'x' (...)``), else the first output's name,
    else the op's name in lower case: what needs no ``@name`` in the text."""
    found = _SOURCE.match(origin)
    if found:
        try:
            name = ast.literal_eval(found.group(1))
        except (ValueError, SyntaxError):
            name = None
        if isinstance(name, str) and name:
            return name
    return outputs[0].name if outputs else op.lower()


# ---------------------------------------------------------------------------------------------- tokens


def quote(text: str) -> str:
    """``text`` as a double-quoted string literal."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def quote_bytes(data: bytes) -> str:
    """``data`` as ``b"..."`` (printable ASCII as is, other bytes as ``\\xHH``)."""
    out = []
    for byte in data:
        ch = chr(byte)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return 'b"' + "".join(out) + '"'


def ident(text: str) -> str:
    """A graph, op, attribute or dimension name: bare when it is an identifier and not a keyword."""
    return text if _IDENT.fullmatch(text) and text not in KEYWORDS else quote(text)


def word(text: str) -> str:
    """A value's or node's name after ``%`` / ``@``: bare when made of letters, digits, ``_ . /``."""
    return text if _WORD.fullmatch(text) else quote(text)


def dtype_text(dtype: np.dtype[Any] | None) -> str:
    """``f32``, ``complex64``, ``"<U5"``; ``?`` for an unknown element type."""
    if dtype is None:
        return "?"
    name = SHORT_DTYPES.get(dtype.name, dtype.name)
    try:
        if np.dtype(dtype.name) == dtype:
            return ident(name)
    except (TypeError, ValueError):
        pass
    return quote(dtype.str)


def value_type(value: Value) -> str:
    """``f32[5,3]``, ``i64[?,n]``, ``f32[...]``; empty when neither element type nor shape is known."""
    if value.dtype is None and value.shape is None:
        return ""
    if value.shape is None:
        return f"{dtype_text(value.dtype)}[...]"
    return f"{dtype_text(value.dtype)}[{','.join(_dim(d) for d in value.shape)}]"


def _dim(dim: int | str | None) -> str:
    if dim is None:
        return "?"
    if isinstance(dim, str):
        return ident(dim)
    return str(int(dim))


# -------------------------------------------------------------------------------------------- literals


def float_kind(dtype: np.dtype[Any]) -> bool:
    """True for floating types, ml_dtypes' (bfloat16, float8...) included."""
    return dtype.kind == "f" or _ml_dtype_of(dtype, ml_dtypes.finfo)


def int_kind(dtype: np.dtype[Any]) -> bool:
    """True for integer types, ml_dtypes' (int4, uint2...) included."""
    return dtype.kind in "iu" or _ml_dtype_of(dtype, ml_dtypes.iinfo)


def _ml_dtype_of(dtype: np.dtype[Any], info: Any) -> bool:
    """Whether ``dtype`` is an ml_dtypes type that ``info`` (``ml_dtypes.finfo`` or ``iinfo``) describes."""
    if dtype.kind != "V" or dtype.fields is not None:
        return False
    try:
        info(dtype)
    except ValueError:
        return False
    return True


def float_value(text: str, dtype: np.dtype[Any]) -> Any:
    """A float element's text read as ``dtype`` (the printer checks its text with this very function)."""
    if text.startswith("nan("):
        bits = int(text[4:-1], 16).to_bytes(dtype.itemsize, sys.byteorder)
        return np.frombuffer(bits, dtype=dtype)[0]
    if dtype == np.longdouble:
        return np.longdouble(text)
    return np.array(float(text)).astype(dtype)[()]


def _bits(scalar: Any) -> bytes:
    """A float's bits (an x87 long double's 10, not the padding around them)."""
    raw: bytes = scalar.tobytes()
    return raw[:10] if scalar.dtype.itemsize > 8 and np.finfo(scalar.dtype).nmant == 63 else raw


def float_text(x: Any, dtype: np.dtype[Any], python: bool = False) -> str:
    """The shortest text that :func:`float_value` reads back to ``x``'s bits (``1.0`` kept for Python floats)."""
    scalar: Any = np.array(x, dtype=dtype)[()]
    raw = _bits(scalar)
    if math.isnan(float(scalar)):
        if _bits(np.array(np.nan).astype(dtype)[()]) == raw:
            return "nan"
        return f"nan(0x{int.from_bytes(scalar.tobytes(), sys.byteorder):0{2 * dtype.itemsize}x})"
    text = repr(float(x)) if python else _shortest(scalar, dtype)
    if not python and text.endswith(".0"):
        text = text[:-2]
    if _bits(float_value(text, dtype)) != raw:
        text = repr(float(scalar)) if dtype.itemsize <= 8 else np.format_float_scientific(scalar, unique=False)
    return text


def _shortest(scalar: np.generic, dtype: np.dtype[Any]) -> str:
    if dtype.kind == "f":
        return str(scalar)  # NumPy's own floats print the shortest unique digits already
    value, raw = float(scalar), _bits(scalar)  # ml_dtypes' print a fixed number of digits: search
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if _bits(float_value(text, dtype)) == raw:
            return text
    return repr(value)


def _storable_inline(dtype: np.dtype[Any]) -> bool:
    return dtype.kind in "bcUSO" or float_kind(dtype) or int_kind(dtype)


def _element(x: Any, dtype: np.dtype[Any]) -> str:
    if dtype.kind == "b":
        return "true" if bool(x) else "false"
    if float_kind(dtype):
        return float_text(x, dtype)
    if int_kind(dtype):
        return str(int(x))
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        return f"({float_text(x.real, part)}, {float_text(x.imag, part)})"
    if dtype.kind == "U":
        return quote(str(x))
    if dtype.kind == "S":
        return quote_bytes(bytes(x))
    return literal(x)  # an object array's element


def array_type(array: np.ndarray) -> str:
    return f"{dtype_text(array.dtype)}[{','.join(str(d) for d in array.shape)}]"


def array_literal(array: np.ndarray) -> str:
    """``f32[2,2]:[1,0.5,-0,inf]``: the element type, the shape and the elements, flat in C order."""
    native = array.astype(array.dtype.newbyteorder("=")) if array.dtype.byteorder not in "=|" else array
    flat = native.reshape(-1)
    return f"{array_type(array)}:[" + ",".join(_element(x, native.dtype) for x in flat) + "]"


def literal(value: Any, store: Callable[[np.ndarray], str] | None = None) -> str:
    """An attribute value as text; ``store`` names an array kept outside the text (None: print it inline)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, np.ndarray):
        if store is not None:
            key = store(value)
            if key:
                return f"<{array_type(value)} #{key}>"
        return array_literal(value)
    if isinstance(value, np.generic):
        return f"{dtype_text(value.dtype)}:{_element(value, value.dtype)}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value, np.dtype(np.float64), python=True)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bytes):
        return quote_bytes(value)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v, store) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(literal(v, store) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return f"<opaque {quote(type(value).__name__)}>"  # readable, but the parser refuses it


# ------------------------------------------------------------------------------------------ statements


class _Printer:
    """One text: value tokens are unique across it (``#2`` for a second value of the same name)."""

    def __init__(self, constants: dict[str, np.ndarray] | None, inline_limit: int | None, node_names: bool) -> None:
        self.constants = constants
        self.inline_limit = inline_limit
        self.node_names = node_names
        self.lines: list[str] = []
        self._tokens: dict[Value, str] = {}
        self._seen: Counter[str] = Counter()
        self._stored: dict[int, str] = {}
        self._next_key = 0

    def ref(self, value: Value | None) -> str:
        if value is None:
            return "_"
        token = self._tokens.get(value)
        if token is None:
            self._seen[value.name] += 1
            count = self._seen[value.name]
            token = "%" + word(value.name) + (f"#{count}" if count > 1 else "")
            self._tokens[value] = token
        return token

    def define(self, value: Value) -> str:
        typ = value_type(value)
        return self.ref(value) + (f": {typ}" if typ else "")

    def store(self, array: np.ndarray) -> str:
        """The key of an array kept outside the text, or "" to print it inline."""
        if _storable_inline(array.dtype) and (self.inline_limit is None or array.size <= self.inline_limit):
            return ""
        key = self._stored.get(id(array))
        if key is None:
            if self.constants is not None:
                while str(self._next_key) in self.constants:
                    self._next_key += 1
            key = str(self._next_key)
            self._next_key += 1
            self._stored[id(array)] = key
            if self.constants is not None:
                self.constants[key] = array
        return key

    def graph(self, graph: Graph, indent: int) -> None:
        pad = " " * indent
        params = ", ".join(self.define(v) for v in graph.inputs)
        results = ", ".join(self.ref(v) for v in graph.outputs)
        self.lines.append(f"{pad}graph {ident(graph.name)}({params}) -> ({results}) {{")
        for node in graph.nodes:
            self.node(node, indent + 2)
        self.lines.append(f"{pad}}}")

    def _head(self, node: Node) -> str:
        results = ", ".join(self.define(v) for v in node.outputs) if node.outputs else "()"
        return f"{results} = "

    def _tail(self, node: Node) -> str:
        parts = [f" {ident(k)}={literal(v, self.store)}" for k, v in sorted(node.attrs.items())]
        if self.node_names and node.name != default_node_name(node):
            parts.append(f" @{word(node.name)}")
        if node.origin:
            parts.append(f" from {quote(node.origin)}")
        return "".join(parts)

    def node(self, node: Node, indent: int) -> None:
        pad = " " * indent
        if isinstance(node, Loop):
            self.loop(node, indent)
        elif isinstance(node, If):
            self.lines.append(f"{pad}{self._head(node)}if {self.ref(node.inputs[0])}{self._tail(node)} {{")
            for keyword, branch in (("then", node.then_branch), ("else", node.else_branch)):
                name = "" if branch.name == keyword else f" {ident(branch.name)}"
                params = f"({', '.join(self.define(v) for v in branch.inputs)})" if branch.inputs else ""
                self.lines.append(f"{pad}  {keyword}{name}{params} {{")
                for inner in branch.nodes:
                    self.node(inner, indent + 4)
                results = ", ".join(self.ref(v) for v in branch.outputs)
                self.lines.append(f"{pad}    yield{' ' if results else ''}{results}")
                self.lines.append(f"{pad}  }}")
            self.lines.append(f"{pad}}}")
        else:
            op = ident(node.op)
            args = ", ".join(self.ref(v) for v in node.inputs)
            self.lines.append(f"{pad}{self._head(node)}{op}({args}){self._tail(node)}")

    def loop(self, loop: Loop, indent: int) -> None:
        pad, inner = " " * indent, " " * (indent + 2)
        head = self._head(loop) + "loop"
        if loop.trip_count is not None:
            head += f" count={self.ref(loop.trip_count)}"
        if loop.condition is not None:
            head += f" while={self.ref(loop.condition)}"
        if loop.max_trips is not None:
            head += f" max_trips={self.ref(loop.max_trips)}"
        if loop.padded:
            head += " padded"
        if loop.body.name != "body":
            head += f" body={ident(loop.body.name)}"
        self.lines.append(f"{pad}{head}{self._tail(loop)} {{")
        if loop.counter is not None:
            self.lines.append(f"{inner}counter {self.define(loop.counter)}")
        for it in loop.iterators:
            rev = " reverse" if it.reverse else ""
            self.lines.append(f"{inner}iterator {self.define(it.param)} = {self.ref(it.source)}[axis {it.axis}{rev}]")
        for rec in loop.recurrences:
            state, init = self.define(rec.state), self.ref(rec.init)
            self.lines.append(f"{inner}recurrence {state} = {init} -> {self.ref(rec.next)}")
        for node in loop.body.nodes:
            self.node(node, indent + 2)
        for out in loop.loop_outputs:
            axis = "" if out.kind == "last" and out.axis == 0 else f" axis {out.axis}"
            self.lines.append(f"{inner}{out.kind} {self.ref(out.result)} = {self.ref(out.value)}{axis}")
        self.lines.append(f"{pad}}}")


__all__ = ["INLINE_LIMIT", "array_literal", "default_node_name", "format_graph", "format_loop", "format_model",
           "literal", "quote", "value_type"]
