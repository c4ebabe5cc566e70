"""Weights of products held as TensorRT stores them once: ``[out, in]``, read transposed.

A decoder reads each weight twice, in the prompt's pass before its loop (``[P, K] @ W``) and in the loop's
step (``[1, K] @ W``). TensorRT-RTX stores a ``[K, N]`` constant read by both once per product (each wants
its own layout); it stores it once when it is held ``[N, K]`` and both products read it with
``MatrixOperation.TRANSPOSE`` (the ``nn.Linear`` / ``Gemm(transB=1)`` layout), measured by
``benchmarks/weight_storage.py``. So a MatMul whose right operand is a 2-D constant ``W`` reads
``Transpose(Wᵀ)`` instead, ``Wᵀ`` a constant, which the backend's MatMul converter reads with
``MatrixOperation.TRANSPOSE`` (the Transpose makes no layer); a Gemm reads ``Wᵀ`` with ``transB=1``.
A quantized weight (a DequantizeLinear of a 2-D constant, per tensor, per channel along its output axis 1 or
per block along its input axis 0) is transposed under its DequantizeLinear, the scales' axis moved along.

A weight is transposed once for all its readers, and only when every reader is such a product: a constant
also read some other way would be stored in both layouts. A batch of matrices (a 3-D constant) is left as
it is. The pass runs last, after every folding: constant folding would compute the Transpose of a constant
back into the ``[K, N]`` constant.

A tied embedding table ``T [V, D]`` (read by a Gather on axis 0 and, as ``[out, in]``, by a product: logits
``= h · Tᵀ``) is stored twice by TensorRT-RTX when ``V`` is odd: the product pads its weight to even rows, so
its copy is not the Gather's table (``weight_storage.py`` Part D; GPT-2 small tied, engine / weights 1.505).
So, after the transposition above (a folded ``Tᵀ`` held transposed again is ``T``'s twin: equal values), every
reader reads one ``[V + 1, D]`` constant with a zero last row, each product's result is sliced back to ``V``
columns, and a Gather's indices that may be negative are wrapped by ``V`` (ONNX counts ``-1`` as row ``V - 1``,
the padded table as its zero row): stored once (``decoder_weights.py --tied``: 1.195). A table any other
reader reads, or a Gemm adding a bias of ``V`` columns, is left as it is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.bounds import Bounder
from loopc.ir.builder import Builder
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr

#: The products whose right operand (slot 1) is a weight this pass lays out.
PRODUCTS = ("MatMul", "Gemm")


class WeightLayout:
    name = "weight-layout"

    def __call__(self, graph: Graph) -> PassResult:
        looked: set[Value] = set()
        moved = 0
        for _, node in list(graph.find(*PRODUCTS)):
            weight = _weight(node)
            if weight is None or weight in looked or weight.producer is None or weight.producer.graph is None:
                continue
            looked.add(weight)
            if _transposable(weight):
                _transpose(weight)
                moved += 1
        padded = sum(_pad(table) for table in _odd_tables(graph))
        stats = {name: count for name, count in (("weights", moved), ("padded tables", padded)) if count}
        return PassResult(graph, bool(stats), stats)


def _weight(node: Node) -> Value | None:
    """The constant a product's right operand is, directly or under a DequantizeLinear; None when it is
    computed, or already read transposed (a Gemm with ``transB=1``)."""
    b = node.input(1)
    if b is None or b.producer is None or (node.op == "Gemm" and int(attr(node, "transB"))):
        return None
    if b.producer.op == "DequantizeLinear":
        b = b.producer.inputs[0]
    if b is None or constant_value(b) is None:
        return None
    rank = np.ndim(constant_value(b))
    if rank > 2:
        return declined(f"its weight {b.name!r} is a {rank}-D constant (a batch of matrices): it stays as stored",
                        at=node)
    return b if rank == 2 else None


def _product_reader(user: Node | Graph, slot: int) -> bool:
    """Whether a read is the right operand of a product that reads it as stored."""
    return (isinstance(user, Node) and user.op in PRODUCTS and slot == 1
            and not (user.op == "Gemm" and int(attr(user, "transB"))))


def _products(value: Value) -> list[Node]:
    return [user for user, slot in value.uses() if isinstance(user, Node) and _product_reader(user, slot)]


def _transposable(weight: Value) -> bool:
    """Whether every reader of ``weight`` is a product (through a DequantizeLinear this pass can move); records
    why not, at each product that reads it."""
    reason = _obstacle(weight)
    if reason is None:
        return True
    quantized = [u for u, _ in weight.uses() if isinstance(u, Node) and u.op == "DequantizeLinear"]
    for product in [*_products(weight), *(p for dq in quantized for p in _products(dq.outputs[0]))]:
        declined(f"its weight {weight.name!r} stays [in, out]: {reason}", at=product)
    return False


def _obstacle(weight: Value) -> str | None:
    """Why ``weight`` cannot be transposed for all its readers, or None."""
    for user, slot in weight.uses():
        if _product_reader(user, slot):
            continue
        if isinstance(user, Node) and user.op == "DequantizeLinear" and slot == 0:
            reason = _dequantize_obstacle(user)
            if reason is not None:
                return reason
            continue
        return f"{_reader(user)} reads it too, as it is stored (held both ways, it would be stored twice)"
    return None


def _dequantize_obstacle(dq: Node) -> str | None:
    """Why a DequantizeLinear of a weight cannot be moved onto the transposed weight, or None."""
    if _scales(dq) is None:
        block, axis = int(attr(dq, "block_size")), int(attr(dq, "axis")) % 2
        how = f"per block along axis {axis}" if block else f"per channel along axis {axis}"
        return (f"{dq.describe()} scales it {how}, or by scales of unknown shape or not constants (moved are "
                "weights scaled per tensor, per output channel (axis 1) and per block of the input axis 0, with "
                "constant block scales)")
    for user, slot in dq.outputs[0].uses():
        if not _product_reader(user, slot):
            return f"{_reader(user)} reads its dequantized values too (held both ways, it would be stored twice)"
    return None


def _reader(user: Node | Graph) -> str:
    return user.describe() if isinstance(user, Node) else f"graph {user.name!r} (as an output)"


def _scales(dq: Node) -> str | None:
    """How a DequantizeLinear of a 2-D weight scales it: ``"tensor"``, ``"channel"`` (along axis 1, the output
    axis) or ``"block"`` (along axis 0, the input axis, its scales constants); None for any other layout."""
    scale = dq.input(1)
    shape = scale.shape if scale is not None else None
    dims = [d for d in shape if isinstance(d, int)] if shape is not None else []
    if shape is None or len(dims) != len(shape):
        return None
    block = int(attr(dq, "block_size"))
    axis = int(attr(dq, "axis")) % 2
    if not block and math.prod(dims) == 1:
        return "tensor"
    if not block and len(dims) == 1 and axis == 1:
        return "channel"
    zero = dq.input(2)
    constants = constant_value(scale) is not None and (zero is None or constant_value(zero) is not None)
    return "block" if block and axis == 0 and len(dims) == 2 and constants else None


def _transpose(weight: Value) -> None:
    """Hold ``weight`` transposed and make every reader read it so (see the module docstring)."""
    producer = weight.producer
    assert producer is not None and producer.graph is not None
    reader = next(iter(_products(weight)), producer)  # whose origin the copy carries (an initializer has none)
    flipped = _constant_after(producer, f"{weight.name}_t", np.asarray(constant_value(weight)).T, reader.origin)
    for user, slot in weight.uses():
        if isinstance(user, Node) and user.op == "DequantizeLinear" and slot == 0:
            _move_dequantize(user, flipped)
    _read_transposed(_products(weight), flipped)
    _remove_if_unread(producer)


def _constant_after(anchor: Node, name: str, array: np.ndarray, origin: str) -> Value:
    """A Constant of ``array`` named ``name``, just after ``anchor`` in its graph."""
    assert anchor.graph is not None
    made: list[Node] = []
    value = Builder(anchor.graph, made, origin=origin).const(np.ascontiguousarray(array), name=name)
    anchor.graph.insert_after(anchor, made)
    return value


def _move_dequantize(dq: Node, flipped: Value) -> None:
    """Replace ``dq`` by a DequantizeLinear of the transposed weight ``flipped``, its scales' axis moved along."""
    graph = dq.graph
    assert graph is not None
    given = [v for v in dq.inputs[1:] if v is not None]
    scale, zero = dq.input(1), dq.input(2)
    attrs = dict(dq.attrs)
    how = _scales(dq)
    made: list[Node] = []
    b = Builder(graph, made, origin=dq.origin)
    if how == "channel":
        attrs["axis"] = 0
    elif how == "block":
        attrs["axis"] = 1
        scale, zero = (None if v is None else _transposed_constant(v, b) for v in (scale, zero))
    old = dq.outputs[0]
    out = b.op("DequantizeLinear", [flipped, scale, *([zero] if len(dq.inputs) > 2 else [])], attrs,
               name=f"{old.name}_t", dtype=old.dtype,
               shape=tuple(reversed(old.shape)) if old.shape is not None else None)
    graph.insert_before(dq, made)
    _read_transposed(_products(old), out)
    graph.remove(dq)
    for value in given:  # block scales were copied transposed: the originals may be unread now
        _remove_if_unread(value.producer)


def _transposed_constant(value: Value, b: Builder) -> Value:
    """A new Constant holding ``value``'s array transposed (a block scale or zero point), made by ``b``."""
    return b.const(np.ascontiguousarray(np.asarray(constant_value(value)).T), name=f"{value.name}_t")


def _read_transposed(products: Iterable[Node], flipped: Value) -> None:
    """Make each product read ``flipped`` (``[N, K]``) as its right operand: a Gemm with ``transB=1``, a MatMul
    through a Transpose made once in each graph that holds such readers, before the first of them (in the
    reader's own graph, so the backend sees the Transpose beside the product and reads ``flipped``
    transposed in place of shuffling it)."""
    by_graph: dict[Graph, list[Node]] = {}
    for product in products:
        if product.op == "Gemm":
            product.set_input(1, flipped)
            product.set_attr("transB", 1)
        else:
            assert product.graph is not None
            by_graph.setdefault(product.graph, []).append(product)
    for graph, readers in by_graph.items():
        first = _first(graph, readers)
        made: list[Node] = []
        shape = tuple(reversed(flipped.shape)) if flipped.shape is not None else None
        read = Builder(graph, made).op("Transpose", [flipped], {"perm": [1, 0]}, name=f"{flipped.name}_read",
                                       dtype=flipped.dtype, shape=shape)
        graph.insert_before(first, made)
        for product in readers:
            product.set_input(1, read)


def _first(graph: Graph, nodes: list[Node]) -> Node:
    wanted = set(nodes)
    return next(node for node in graph.nodes if node in wanted)


def _remove_if_unread(node: Node | None) -> None:
    """Drop ``node`` once nothing reads it (the constants a transposed copy replaced)."""
    if node is not None and node.graph is not None and not any(v.is_used() for v in node.outputs):
        node.graph.remove(node)


# --- tied tables of odd rows ----------------------------------------------------------------------------

def _odd_tables(graph: Graph) -> list[Value]:
    """The 2-D float constants of odd rows that a Gather reads as its data, each once."""
    found: dict[Value, None] = {}
    for _, node in graph.find("Gather"):
        table = node.input(0)
        array = constant_value(table)
        if (table is not None and array is not None and np.ndim(array) == 2 and np.asarray(array).dtype.kind == "f"
                and len(array) % 2):
            found.setdefault(table, None)
    return list(found)


def _pad(table: Value) -> bool:
    """Make every reader of ``table`` (and of its twins) read one padded copy (see the module docstring)."""
    rows = len(constant_value(table))
    gathers, products, reads, twins = _table_readers(table)
    if not products:
        return False
    reason = _pad_obstacle(table, twins)
    if reason is not None:
        for node in [*gathers, *products]:
            declined(f"the table {table.name!r} keeps its {rows} rows (odd; TensorRT stores it twice): {reason}",
                     at=node)
        return False
    producer = table.producer
    assert producer is not None
    array = np.asarray(constant_value(table))
    rows_padded = np.concatenate([array, np.zeros_like(array[:1])])
    padded = _constant_after(producer, f"{table.name}_padded", rows_padded, products[0].origin)
    for gather in gathers:
        gather.set_input(1, _wrapped(gather, rows))
        gather.set_input(0, padded)
    _read_transposed(products, padded)
    for product in products:
        _slice_back(product, rows)
    for read in reads:
        _remove_if_unread(read)
    for value in (table, *twins):
        _remove_if_unread(value.producer)
    return True


def _table_readers(table: Value) -> tuple[list[Node], list[Node], list[Node], list[Value]]:
    """The Gathers reading ``table`` on axis 0, the products reading it (or a twin) as ``[out, in]``, the
    Transposes those read through, and the twins."""
    gathers = [u for u, slot in table.uses() if isinstance(u, Node) and u.op == "Gather" and slot == 0
               and int(attr(u, "axis")) % 2 == 0]
    products: list[Node] = []
    reads: list[Node] = []
    twins = _twins(table)
    for value in (table, *twins):
        for user, slot in value.uses():
            if isinstance(user, Node) and _read_as_out_in(user, slot):
                if user.op == "Transpose":
                    reads.append(user)
                    products.extend(u for u, _ in user.outputs[0].uses() if isinstance(u, Node))
                else:
                    products.append(user)
    return gathers, list(dict.fromkeys(products)), reads, twins


def _read_as_out_in(user: Node, slot: int) -> bool:
    """Whether ``user`` reads a table as a product's ``[out, in]`` weight: a Gemm with ``transB=1``, or a
    Transpose that only products read as their right operand."""
    if user.op == "Gemm":
        return slot == 1 and bool(int(attr(user, "transB")))
    return (user.op == "Transpose" and list(attr(user, "perm")) == [1, 0] and user.outputs[0].is_used()
            and all(_product_reader(u, s) for u, s in user.outputs[0].uses()))


def _twins(table: Value) -> list[Value]:
    """Other constants of ``table``'s graph holding its values that only products read as ``[out, in]`` (a
    ``Tᵀ`` that folding computed, held transposed again above): one table, stored once."""
    producer = table.producer
    assert producer is not None and producer.graph is not None
    array = np.asarray(constant_value(table))
    found = []
    for node in producer.graph.nodes:
        if node is producer or node.op != "Constant" or len(node.outputs) != 1:
            continue
        value = node.outputs[0]
        other = constant_value(value)
        if (np.shape(other) == array.shape and np.asarray(other).dtype == array.dtype and value.is_used()
                and all(isinstance(u, Node) and _read_as_out_in(u, s) for u, s in value.uses())
                and np.array_equal(other, array)):
            found.append(value)
    return found


def _pad_obstacle(table: Value, twins: list[Value]) -> str | None:
    """Why the readers of ``table`` cannot all read it padded, or None."""
    for user, slot in [use for value in (table, *twins) for use in value.uses()]:
        if not isinstance(user, Node):
            return f"{_reader(user)} reads it too"
        if user.op == "Gather" and slot == 0 and int(attr(user, "axis")) % 2 == 0:
            indices = user.input(1)
            if indices is None or indices.dtype is None or indices.dtype.kind not in "iu":
                return f"{user.describe()} reads it by indices of unknown type (they could not be wrapped)"
            continue
        if not _read_as_out_in(user, slot):
            return f"{_reader(user)} reads it too, as it is stored (it would be stored both ways)"
        products = [user] if user.op == "Gemm" else [u for u, _ in user.outputs[0].uses() if isinstance(u, Node)]
        for product in products:
            bias = product.input(2) if product.op == "Gemm" else None
            if bias is not None and (bias.shape is None or (len(bias.shape) and bias.shape[-1] != 1)):
                return f"{product.describe()} adds a bias of as many columns (it would need padding too)"
    return None


def _wrapped(gather: Node, rows: int) -> Value:
    """``gather``'s indices, counted from the front: as they are when provably not negative, else a constant
    wrapped here or ``Where(i < 0, i + rows, i)`` computed before ``gather``."""
    indices = gather.input(1)
    assert indices is not None and indices.dtype is not None and gather.graph is not None
    span = Bounder().interval(indices)
    if span is not None and span[0] >= 0:
        return indices
    made: list[Node] = []
    b = Builder(gather.graph, made, origin=gather.origin)
    array = constant_value(indices)
    if array is not None:
        array = np.asarray(array)
        wrapped = b.const(np.where(array < 0, array + rows, array).astype(array.dtype),
                          name=f"{indices.name}_wrapped")
    else:
        kind, shape = indices.dtype, indices.shape
        negative = b.op("Less", [indices, b.const(0, kind, name=f"{indices.name}_zero")],
                        name=f"{indices.name}_negative", dtype=np.dtype(bool), shape=shape)
        shifted = b.op("Add", [indices, b.const(rows, kind, name=f"{indices.name}_rows")],
                       name=f"{indices.name}_shifted", dtype=kind, shape=shape)
        wrapped = b.op("Where", [negative, shifted, indices], name=f"{indices.name}_wrapped", dtype=kind, shape=shape)
    gather.graph.insert_before(gather, made)
    return wrapped


def _slice_back(product: Node, rows: int) -> None:
    """``product`` now computes a padded result (its last axis ``rows + 1``): its readers read it sliced back."""
    graph = product.graph
    assert graph is not None
    result = product.outputs[0]
    shape = None if result.shape is None else (*result.shape[:-1], rows + 1)
    padded = Value(f"{result.name}_padded", result.dtype, shape)
    product.set_outputs([padded])
    made: list[Node] = []
    b = Builder(graph, made, origin=product.origin)
    bounds = [b.const([value], np.int64, name=f"{result.name}_{what}")
              for value, what in ((0, "start"), (rows, "end"), (-1, "axis"))]
    b.op("Slice", [padded, *bounds], out=result)
    graph.insert_after(product, made)
