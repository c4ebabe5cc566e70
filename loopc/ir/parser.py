"""Read the IR's text form back (the grammar is in :mod:`loopc.ir.printer`): ``parse`` and ``parse_model``.

Pass tests write their graphs as text; a mistake in one is reported as one line with its line and column
and what was expected (:class:`IRSyntaxError`). Values are resolved as they are read, so a use before the
definition, a name defined twice or a value read outside the graph that can see it is an error here,
not a mystery in a pass. Whether the graph makes sense as a loop program is the verifier's to say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from loopc.errors import LoopcError
from loopc.ir.core import SHORT_DTYPES, Dim, Graph, Model, Node, Shape, Value
from loopc.ir.loop import If, Loop, LoopIterator, LoopOutput, Recurrence
from loopc.ir.printer import default_name, float_kind, float_value, int_kind

_DTYPES = {short: name for name, short in SHORT_DTYPES.items()}
_TOKEN = re.compile(
    r"""(?P<space>[ \t]+|;.*)
      | (?P<value>%(?:[A-Za-z0-9_./]+|"(?:[^"\\]|\\.)*")(?:\#\d+)?)
      | (?P<node>@(?:[A-Za-z0-9_./]+|"(?:[^"\\]|\\.)*"))
      | (?P<bytes>b"(?:[^"\\]|\\.)*")
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<number>-?(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))
      | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
      | (?P<punct>->|\.\.\.|[()\[\]{},=:<>?\#@-])""",
    re.VERBOSE,
)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}
_ROLES = ("counter", "iterator", "recurrence", "last", "concat", "reverse")


class IRSyntaxError(LoopcError, ValueError):
    """A text that is not a well-formed IR: ``line L, column C: what was expected``."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.line = line
        self.column = column


@dataclass
class _Token:
    kind: str  # value, node, bytes, string, number, ident, punct, newline, end
    text: str
    line: int
    column: int

    def describe(self) -> str:
        if self.kind == "end":
            return "end of text"
        if self.kind == "newline":
            return "end of line"
        return repr(self.text)


def _tokens(text: str) -> list[_Token]:
    found: list[_Token] = []
    for number, line in enumerate(text.split("\n"), start=1):
        pos, start = 0, len(found)
        while pos < len(line):
            match = _TOKEN.match(line, pos)
            if match is None:
                quoted = line[pos] in "\"%@b" and '"' in line[pos:pos + 2]
                what = "an unterminated string" if quoted else repr(line[pos])
                raise IRSyntaxError(number, pos + 1, f"unexpected {what}")
            kind = match.lastgroup or "space"
            if kind != "space":
                found.append(_Token(kind, match.group(), number, pos + 1))
            pos = match.end()
        if len(found) > start:
            found.append(_Token("newline", "", number, len(line) + 1))
    lines = text.count("\n") + 1
    found.append(_Token("end", "", lines, len(text.split("\n")[-1]) + 1))
    return found


def _unescape(body: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xuU" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        raise ValueError(code)

    return _ESCAPE.sub(one, body)


def parse(text: str, constants: Mapping[str, np.ndarray] | None = None) -> Graph:
    """The graph ``text`` describes; ``constants`` holds the arrays it names as ``<f32[...] #key>``."""
    reader = _Parser(text, constants)
    graph = reader.graph()
    reader.end()
    return graph


def parse_model(text: str, constants: Mapping[str, np.ndarray] | None = None) -> Model:
    """A model: an optional ``model`` line (opset, source, output names), then its graph."""
    reader = _Parser(text, constants)
    model = reader.model()
    reader.end()
    return model


@dataclass
class _Block:
    """A graph being read: the values it defines, in the scope of the blocks around it."""

    what: str
    opened: int
    values: dict[str, Value] = field(default_factory=dict)


@dataclass
class _LoopRoles:
    """A loop body's role lines; the values they read from the body are resolved when it closes."""

    counter: Value | None = None
    iterators: list[LoopIterator] = field(default_factory=list)
    #: state, init and the token of the next value
    recurrences: list[tuple[Value, Value, _Token]] = field(default_factory=list)
    #: result token, kind, the token of the value collected, axis
    outputs: list[tuple[_Token, str, _Token, int]] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str, constants: Mapping[str, np.ndarray] | None) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.constants = constants
        self.blocks: list[_Block] = []
        self.defined: dict[str, int] = {}  # every token defined anywhere, with its line
        self.loaded: dict[str, np.ndarray] = {}

    # -------------------------------------------------------------------------------------- tokens

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> _Token:
        token = self.peek()
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def fail(self, token: _Token, message: str) -> NoReturn:
        raise IRSyntaxError(token.line, token.column, message)

    def expected(self, what: str, token: _Token | None = None) -> NoReturn:
        token = token or self.peek()
        self.fail(token, f"expected {what}, found {token.describe()}")

    def at(self, text: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind in ("punct", "ident") and token.text == text

    def take(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str, what: str = "") -> _Token:
        if not self.at(text):
            self.expected(f"{text!r}{' ' + what if what else ''}")
        return self.next()

    def end_of_line(self, what: str) -> None:
        if self.peek().kind != "newline":
            self.expected(f"end of line after {what}")
        self.next()

    def end(self) -> None:
        while self.peek().kind == "newline":
            self.next()
        token = self.peek()
        if token.kind != "end":
            self.fail(token, f"unexpected {token.describe()} after the graph's closing '}}'")

    def string(self, what: str) -> str:
        token = self.peek()
        if token.kind != "string":
            self.expected(what)
        self.next()
        return self._text(token, token.text[1:-1])

    def _text(self, token: _Token, body: str) -> str:
        try:
            return _unescape(body)
        except ValueError as error:
            self.fail(token, f"unknown escape '\\{error}' in a string")

    def name(self, what: str) -> str:
        """A bare identifier or a quoted string."""
        token = self.peek()
        if token.kind == "ident":
            self.next()
            return token.text
        return self.string(what)

    def integer(self, what: str) -> int:
        token = self.peek()
        if token.kind != "number" or not re.fullmatch(r"-?\d+", token.text):
            self.expected(what)
        self.next()
        return int(token.text)

    # -------------------------------------------------------------------------------------- values

    def _key(self, token: _Token) -> str:
        """A value token without quoting: ``%"a b"#2`` -> ``a b#2``, the identity the text gives a value."""
        name, suffix = self._split(token)
        return f"{name}\0{suffix}"

    def _split(self, token: _Token) -> tuple[str, str]:
        text = token.text[1:]
        suffix = ""
        hashed = re.search(r"#\d+$", text)
        if hashed and (not text.startswith('"') or hashed.start() > text.rfind('"')):
            text, suffix = text[:hashed.start()], hashed.group()
        name = self._text(token, text[1:-1]) if text.startswith('"') else text
        return name, suffix

    def value_token(self, what: str) -> _Token:
        token = self.peek()
        if token.kind != "value":
            self.expected(what)
        return self.next()

    def define(self, token: _Token, dtype: np.dtype[Any] | None, shape: Shape | None) -> Value:
        key = self._key(token)
        if key in self.defined:
            self.fail(token, f"{token.text} is already defined at line {self.defined[key]} (another value of "
                             f"the same name is written {token.text}#2, #3...)")
        self.defined[key] = token.line
        value = Value(self._split(token)[0], dtype, shape)
        self.blocks[-1].values[key] = value
        return value

    def lookup(self, token: _Token, outer: bool = False) -> Value:
        key = self._key(token)
        for block in reversed(self.blocks[:-1] if outer else self.blocks):
            if key in block.values:
                return block.values[key]
        if key in self.defined:
            where = "the loop's body" if outer else "a graph nested elsewhere"
            self.fail(token, f"{token.text} (defined at line {self.defined[key]}) cannot be read here: it belongs "
                             f"to {where}")
        self.fail(token, f"{token.text} is not defined (a value is defined before it is read)")

    def ref(self, what: str, outer: bool = False) -> Value:
        return self.lookup(self.value_token(what), outer)

    def open(self, what: str, line: int) -> _Block:
        block = _Block(what, line)
        self.blocks.append(block)
        return block

    def typed(self, what: str) -> tuple[_Token, np.dtype[Any] | None, Shape | None]:
        token = self.value_token(what)
        if not self.take(":"):
            return token, None, None
        dtype, shape = self.type()
        return token, dtype, shape

    def dtype(self) -> np.dtype[Any] | None:
        token = self.peek()
        if self.take("?"):
            return None
        if token.kind not in ("ident", "string"):
            self.expected("an element type (f32, i64, bool, ...)")
        text = self.name("an element type")
        try:
            return np.dtype(_DTYPES.get(text, text))
        except (TypeError, ValueError):
            self.fail(token, f"unknown element type {text!r} (f32, f16, bf16, f64, i64, i32, i8, u8, bool, ... "
                             f"or a NumPy name)")

    def type(self) -> tuple[np.dtype[Any] | None, Shape | None]:
        dtype = self.dtype()
        self.expect("[", "to open the shape")
        if self.take("..."):
            self.expect("]", "after '...'")
            return dtype, None
        dims: list[Dim] = []
        while not self.take("]"):
            if dims:
                self.expect(",", "or ']' in the shape")
            token = self.peek()
            if self.take("?"):
                dims.append(None)
            elif token.kind == "number":
                dims.append(self.integer("a dimension"))
            elif token.kind in ("ident", "string"):
                dims.append(self.name("a dimension"))
            else:
                self.expected("a dimension (a size, '?' or a name)")
        return dtype, tuple(dims)

    # ------------------------------------------------------------------------------------- graphs

    def model(self) -> Model:
        self.blank()
        opset, source, names = 0, "", list[str]()
        if self.take("model"):
            while self.peek().kind != "newline":
                key = self.peek()
                if self.take("opset"):
                    self.expect("=")
                    opset = self.integer("the opset (a number)")
                elif self.take("source"):
                    self.expect("=")
                    source = self.string("the source (a string)")
                elif self.take("outputs"):
                    self.expect("=")
                    self.expect("[", "to open the output names")
                    while not self.take("]"):
                        if names:
                            self.expect(",", "or ']' in the output names")
                        names.append(self.string("an output name (a string)"))
                else:
                    self.expected("opset=, source= or outputs=", key)
            self.end_of_line("the model line")
        return Model(self.graph(), source=source, opset=opset, output_names=names)

    def blank(self) -> None:
        while self.peek().kind == "newline":
            self.next()

    def graph(self) -> Graph:
        self.blank()
        opened = self.expect("graph", "to start the graph").line
        name = self.name("the graph's name")
        block = self.open(f"graph {name!r}", opened)
        inputs = self.params("the graph's inputs")
        self.expect("->", "and the graph's outputs")
        self.expect("(", "to open the graph's outputs")
        results: list[_Token] = []
        while not self.take(")"):
            if results:
                self.expect(",", "or ')' in the graph's outputs")
            results.append(self.value_token("a value (%name)"))
        self.expect("{", "to open the graph")
        self.end_of_line("'{'")
        nodes = self.statements(block)
        outputs = [self.lookup(token) for token in results]  # read once the graph's values are defined
        self.blocks.pop()
        return Graph(name, inputs, outputs, nodes)

    def params(self, what: str) -> list[Value]:
        self.expect("(", f"to open {what}")
        values: list[Value] = []
        while not self.take(")"):
            if values:
                self.expect(",", f"or ')' in {what}")
            token, dtype, shape = self.typed("a value (%name)")
            values.append(self.define(token, dtype, shape))
        return values

    def statements(self, block: _Block, roles: _LoopRoles | None = None, branch: bool = False) -> list[Node]:
        """Statements up to the block's closing '}' (for a branch: up to and including its yield)."""
        nodes: list[Node] = []
        while True:
            token = self.peek()
            if token.kind == "newline":
                self.next()
            elif token.kind == "end":
                self.fail(token, f"expected '}}' to close the {block.what} opened at line {block.opened}, "
                                 f"found end of text")
            elif self.at("}"):
                if branch:
                    self.expected("'yield' and the branch's results before '}'")
                self.next()
                if self.peek().kind not in ("newline", "end"):
                    self.expected("end of line after '}'")
                return nodes
            elif token.kind == "ident" and token.text == "yield":
                if not branch:
                    self.fail(token, "'yield' ends an if's branch; a graph's outputs follow '->' in its header")
                return nodes
            elif token.kind == "ident" and token.text in _ROLES and not self.at("=", 1):
                if roles is None:
                    self.fail(token, f"{token.text!r} belongs in a loop's body")
                self.role(roles)
            elif token.kind == "value" or (self.at("(") and self.at(")", 1)):
                nodes.append(self.statement())
            else:
                self.expected("a statement ('%y: f32[3] = Op(%x)', a loop role or '}')")

    def statement(self) -> Node:
        results: list[tuple[_Token, np.dtype[Any] | None, Shape | None]] = []
        if self.take("("):
            self.expect(")")
        else:
            results.append(self.typed("a value (%name)"))
            while self.take(","):
                results.append(self.typed("a value (%name)"))
        self.expect("=", "after the results")
        token = self.peek()
        if self.at("loop"):
            return self.loop(results)
        if self.at("if"):
            return self.conditional(results)
        if token.kind not in ("ident", "string"):
            self.expected("an op, 'loop' or 'if'")
        op = self.name("an op")
        self.expect("(", f"after the op {op!r}")
        inputs: list[Value | None] = []
        while not self.take(")"):
            if inputs:
                self.expect(",", f"or ')' in the inputs of {op}")
            inputs.append(None if self.take("_") else self.ref("an input (%name or _)"))
        attrs, name, origin = self.tail()
        self.end_of_line(f"the {op} node")
        outputs = [self.define(*r) for r in results]
        return Node(op, inputs, outputs, attrs, name=name or default_name(outputs, op, origin), origin=origin)

    def tail(self) -> tuple[dict[str, Any], str, str]:
        """Attributes (``k=v``), then ``@name`` and ``from "origin"``."""
        attrs: dict[str, Any] = {}
        while self.peek().kind in ("ident", "string") and self.at("=", 1):
            key = self.peek()
            attr = self.name("an attribute name")
            if attr in attrs:
                self.fail(key, f"attribute {attr!r} given twice")
            self.next()
            attrs[attr] = self.literal()
        name = ""
        token = self.peek()
        if token.kind == "node":
            self.next()
            body = token.text[1:]
            name = self._text(token, body[1:-1]) if body.startswith('"') else body
        origin = ""
        if self.take("from"):
            origin = self.string("the origin (a string) after 'from'")
        return attrs, name, origin

    # -------------------------------------------------------------------------------------- loops

    def loop(self, results: list[tuple[_Token, np.dtype[Any] | None, Shape | None]]) -> Node:
        opened = self.next().line
        spec: dict[str, Any] = {"padded": False}
        body_name, condition = "body", None
        while True:  # the loop's own words come before its attributes
            token = self.peek()
            if token.kind != "ident" or (token.text == "padded") == self.at("=", 1):
                break
            if token.text in ("count", "max_trips"):
                self.pos += 2
                spec["trip_count" if token.text == "count" else "max_trips"] = self.ref(f"the {token.text} (a value)")
            elif token.text == "while":
                self.pos += 2
                condition = self.value_token("the condition (a value of the body)")
            elif token.text == "padded":
                self.next()
                spec["padded"] = True
            elif token.text == "body":
                self.pos += 2
                body_name = self.name("the body's name")
            else:
                break
        attrs, name, origin = self.tail()
        self.expect("{", "to open the loop's body")
        self.end_of_line("'{'")
        block = self.open("loop body", opened)
        roles = _LoopRoles()
        nodes = self.statements(block, roles)
        # what the roles read from the body, now that it is defined
        spec["condition"] = self.lookup(condition) if condition is not None else None
        recurrences = [Recurrence(state, init, self.lookup(nxt)) for state, init, nxt in roles.recurrences]
        collected = [self.lookup(value) for _, _, value, _ in roles.outputs]
        self.blocks.pop()
        order = {self._key(token): k for k, (token, _, _) in enumerate(results)}
        outs = [self.define(*r) for r in results]
        loop_outputs: list[LoopOutput] = []
        for (token, kind, _, axis), value in zip(roles.outputs, collected):
            key = self._key(token)
            if key not in order:
                self.fail(token, f"{token.text} is not one of the loop's results")
            if order[key] != len(loop_outputs):
                self.fail(token, f"{token.text}: the loop's outputs are listed in the order of its results")
            loop_outputs.append(LoopOutput(kind, value, outs[order[key]], axis))  # type: ignore[arg-type]
        if len(loop_outputs) < len(outs):
            missing = results[len(loop_outputs)][0]
            self.fail(missing, f"loop result {missing.text} has no 'last', 'concat' or 'reverse' line in the body")
        loop = Loop(Graph(body_name, [], [], nodes), counter=roles.counter, iterators=roles.iterators,
                    recurrences=recurrences, loop_outputs=loop_outputs, name=name or default_name(outs, "Loop", origin),
                    origin=origin, **spec)
        loop.attrs = attrs
        return loop

    def role(self, roles: _LoopRoles) -> None:
        keyword = self.next()
        kind = keyword.text
        if kind == "counter":
            if roles.counter is not None:
                self.fail(keyword, "a loop has one counter")
            roles.counter = self.define(*self.typed("the counter (%name)"))
        elif kind == "iterator":
            token, dtype, shape = self.typed("the iterator's value (%name)")
            self.expect("=")
            source = self.ref("the iterated value (a value outside the loop)", outer=True)
            self.expect("[", "and the iterator's axis")
            self.expect("axis")
            axis = self.integer("the axis (a number)")
            reverse = self.take("reverse")
            self.expect("]", "after the iterator's axis")
            roles.iterators.append(LoopIterator(self.define(token, dtype, shape), source, axis, reverse))
        elif kind == "recurrence":
            token, dtype, shape = self.typed("the recurrence's state (%name)")
            self.expect("=")
            init = self.ref("the initial value (a value outside the loop)", outer=True)
            self.expect("->", "and the next value")
            nxt = self.value_token("the next value (%name)")
            roles.recurrences.append((self.define(token, dtype, shape), init, nxt))
        else:
            result = self.value_token("the loop's result (%name)")
            self.expect("=")
            value = self.value_token("the value collected (%name)")
            axis = self.integer("the axis (a number)") if self.take("axis") else 0
            roles.outputs.append((result, kind, value, axis))
        self.end_of_line(f"the {kind}")

    # ------------------------------------------------------------------------------- conditionals

    def conditional(self, results: list[tuple[_Token, np.dtype[Any] | None, Shape | None]]) -> Node:
        opened = self.next().line
        cond = self.ref("the condition (a value)")
        attrs, name, origin = self.tail()
        self.expect("{", "to open the if")
        self.end_of_line("'{'")
        branches = [self.branch(keyword) for keyword in ("then", "else")]
        self.blank()
        if not self.at("}"):
            self.expected(f"'}}' to close the if opened at line {opened}")
        self.next()
        if self.peek().kind not in ("newline", "end"):
            self.expected("end of line after '}'")
        outs = [self.define(*r) for r in results]
        node = If(cond, branches[0], branches[1], outs, name=name or default_name(outs, "If", origin), origin=origin)
        node.attrs = attrs
        return node

    def branch(self, keyword: str) -> Graph:
        self.blank()
        opened = self.expect(keyword, "branch").line
        name = keyword if self.at("(") or self.at("{") else self.name("the branch's name or '{'")
        block = self.open(f"{keyword} branch", opened)
        params = self.params("the branch's inputs") if self.at("(") else []
        self.expect("{", f"to open the {keyword} branch")
        self.end_of_line("'{'")
        nodes = self.statements(block, branch=True)
        self.next()  # yield
        outputs: list[Value] = []
        while self.peek().kind != "newline":
            if outputs:
                self.expect(",", "or end of line in the yield")
            outputs.append(self.ref("a value (%name)"))
        self.next()
        self.blank()
        self.expect("}", f"to close the {keyword} branch opened at line {opened} after its yield")
        self.end_of_line("'}'")
        self.blocks.pop()
        return Graph(name, params, outputs, nodes)

    # ----------------------------------------------------------------------------------- literals

    def literal(self) -> Any:
        token = self.peek()
        if token.kind in ("ident", "string") and (self.at("[", 1) or self.at(":", 1)):
            return self.array_or_scalar()
        if token.kind == "number":
            return self.number()
        if token.kind == "string":
            return self.string("a string")
        if token.kind == "bytes":
            self.next()
            return self._bytes(token)
        if self.take("["):
            listed: list[Any] = []
            while not self.take("]"):
                if listed:
                    self.expect(",", "or ']' in the list")
                listed.append(self.literal())
            return listed
        if self.take("("):
            items: list[Any] = []
            single = False
            while not self.take(")"):
                if items:
                    self.expect(",", "or ')' in the tuple")
                    if self.take(")"):
                        single = len(items) == 1
                        break
                items.append(self.literal())
            if len(items) == 1 and not single:
                self.fail(token, "a one-element tuple is written (x,)")
            return tuple(items)
        if self.at("<"):
            return self.stored()
        if token.kind == "ident":
            words = {"true": True, "false": False, "none": None}
            if token.text in words:
                self.next()
                return words[token.text]
            if token.text in ("nan", "inf"):
                return float_value(self.float_text(), np.dtype(np.float64)).item()
        if self.at("-") and self.at("inf", 1):
            return float_value(self.float_text(), np.dtype(np.float64)).item()
        self.expected("a value (a number, string, list, array, true, false or none)")

    def number(self) -> int | float:
        token = self.next()
        if re.fullmatch(r"-?\d+", token.text):
            return int(token.text)
        if "x" in token.text:
            self.fail(token, "hexadecimal is only for a NaN's bits: nan(0x7ff8000000000001)")
        return float(token.text)

    def float_text(self) -> str:
        """The text of one float element: a number, ``inf``, ``-inf``, ``nan`` or ``nan(0xBITS)``."""
        token = self.peek()
        if self.take("-"):
            self.expect("inf", "after '-'")
            return "-inf"
        if self.take("inf"):
            return "inf"
        if self.take("nan"):
            if self.take("("):
                bits = self.next()
                if bits.kind != "number" or not bits.text.startswith("0x"):
                    self.expected("a NaN's bits (0x...)", bits)
                self.expect(")")
                return f"nan({bits.text})"
            return "nan"
        if token.kind != "number":
            self.expected("a number")
        self.next()
        return token.text

    def _bytes(self, token: _Token) -> bytes:
        text = self._text(token, token.text[2:-1])
        try:
            return text.encode("latin-1")
        except UnicodeEncodeError:
            self.fail(token, "bytes hold characters up to \\xff only")

    def array_or_scalar(self) -> Any:
        start = self.peek()
        dtype = self.dtype()
        if dtype is None:
            self.fail(start, "an array needs a known element type")
        if self.take(":"):
            return self.element(dtype)
        shape = self.shape()
        self.expect(":", "and the elements ('f32[2]:[1,2]')")
        self.expect("[", "to open the elements")
        flat: list[Any] = []
        while not self.take("]"):
            if flat:
                self.expect(",", "or ']' in the elements")
            flat.append(self.element(dtype))
        count = int(np.prod(shape, dtype=np.int64))
        if len(flat) != count:
            self.fail(start, f"an array of shape {list(shape)} has {count} elements, not {len(flat)}")
        if dtype.kind == "O":
            array = np.empty(count, dtype=object)
            for k, item in enumerate(flat):
                array[k] = item
        else:
            array = np.array(flat, dtype=dtype) if flat else np.zeros(0, dtype=dtype)
        return array.reshape(shape)

    def shape(self) -> tuple[int, ...]:
        self.expect("[", "to open the shape")
        dims: list[int] = []
        while not self.take("]"):
            if dims:
                self.expect(",", "or ']' in the shape")
            token = self.peek()
            dims.append(self.integer("a dimension (an array's shape is known)"))
            if dims[-1] < 0:
                self.fail(token, "a dimension is not negative")
        return tuple(dims)

    def element(self, dtype: np.dtype[Any]) -> Any:
        token = self.peek()
        if dtype.kind == "b":
            if self.take("true"):
                return np.True_
            if self.take("false"):
                return np.False_
            self.expected("true or false")
        if float_kind(dtype):
            return float_value(self.float_text(), dtype)
        if int_kind(dtype):
            value = self.integer("an integer")
            try:
                return np.array(value).astype(dtype)[()] if dtype.kind == "V" else dtype.type(value)
            except OverflowError:
                self.fail(token, f"{value} does not fit in {dtype.name}")
        if dtype.kind == "c":
            part = np.dtype(f"f{dtype.itemsize // 2}")
            self.expect("(", "to open a complex number (re, im)")
            real = float_value(self.float_text(), part)
            self.expect(",")
            imag = float_value(self.float_text(), part)
            self.expect(")")
            pair = np.zeros((), dtype=dtype)
            pair.real, pair.imag = real, imag
            return pair[()]
        if dtype.kind == "U":
            return self.string("a string")
        if dtype.kind == "S":
            if token.kind != "bytes":
                self.expected("bytes (b\"...\")")
            self.next()
            return self._bytes(token)
        if dtype.kind == "O":
            return self.literal()
        self.fail(token, f"arrays of {dtype.name} are kept in the constants store, not written inline")

    def stored(self) -> np.ndarray:
        start = self.next()
        if self.at("opaque") and self.peek(1).kind == "string":
            self.fail(start, f"an attribute of type {self.peek(1).text} has no text form; it cannot be read back")
        dtype = self.dtype()
        shape = self.shape()
        self.expect("#", "and the constant's key")
        key_token = self.peek()
        key = str(self.integer("the constant's key (a number)"))
        self.expect(">", "to close the constant")
        if self.constants is None or key not in self.constants:
            self.fail(key_token, f"constant #{key} is not among the constants given to the parser")
        if key not in self.loaded:  # an .npz hands out a new array on every read: share one
            self.loaded[key] = np.asarray(self.constants[key])
        array = self.loaded[key]
        if array.dtype != dtype or array.shape != shape:
            self.fail(start, f"constant #{key} is {array.dtype}{list(array.shape)}, the text says "
                             f"{dtype}{list(shape)}")
        return array


__all__ = ["IRSyntaxError", "parse", "parse_model"]
