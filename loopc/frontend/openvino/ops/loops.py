"""``Loop-5`` and ``TensorIterator-1`` into :class:`loopc.ir.Loop`, role for role.

How each port_map entry maps (with the semantics OpenVINO's CPU plugin gives them, which the tests check):

* an input with ``axis`` is an iterator; ``part_size = |stride| = s > 1`` iterates chunks of ``s``
  (the source is reshaped to ``[..., n, s, ...]``); a negative stride iterates from the end;
* an input whose Parameter is a back edge's target is a recurrence (the input is its initial value);
* any other input is an invariant: the body reads the outer value itself;
* an output with ``axis`` is a concat (``reverse`` for a negative stride) output; OpenVINO
  concatenates on an existing axis, so the stacked result has that axis merged with the new one;
* an output without ``axis`` is the Result's value on the last trip: a back edge's source is its
  recurrence's final state (the initial value after zero trips, as OpenVINO's CPU plugin does);
  any other Result gets a recurrence of its own that starts at zeros, OpenVINO's zero-trip answer;
* Loop's ``current_iteration`` Parameter is the IR counter, ``execution_condition`` Result the next
  value of the condition recurrence; its trip count −1 (any negative) or INT64_MAX means unbounded.

Where OpenVINO's components disagree, loopc picks one reading and says so here:

* a Loop with sliced inputs runs at most as many trips as they have slices (OpenVINO's CPU plugin fails
  an assertion when the trip count is larger, and its reference implementation repeats the last slice);
* a TensorIterator without sliced inputs runs once, as OpenVINO's CPU plugin runs it; with concatenated
  outputs as well it is refused, since OpenVINO's shape inference then counts its trips from the outputs.

Only the slicing forms every OpenVINO component (spec, converters, CPU plugin) reads alike are accepted:
``start=0 end=-1 stride=s part_size=s`` and ``start=-1 end=0 stride=-s part_size=s``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from loopc.ir.builder import Builder
from loopc.frontend.onnx.loops import stacked
from loopc.frontend.openvino.importer import Op, translate_net
from loopc.frontend.openvino.reader import Layer, Net, PortMapEntry
from loopc.frontend.openvino.registry import translates
from loopc.frontend.openvino.weights import element_type, parse_shape
from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Recurrence, Value
from loopc.loop_rules import MAX_TRIPS
from loopc.ir.core import Shape
from loopc.ir.loop import OutputKind
from loopc.limits import check_constant

I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
INT64_MAX = 2**63 - 1
#: Carried shapes settle in one re-translation per dim that varies; more means they never do.
SHAPE_ROUNDS = 4


@translates("Loop", 5)
def loop(op: Op) -> list[Value]:
    return _LoopBuilder(op, is_loop=True).build()


@translates("TensorIterator", 1)
def tensor_iterator(op: Op) -> list[Value]:
    return _LoopBuilder(op, is_loop=False).build()


@dataclass
class _Ports:
    """The port_map checked against the layer and its body."""

    sliced: list[tuple[PortMapEntry, Value]] = field(default_factory=list)
    carried: dict[int, tuple[PortMapEntry, Value]] = field(default_factory=dict)  # by body Parameter id
    invariant: dict[int, Value] = field(default_factory=dict)  # by body Parameter id
    outputs: list[PortMapEntry] = field(default_factory=list)  # in output port order
    iteration: Layer | None = None
    condition: int | None = None  # body Result id
    back_edges: dict[int, int] = field(default_factory=dict)  # Parameter id -> Result id


class _LoopBuilder:
    def __init__(self, op: Op, is_loop: bool) -> None:
        self.op = op
        self.layer = op.layer
        self.is_loop = is_loop
        self.kind = "Loop" if is_loop else "TensorIterator"
        body = self.layer.bodies.get("body")
        if body is None:
            raise op.error(f"a {self.kind} needs a <body>")
        self.body: Net = body
        self.em: Builder = op.em

    # ------------------------------------------------------------------ port map

    def ports(self) -> _Ports:
        op, layer, body = self.op, self.layer, self.body
        first = 2 if self.is_loop else 0
        if len(layer.inputs) < first:
            raise op.error(f"a Loop takes a trip count and an execution condition first; it has "
                           f"{len(layer.inputs)} input(s)")
        op.check_input_ids()
        out_ids = [port.id for port in layer.outputs]
        if out_ids != sorted(out_ids):
            raise op.error(f"output port ids {out_ids} are not in increasing order; OpenVINO binds them by rank, "
                           f"loopc by id, so they must agree")
        port_map = layer.port_maps.get("port_map")
        if port_map is None:
            raise op.error(f"a {self.kind} needs a <port_map>")
        found = _Ports()
        params = {i for i, lay in body.layers.items() if lay.type == "Parameter"}
        results = {i for i, lay in body.layers.items() if lay.type == "Result"}
        seen_inputs: set[int] = set()
        mapped_params: set[int] = set()
        entries: list[tuple[PortMapEntry, Value]] = []
        for entry in port_map.inputs:
            if entry.internal_layer_id not in params:
                raise op.error(f"port_map input {_entry(entry)} names body layer {entry.internal_layer_id}, "
                               f"which is not a Parameter of the body")
            if entry.internal_layer_id in mapped_params:
                raise op.error(f"port_map maps body Parameter {entry.internal_layer_id} twice")
            mapped_params.add(entry.internal_layer_id)
            if entry.purpose == "current_iteration" and self.is_loop:
                if found.iteration is not None:
                    raise op.error("port_map has two current_iteration entries")
                found.iteration = body.layers[entry.internal_layer_id]
                continue
            if entry.purpose:
                raise op.error(f"port_map input {_entry(entry)} has purpose {entry.purpose!r}, which a "
                               f"{self.kind} input cannot have")
            if not first <= entry.external_port_id < len(layer.inputs):
                raise op.error(f"port_map input {_entry(entry)}: the layer has no input port "
                               f"{entry.external_port_id}" + (" (ports 0 and 1 are the trip count and execution "
                                                              "condition)" if self.is_loop else ""))
            if entry.external_port_id in seen_inputs:
                raise op.error(f"port_map maps input port {entry.external_port_id} twice")
            seen_inputs.add(entry.external_port_id)
            entries.append((entry, op.inputs[entry.external_port_id]))
        missing = [k for k in range(first, len(layer.inputs)) if k not in seen_inputs]
        if missing:
            raise op.error(f"input port(s) {missing} have no port_map entry")
        for source, target in layer.back_edges:
            if source not in results:
                raise op.error(f"back edge {source} -> {target}: body layer {source} is not a Result")
            if found.iteration is not None and target == found.iteration.id:
                raise op.error(f"back edge {source} -> {target}: body layer {target} is the current_iteration "
                               f"Parameter, which the loop counts itself; a back edge cannot feed it")
            if target not in params or target not in {e.internal_layer_id for e, _ in entries}:
                raise op.error(f"back edge {source} -> {target}: body layer {target} is not a Parameter with a "
                               f"port_map input (OpenVINO would silently drop this edge)")
            if target in found.back_edges:
                raise op.error(f"two back edges lead into body Parameter {target}")
            found.back_edges[target] = source
        for entry, value in entries:
            pid = entry.internal_layer_id
            if entry.axis is not None:
                if pid in found.back_edges:
                    raise op.error(f"port_map input {_entry(entry)} is sliced and also a back edge's target")
                found.sliced.append((entry, value))
            elif pid in found.back_edges:
                found.carried[pid] = (entry, value)
            else:
                found.invariant[pid] = value
        out_ports = {port.id for port in layer.outputs}
        seen_outputs: set[int] = set()
        by_port: dict[int, PortMapEntry] = {}
        for entry in port_map.outputs:
            if entry.internal_layer_id not in results:
                raise op.error(f"port_map output {_entry(entry)} names body layer {entry.internal_layer_id}, "
                               f"which is not a Result of the body")
            if entry.purpose == "execution_condition" and self.is_loop:
                if found.condition is not None:
                    raise op.error("port_map has two execution_condition entries")
                found.condition = entry.internal_layer_id
                continue
            if entry.purpose:
                raise op.error(f"port_map output {_entry(entry)} has purpose {entry.purpose!r}, which a "
                               f"{self.kind} output cannot have")
            if entry.external_port_id not in out_ports:
                raise op.error(f"port_map output {_entry(entry)}: the layer has no output port "
                               f"{entry.external_port_id}")
            if entry.external_port_id in seen_outputs:
                raise op.error(f"port_map maps output port {entry.external_port_id} twice")
            seen_outputs.add(entry.external_port_id)
            by_port[entry.external_port_id] = entry
        unmapped = [p.id for p in layer.outputs if p.id not in by_port]
        if unmapped:
            raise op.error(f"output port(s) {unmapped} have no port_map entry")
        found.outputs = [by_port[p.id] for p in layer.outputs]
        if self.is_loop and found.condition is None:
            raise op.error('a Loop body needs a Result with purpose="execution_condition" in the port_map')
        return found

    # ------------------------------------------------------------------ build

    def build(self) -> list[Value]:
        ports = self.ports()
        em = self.em
        iterators, chunks = self.iterators(ports)
        trip = self.trip_count(ports, iterators, chunks)
        cond_init = self.condition_init() if self.is_loop else None

        shapes: dict[int, Shape | None] = {pid: value.shape for pid, (_, value) in ports.carried.items()}
        for _ in range(SHAPE_ROUNDS):
            body, states, counter, cond_param, results = self.translate_body(ports, iterators, cond_init, shapes)
            settled = {pid: _carried(states[pid].shape, results[ports.back_edges[pid]].shape) for pid in states}
            if settled == {pid: states[pid].shape for pid in states}:
                break
            _discard(body)
            shapes = settled
        else:
            raise self.op.unsupported("the shapes of its carried values do not settle")

        recurrences: list[Recurrence] = []
        condition = None
        if cond_param is not None and cond_init is not None:
            assert ports.condition is not None  # ports() refuses a Loop without an execution_condition Result
            recurrences.append(Recurrence(cond_param, cond_init, self.scalar_bool(body, results[ports.condition])))
            condition = cond_param
        for pid, state in states.items():
            recurrences.append(Recurrence(state, ports.carried[pid][1], results[ports.back_edges[pid]]))
        by_result = {rid: pid for pid, rid in ports.back_edges.items()}
        loop_outputs: list[LoopOutput] = []
        finals: list[tuple[PortMapEntry, Value, Value]] = []  # entry, loop result, body value
        length = _static(trip) if condition is None else None
        for entry in ports.outputs:
            value = results[entry.internal_layer_id]
            if entry.axis is None:
                carrier = by_result.get(entry.internal_layer_id)
                state = states[carrier] if carrier is not None else self.zero_start(body, value, recurrences)
                result = em.value("last", state.dtype, state.shape)
                loop_outputs.append(LoopOutput("last", state, result))
            else:
                axis = self.output_axis(entry, value)
                kind: OutputKind = "reverse" if entry.stride < 0 else "concat"
                result = em.value("stacked", value.dtype, stacked(value.shape, axis, length))
                loop_outputs.append(LoopOutput(kind, value, result, axis))
            finals.append((entry, result, value))
        counter_used = counter is not None
        loop_node = Loop(body, trip_count=trip, condition=condition, counter=counter if counter_used else None,
                         iterators=iterators, recurrences=recurrences, loop_outputs=loop_outputs,
                         name=em.name("loop"), origin=em.origin)
        em.place(loop_node)
        return [self.merge(entry, result, value) if entry.axis is not None else result
                for entry, result, value in finals]

    def translate_body(self, ports: _Ports, iterators: list[LoopIterator], cond_init: Value | None,
                       shapes: dict[int, Shape | None]) -> tuple[Graph, dict[int, Value], Value | None,
                                                                  Value | None, dict[int, Value]]:
        em = self.em
        body = Graph(em.name("body"))
        inner = em.into(body)
        bound: dict[int, Value] = dict(ports.invariant)
        for k, ((entry, _), it) in enumerate(zip(ports.sliced, iterators)):
            param = em.value("slice", it.param.dtype, it.param.shape)
            iterators[k] = replace(it, param=param)
            bound[entry.internal_layer_id] = param
        states: dict[int, Value] = {}
        for pid, (_, init) in ports.carried.items():
            states[pid] = em.value(self.body.layers[pid].name or "state", init.dtype, shapes.get(pid))
            bound[pid] = states[pid]
        counter = None
        if ports.iteration is not None:
            counter = em.value("iteration", I64, ())
            bound[ports.iteration.id] = self.iteration_value(inner, counter, ports.iteration)
        cond_param = em.value("condition", BOOL, ()) if cond_init is not None else None
        results = {layer.id: value for layer, value in translate_net(self.op.ctx, self.body, body, bound)}
        return body, states, counter, cond_param, results

    # ------------------------------------------------------------------ roles

    def iterators(self, ports: _Ports) -> tuple[list[LoopIterator], list[Value]]:
        """One iterator per sliced input; also each input's number of chunks (int64 scalars)."""
        iterators, chunks = [], []
        for entry, value in ports.sliced:
            self.check_slicing(entry, "input")
            assert entry.axis is not None  # ports() files only entries with an axis as sliced
            rank = self.op_rank(value, entry)
            axis = entry.axis if entry.axis >= 0 else entry.axis + rank
            if not 0 <= axis < rank:
                raise self.op.error(f"port_map input {_entry(entry)}: axis {entry.axis} is out of range for "
                                    f"rank {rank}")
            # OpenVINO's slice keeps the axis (length |stride|): iterate over chunks of [.., n, s, ..].
            step = abs(entry.stride)
            source = (self.em.op("Unsqueeze", [value, self.em.const([axis + 1], np.int64)]) if step == 1
                      else self.split_axis(value, axis, step))
            shape = None if source.shape is None else source.shape[:axis] + source.shape[axis + 1:]
            iterators.append(LoopIterator(Value("slice", value.dtype, shape), source, axis, entry.stride < 0))
            chunks.append(self.em.dim(source, axis))
        return iterators, chunks

    def check_slicing(self, entry: PortMapEntry, role: str) -> None:
        canonical = (entry.start, entry.end) == ((0, -1) if entry.stride > 0 else (-1, 0))
        if entry.stride == 0 or not canonical or entry.part_size != abs(entry.stride):
            raise self.op.unsupported(
                f"port_map {role} {_entry(entry)}: start={entry.start} end={entry.end} stride={entry.stride} "
                f"part_size={entry.part_size} is non-canonical slicing, which OpenVINO's own components read "
                f"differently; loopc takes start=0 end=-1 stride=s part_size=s, or start=-1 end=0 stride=-s "
                f"part_size=s")

    def trip_count(self, ports: _Ports, iterators: list[LoopIterator], chunks: list[Value]) -> Value | None:
        em, op = self.em, self.op
        sizes = {_static(c) for c in chunks}
        if len(sizes) > 1 and None not in sizes:
            raise op.error(f"its sliced inputs have different numbers of slices "
                           f"({sorted(s for s in sizes if s is not None)})")
        if not self.is_loop:
            if iterators:
                return chunks[0]
            if any(entry.axis is not None for entry in ports.outputs):
                raise op.unsupported("a TensorIterator without sliced inputs but with concatenated outputs has "
                                     "no trip count OpenVINO's components agree on")
            return em.const(1, np.int64)
        given = op.inputs[0]
        if given.dtype is not None and given.dtype.kind not in "iu":
            raise op.error(f"trip count {given.name!r} must be an integer tensor, not {given.dtype}")
        _one_element(op, given, "trip count")
        constant = op.constant(0)
        trip: Value | None
        if constant is not None:
            count = int(np.asarray(constant).reshape(-1)[0])
            if count < 0 or count == INT64_MAX:
                trip = None  # -1 (any negative) and TorchScript's INT64_MAX mean "no bound"
            elif count > MAX_TRIPS:
                raise op.error(f"trip count {count} does not fit the int32 trip limit TensorRT counts with "
                               f"(at most {MAX_TRIPS})")
            else:
                trip = em.const(count, np.int64)
        else:
            trip = self.runtime_trip(given)
        for chunk_count in chunks:
            trip = chunk_count if trip is None else em.op("Min", [trip, chunk_count])
        if iterators and trip is not None:
            # TensorRT's iterators must be exactly as long as the loop runs
            iterators[:] = [replace(it, source=self.truncate(it, trip)) for it in iterators]
        return trip

    def runtime_trip(self, trip: Value) -> Value:
        """A run-time trip count as int64 scalar; a negative one means unbounded, which is MAX_TRIPS trips."""
        em = self.em
        trip = em.op("Reshape", [trip, em.const([], np.int64)])
        trip = em.op("Cast", [trip], {"to": 7}) if trip.dtype != I64 else trip
        unbounded = em.op("Less", [trip, em.const(0, np.int64)])
        capped = em.op("Min", [trip, em.const(MAX_TRIPS, np.int64)])
        return em.op("Where", [unbounded, em.const(MAX_TRIPS, np.int64), capped])

    def truncate(self, it: LoopIterator, trip: Value) -> Value:
        """The iterator's source cut to ``trip`` slices (the last ones when it iterates backwards)."""
        em = self.em
        if _static(trip) is not None and it.source.shape is not None and it.source.shape[it.axis] == _static(trip):
            return it.source
        trip_1d = em.op("Reshape", [trip, em.const([1], np.int64)])
        axes = em.const([it.axis], np.int64)
        if it.reverse:
            return em.op("Slice", [it.source, em.op("Neg", [trip_1d]), em.const([INT64_MAX], np.int64), axes])
        return em.op("Slice", [it.source, em.const([0], np.int64), trip_1d, axes])

    def condition_init(self) -> Value:
        op = self.op
        cond = op.inputs[1]
        if cond.dtype is not None and cond.dtype.kind != "b":
            raise op.error(f"execution condition {cond.name!r} must be a boolean tensor, not {cond.dtype}")
        _one_element(op, cond, "execution condition")
        return self.em.op("Reshape", [cond, self.em.const([], np.int64)]) if cond.shape != () else cond

    def scalar_bool(self, body: Graph, value: Value) -> Value:
        op = self.op
        if value.dtype is not None and value.dtype.kind != "b":
            raise op.error(f"the body's execution_condition Result must be boolean, not {value.dtype}")
        _one_element(op, value, "body execution_condition")
        return value if value.shape == () else self.em.into(body).op("Reshape", [value, self.em.const([], np.int64)])

    def iteration_value(self, inner: Builder, counter: Value, param: Layer) -> Value:
        """The IR counter (int64 scalar) as the current_iteration Parameter declares it (i32/i64, scalar/[1])."""
        what = f"current_iteration Parameter {param.id} {param.name!r}"
        dtype = element_type(param.data.get("element_type", "i64"), f"{self.op.what}: {what}")
        shape = parse_shape(param.data.get("shape", ""), f"{self.op.what}: {what}")
        if dtype.kind not in "iu" or shape not in ((), (1,)):
            raise self.op.error(f"{what} must be an i32 or i64 scalar or [1], not {dtype}{list(shape)}")
        value = counter
        if dtype != I64:
            from onnx import helper

            value = inner.op("Cast", [value], {"to": helper.np_dtype_to_tensor_dtype(dtype)})
        if shape == (1,):
            value = inner.op("Reshape", [value, inner.const([1], np.int64)])
        return value

    def zero_start(self, body: Graph, value: Value, recurrences: list[Recurrence]) -> Value:
        """A recurrence carrying ``value`` from trip to trip, starting at zeros: a Result's last value that
        is not carried, with OpenVINO's answer (zeros) when the loop runs no trip."""
        if value.shape is None or not all(isinstance(d, int) for d in value.shape):
            raise self.op.unsupported(
                f"output {value.name!r} is the last value of a Result that no back edge carries, and its shape "
                f"{value.shape} is not static; loopc needs that shape for the zero-trip value")
        check_constant(value.shape, value.dtype, f"{self.op.what}: the zero-trip value of output {value.name!r}")
        zeros = self.em.const(np.zeros(value.shape, dtype=value.dtype))
        state = self.em.value("last", value.dtype, value.shape)
        recurrences.append(Recurrence(state, zeros, value))
        return state

    def output_axis(self, entry: PortMapEntry, value: Value) -> int:
        assert entry.axis is not None  # called for concatenated outputs only
        self.check_slicing(entry, "output")
        if value.shape is None:
            raise self.op.unsupported(f"port_map output {_entry(entry)}: the rank of the body value is unknown")
        rank = len(value.shape)
        axis = entry.axis + rank if entry.axis < 0 else entry.axis
        if not 0 <= axis < rank:
            raise self.op.error(f"port_map output {_entry(entry)}: axis {entry.axis} is out of range for rank {rank}")
        size = value.shape[axis]
        if isinstance(size, int) and size != abs(entry.stride):
            raise self.op.error(f"port_map output {_entry(entry)}: the body value {value.name!r} is {size} long "
                                f"on axis {axis}, but the output takes chunks of |stride| = {abs(entry.stride)}")
        return axis

    def merge(self, entry: PortMapEntry, stacked_value: Value, piece: Value) -> Value:
        """Concatenate the stacked chunks along the port's axis, as OpenVINO does (merge axis, axis+1)."""
        assert entry.axis is not None and piece.shape is not None  # checked by output_axis
        axis = entry.axis + len(piece.shape) if entry.axis < 0 else entry.axis
        target = self.shape_with(stacked_value, axis, 2, [-1], piece)
        return self.em.op("Reshape", [stacked_value, target])

    def split_axis(self, value: Value, axis: int, step: int) -> Value:
        """``value`` reshaped so axis ``axis`` becomes (n, step): chunks of ``step`` to iterate over."""
        target = self.shape_with(value, axis, 1, [-1, step], None)
        return self.em.op("Reshape", [value, target])

    def shape_with(self, value: Value, axis: int, width: int, middle: list[int], piece: Value | None) -> Value:
        """``value``'s shape with dims ``[axis, axis + width)`` replaced by ``middle`` (constant when static)."""
        em = self.em
        shape = value.shape
        if shape is not None and all(isinstance(d, int) for i, d in enumerate(shape) if not axis <= i < axis + width):
            head_dims = [d for d in shape[:axis] if isinstance(d, int)]  # all of them, as just checked
            tail_dims = [d for d in shape[axis + width:] if isinstance(d, int)]
            dims = head_dims + middle + tail_dims
            return em.const(dims, np.int64)
        rank = len(shape) if shape is not None else self.op.rank(0)
        whole = em.op("Shape", [value])
        head = em.op("Slice", [whole, em.const([0], np.int64), em.const([axis], np.int64)])
        tail = em.op("Slice", [whole, em.const([axis + width], np.int64), em.const([rank], np.int64)])
        return em.op("Concat", [head, em.const(middle, np.int64), tail], {"axis": 0})

    def op_rank(self, value: Value, entry: PortMapEntry) -> int:
        if value.shape is None:
            raise self.op.unsupported(f"port_map input {_entry(entry)}: the rank of {value.name!r} is unknown")
        return len(value.shape)


def _carried(state: Shape | None, nxt: Shape | None) -> Shape | None:
    """A carried value's shape on every trip: a dim stays only where the next value keeps it (a value
    that grows, like ``torch.cat`` onto itself, has that dim unknown)."""
    if state is None or nxt is None:
        return state  # nothing known of the next value: keep what the initial value says
    if len(state) != len(nxt):
        return None
    return tuple(a if isinstance(a, int) and a == b else None for a, b in zip(state, nxt))


def _discard(body: Graph) -> None:
    """Forget a body translated with shapes that did not settle: its reads of outer values (which
    record themselves as uses of those values) must not outlive it. Last node first, so that each
    node is unread when it goes."""
    for node in reversed(list(body.nodes)):
        body.remove(node)


def _entry(entry: PortMapEntry) -> str:
    return f"(external_port_id={entry.external_port_id}, internal_layer_id={entry.internal_layer_id})"


def _one_element(op: Op, value: Value, role: str) -> None:
    if value.shape is not None and (len(value.shape) > 1 or any(d != 1 for d in value.shape)):
        raise op.error(f"{role} {value.name!r} must be a scalar or hold one element, not shape {list(value.shape)}")


def _static(value: Value | None) -> int | None:
    from loopc.frontend.openvino.importer import static_value

    array = static_value(value)
    return int(np.asarray(array).reshape(-1)[0]) if array is not None and np.asarray(array).size == 1 else None


__all__: list[Any] = []
