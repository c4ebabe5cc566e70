"""loopc's loop IR: SSA values and nodes, first-class loops and conditionals, a verifier, text."""

from loopc.ir.core import (Dim, Graph, Model, Node, NodeList, Shape, Use, Value, constant_int, constant_value, text_attr,
                           type_text)
from loopc.ir.loop import If, Loop, LoopIterator, LoopOutput, Recurrence, Role
from loopc.ir.parser import IRSyntaxError, parse, parse_model
from loopc.ir.printer import format_graph, format_loop, format_model
from loopc.ir.verify import VerificationError, verify, verify_target

__all__ = [
    "Dim", "Graph", "IRSyntaxError", "If", "Loop", "LoopIterator", "LoopOutput", "Model", "Node", "NodeList", "Recurrence", "Role",
    "Shape", "Use", "Value", "VerificationError", "constant_int", "constant_value", "format_graph", "format_loop", "format_model", "parse", "parse_model", "text_attr", "type_text", "verify", "verify_target",
]
