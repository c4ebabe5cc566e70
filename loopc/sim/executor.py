"""Demand-driven evaluation of a read-back network, with TensorRT's loop semantics.

Values live in *frames*: one for the network and one per loop iteration, each pointing to the
frame it runs in. A tensor is looked up in the frame of its scope (see :mod:`loopc.trt.read_back`),
so loop-invariant values are computed once and shared by every iteration. Evaluation is lazy,
which is exactly what an if-conditional means: only the branch that is taken is computed.

A loop runs when one of its outputs is first demanded, following the formal semantics of
TensorRT's loops: for iteration ``i`` the recurrences hold ``init`` (i = 0) or the previous
iteration's next value; the loop stops at the first ``i`` that reaches the kCOUNT limit or whose
kWHILE input is false; kLAST_VALUE outputs are the recurrences' values after the last trip, and
kCONCATENATE / kREVERSE outputs stack each trip's value and pad to their length input::

    rec = [init for each recurrence]
    for i in count():
        if i == trip_count or not while_input(i): break
        scans.append(scan_input(i)); rec = next_value(i)

A layer computes in its network's types as TensorRT's kernels do: a half (float16, bfloat16) input is read as
it is stored, the arithmetic runs in float32 (products and sums accumulate in float32, as TensorRT's half
kernels do), and the result is rounded to the layer's output type. So ``loopc run --fp16`` shows the rounding
of every stored activation and weight, not NumPy's own half arithmetic (which sums bfloat16 in bfloat16).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import ml_dtypes
import numpy as np

from loopc.errors import InternalError, LimitError, SimulationError
from loopc.limits import check_constant
from loopc.loop_rules import DEFAULT_MAX_ITERATIONS, endless, no_trips, padded
from loopc.sim.network import Layer, NetworkLoop, Network, Tensor
from loopc.sim.registry import Kernel, factory_for, rule_for


#: The half types, which a kernel reads widened to float32.
HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))

#: Told each layer the executor computes, with its input values (e.g. to count work as run).
Observer = Callable[[Layer, list[Any]], None]


class Frame:
    """Values of one scope: the network (``scope is None``) or one iteration of a loop."""

    __slots__ = ("scope", "parent", "values", "index")

    def __init__(self, scope: NetworkLoop | None, parent: Frame | None, values: dict[str, np.ndarray], index: int = 0):
        self.scope = scope
        self.parent = parent
        self.values = values
        self.index = index


class Executor:
    """Runs one read-back network; kernels are prepared on first use and reused across runs."""

    def __init__(self, network: Network, max_iterations: int = DEFAULT_MAX_ITERATIONS,
                 observer: Observer | None = None):
        self.network = network
        self.max_iterations = max_iterations
        self.observer = observer
        self._kernels: dict[int, Kernel] = {}
        self._assertions = _assertions_by_scope(network)

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        top = Frame(None, None, dict(inputs))
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000 + 4 * len(self.network.layers)))
        try:
            self._check_assertions(top)
            # contiguous, as an engine's output buffers are (a kernel may hand back a strided view)
            return {t.name: np.require(self.value(t, top), requirements="C") for t in self.network.outputs}
        finally:
            sys.setrecursionlimit(limit)

    def value(self, tensor: Tensor, frame: Frame) -> np.ndarray:
        """The value of ``tensor`` as seen from ``frame``, computing it if needed."""
        scope = tensor.scope
        while frame.scope is not scope:
            parent = frame.parent
            if parent is None:  # a hand-made network can read a loop's value outside the loop; TensorRT refuses it
                loop = scope.name if scope is not None else "?"
                raise SimulationError(f"tensor {tensor.name!r} belongs to loop {loop!r} and is read outside "
                                      "it; a loop's values leave it only through an ILoopOutputLayer")
            frame = parent
        found = frame.values.get(tensor.name)
        if found is None:
            layer = tensor.producer
            if layer is None:
                raise SimulationError(f"no value for network input {tensor.name!r}")
            self._evaluate(layer, frame)
            found = frame.values[tensor.name]
        return found

    def _evaluate(self, layer: Layer, frame: Frame) -> None:
        rule = rule_for(layer.type)
        if rule is not None:  # loop and conditional layers (loopc.sim.control)
            rule(self, layer, frame)
            return
        kernel = self._kernels.get(layer.index)
        if kernel is None:
            kernel = self._kernels[layer.index] = self._prepare(layer)
        reads = layer.inputs if layer.reads is None else layer.reads
        args = [None if t is None else self.value(t, frame) for t in reads]
        if any(t is not None and t.dtype in HALF for t in reads):
            args = [a.astype(np.float32) if a is not None and a.dtype in HALF else a for a in args]
        if self.observer is not None:
            self.observer(layer, args)
        try:
            results = kernel(args)
        except SimulationError as exc:
            raise SimulationError(f"{layer.describe()}: {exc}") from exc
        except LimitError as exc:
            raise LimitError(f"{layer.describe()}: {exc.message}", hint=exc.hint) from exc
        except (ValueError, IndexError) as exc:
            if not any(t is not None and -1 in t.shape for t in layer.inputs):
                raise InternalError(f"{layer.describe()}: simulator kernel failed: {exc}") from exc
            # TensorRT checks static shapes when the network is made, dynamic ones only when it runs
            shapes = ", ".join(str(list(np.shape(a))) for a in args if a is not None)
            raise SimulationError(f"{layer.describe()}: its inputs' shapes ({shapes}) do not fit together, which "
                                  f"TensorRT checks only when it runs ({exc})") from exc
        except Exception as exc:
            raise InternalError(f"{layer.describe()}: simulator kernel failed: {exc}") from exc
        for tensor, result in zip(layer.outputs, results):
            frame.values[tensor.name] = _conform(layer, tensor, result)

    def _prepare(self, layer: Layer) -> Kernel:
        factory = factory_for(layer.type)
        if factory is None:
            raise SimulationError(f"{layer.describe()}: the simulator does not support layer type {layer.type}")
        for tensor in layer.outputs:  # a static shape is known now: its size is checked once, here
            if -1 not in tensor.shape:
                check_constant(tensor.shape, tensor.dtype, f"{layer.describe()}: output {tensor.name!r}")
        if layer.kernel is not None:  # fixed when the network was read (a fusion, a recorded constant)
            return layer.kernel
        try:
            return factory(layer.api)
        except SimulationError as exc:
            raise SimulationError(f"{layer.describe()}: {exc}") from exc

    def _check_assertions(self, frame: Frame) -> None:
        """Assertions have no outputs, so nothing demands them: run the ones of ``frame``'s scope."""
        for layer in self._assertions.get(frame.scope, ()):
            self._evaluate(layer, frame)

    # -- loops --------------------------------------------------------------------------------

    def run_loop(self, loop: NetworkLoop, outer: Frame) -> None:
        """Run ``loop`` in ``outer`` to its end and bind its outputs there (a loop output's rule asks)."""
        count = self._trip_count(loop, outer)
        recurrences = loop.recurrences
        for rec in recurrences:
            if len(rec.inputs) < 2 or rec.inputs[1] is None:
                raise SimulationError(f"{rec.describe()}: the recurrence has no next value (input 1)")
            _check_invariant(loop, layer_input(rec, 0), f"{rec.describe()}: the initial value (input 0)")
        carried = initial = [self.value(layer_input(rec, 0), outer) for rec in recurrences]
        scans = [out for out in loop.outputs if out.api.kind.name != "LAST_VALUE"]
        stacked: list[list[np.ndarray]] = [[] for _ in scans]
        trips = 0
        while True:
            if count is not None and trips >= count:
                break
            frame = Frame(loop, outer, {rec.outputs[0].name: v for rec, v in zip(recurrences, carried)}, trips)
            if loop.while_ is not None:
                keep_going = self.value(layer_input(loop.while_, 0), frame)
                if not _scalar_bool(keep_going, f"loop {loop.name!r}: the kWHILE trip limit"):
                    break
            if trips >= self.max_iterations:
                raise SimulationError(endless(f"loop {loop.name!r}", self.max_iterations))
            self._check_assertions(frame)
            for items, out in zip(stacked, scans):
                items.append(self.value(layer_input(out, 0), frame))
            carried = [self._next_value(rec, frame, first) for rec, first in zip(recurrences, initial)]
            trips += 1
        for out in loop.outputs:
            outer.values[out.outputs[0].name] = self._loop_result(loop, out, outer, carried, scans, stacked, trips)

    def _next_value(self, rec: Layer, frame: Frame, first: np.ndarray) -> np.ndarray:
        """A recurrence's next value, which TensorRT requires in its initial value's shape."""
        value = self.value(layer_input(rec, 1), frame)
        if value.shape != first.shape:
            raise SimulationError(
                f"{rec.describe()}: the next value has shape {list(value.shape)} on trip {frame.index}, the initial "
                f"value {list(first.shape)}; TensorRT carries a value in one shape (its builder rejects this network)"
            )
        return value

    def _trip_count(self, loop: NetworkLoop, outer: Frame) -> int | None:
        if loop.count is None:
            if loop.while_ is None:
                raise SimulationError(f"loop {loop.name!r} has no trip limit")
            return None
        source = layer_input(loop.count, 0)
        _check_invariant(loop, source, f"loop {loop.name!r}: the kCOUNT trip limit")
        return max(_scalar_int(self.value(source, outer), f"loop {loop.name!r}: the kCOUNT trip limit"), 0)

    def _loop_result(
        self,
        loop: NetworkLoop,
        out: Layer,
        outer: Frame,
        carried: list[np.ndarray],
        scans: list[Layer],
        stacked: list[list[np.ndarray]],
        trips: int,
    ) -> np.ndarray:
        kind = out.api.kind.name
        target = out.outputs[0]
        if kind == "LAST_VALUE":
            source = layer_input(out, 0)
            for rec, value in zip(loop.recurrences, carried):
                if rec.outputs[0] is source:
                    return value
            raise SimulationError(
                f"{out.describe()}: a kLAST_VALUE output must read a recurrence of the same loop"
            )
        if len(out.inputs) < 2 or out.inputs[1] is None:
            raise SimulationError(f"{out.describe()}: a {kind} output needs its length input (input 1)")
        _check_invariant(loop, out.inputs[1], f"{out.describe()}: the length (input 1)")
        length = _scalar_int(self.value(out.inputs[1], outer), f"{out.describe()}: the length (input 1)")
        items = stacked[scans.index(out)]
        axis = out.api.axis
        if items:
            result = np.stack(items, axis=axis)
        else:
            item_shape = layer_input(out, 0).shape
            if -1 in item_shape:
                raise SimulationError(
                    f"{out.describe()}: the loop ran no iterations and the element shape {item_shape} is not static"
                )
            result = no_trips(tuple(item_shape), axis, target.dtype)
        if kind == "REVERSE":
            result = np.flip(result, axis=axis)
        return padded(result, axis, trips, length, out.describe(), SimulationError)


def _assertions_by_scope(network: Network) -> dict[NetworkLoop | None, list[Layer]]:
    """Assertion layers by the scope they run in (the innermost scope of their inputs).

    An assertion inside an if-conditional branch only counts when its branch is taken; the
    executor cannot tell branches apart here, so those assertions are left out.
    """
    found: dict[NetworkLoop | None, list[Layer]] = {}
    for layer in network.layers:
        if layer.type != "ASSERTION" or _inside_conditional(layer):
            continue
        scopes = [t.scope for t in layer.inputs if t is not None]
        scope = max(scopes, key=lambda lp: -1 if lp is None else lp.depth, default=None)
        found.setdefault(scope, []).append(layer)
    return found


def _inside_conditional(layer: Layer) -> bool:
    """Whether ``layer`` reads, through the data flow, an if-conditional's input inside its branches."""
    seen: set[Layer] = set()
    stack = [layer]
    while stack:
        current = stack.pop()
        if current.type == "CONDITIONAL_INPUT":
            return True
        for tensor in current.inputs:
            producer = tensor.producer if tensor is not None else None
            if producer is not None and producer.type != "CONDITIONAL_OUTPUT" and producer not in seen:
                seen.add(producer)
                stack.append(producer)
    return False


def _check_invariant(loop: NetworkLoop, tensor: Tensor, what: str) -> None:
    """Raise unless ``tensor`` is defined outside ``loop`` (in an enclosing scope, not this loop or one inside it)."""
    scope = tensor.scope
    while scope is not None:
        if scope is loop:
            raise SimulationError(f"{what} must come from outside the loop")
        scope = scope.parent


def _scalar_int(value: np.ndarray, what: str) -> int:
    """A trip count or length: TensorRT takes a one-element integer tensor (0-D) and nothing else."""
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "iu":
        raise SimulationError(f"{what} must be one integer, not {array.dtype} of shape {array.shape}")
    return int(array.reshape(()))


def _scalar_bool(value: np.ndarray, what: str) -> bool:
    array = np.asarray(value)
    if array.size != 1:
        raise SimulationError(f"{what} must be one value, not an array of shape {array.shape}")
    return bool(array.reshape(()))


def layer_input(layer: Layer, index: int) -> Tensor:
    """Input ``index`` of ``layer``; a missing one is the network's error."""
    tensor = layer.inputs[index] if index < len(layer.inputs) else None
    if tensor is None:
        raise SimulationError(f"{layer.describe()}: input {index} is missing")
    return tensor


def _conform(layer: Layer, tensor: Tensor, result: Any) -> np.ndarray:
    """Give a kernel's result the declared dtype; check it against the declared static dims."""
    array = result if type(result) is np.ndarray else np.asarray(result)
    if array.dtype != tensor.dtype:
        array = array.astype(tensor.dtype)
    declared = tensor.shape
    if array.shape == declared:  # the common case, checked first: this runs for every layer of every trip
        return array
    if len(declared) != array.ndim or any(d != -1 and d != a for d, a in zip(declared, array.shape)):
        # TensorRT's declared shapes hold for every network it builds: one it would reject gets here
        raise SimulationError(
            f"{layer.describe()}: output {tensor.name!r} has shape {list(array.shape)} when run, but TensorRT "
            f"declares {list(declared)}; TensorRT would reject this network"
        )
    return array
