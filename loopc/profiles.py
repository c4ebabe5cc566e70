"""The optimization profile: trtexec's ``--shapes`` / ``--min/opt/max-shapes``, example inputs, or a default.

An input TensorRT needs a profile for is one with dynamic dims, or a shape tensor (an integer input
TensorRT computes shapes from, like a trip count or a ``max_len``: its profile gives *values*).
Each such input takes, bound by bound, the first of: the flags, the example inputs (``--inputs``,
which pin min = opt = max unless the flags name that input too), then loopc's default: the range
:data:`DEFAULT_RANGE` where the graph takes it, else sizes inside what the graph requires of each dim
(:mod:`loopc.profile_constraints`), said in one line per input. Dynamic dims sharing a symbolic name
(``batch``) take the range of that name wherever an input gives it. When TensorRT's builder still refuses
a default for its shapes, :func:`build_narrowing` moves it (:data:`NARROWINGS`: TensorRT checks a profile's
shapes at its opt, so the opt moves to the min or max, or the bound it names moves to the opt) and builds again.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from loopc.errors import LoopcError
from loopc.spelling import option

if TYPE_CHECKING:
    from loopc.ir import Graph

Dims = tuple[int, ...]
#: Shapes as a user gives them: ``"x:1x3x224,y:4"`` (trtexec's syntax) or ``{"x": (1, 3, 224), "y": (4,)}``.
ShapeSpec = str | Mapping[str, Sequence[int]]
Bounds = tuple[Dims, Dims, Dims]

#: min / opt / max of a dynamic dim, and of each value of a shape tensor, that no flag or example gives.
#: A range, not a point: a loop's sequence length varies from call to call. 1, not 0: a value of 0 makes
#: the tensors it shapes empty, and a shape value is often a divisor or a Range step; 64 keeps engines
#: small (TensorRT's builder allocates for max). The same range for both, so a shape tensor that equals a
#: dynamic dim (a ``max_len`` beside a sequence) agrees with it at each of min, opt and max.
DEFAULT_RANGE = (1, 8, 64)
#: What tells a user how to set a profile themselves.

def _all_three() -> str:
    return f"{option('--min-shapes')}, {option('--opt-shapes')} and {option('--max-shapes')}"


def override_hint() -> str:
    """What tells a user how to set a profile themselves."""
    return f"set them with {option('--shapes/--min-shapes/--opt-shapes/--max-shapes')} or {option('--inputs')}"


#: Where an input's profile came from (``InputProfile.source``).
SOURCES = ("static", "default", "shapes", "inputs", "inputs+shapes")


@dataclass
class InputProfile:
    """The profile one input was built with, as ``--report`` records it."""

    #: static (no profile needed), default (loopc's), shapes (the flags), inputs (an example), inputs+shapes.
    source: str
    dtype: str
    #: The declared dims: ints, symbolic names, "?" where unknown.
    declared: list[int | str]
    min: list[int]
    opt: list[int]
    max: list[int]
    shape_tensor: bool = False
    #: For a shape tensor: its min / opt / max values, each a flat list.
    values: dict[str, list[int]] | None = None


@dataclass(frozen=True)
class NetworkInput:
    """What the profile needs to know of one network input."""

    name: str
    shape: Dims
    shape_tensor: bool = False
    dtype: str = ""
    #: Symbolic names of the dims (None where unnamed or static).
    names: tuple[str | None, ...] = ()

    @property
    def dynamic(self) -> bool:
        return -1 in self.shape

    def declared(self) -> list[int | str]:
        names = self.names if len(self.names) == len(self.shape) else (None,) * len(self.shape)
        return [d if d != -1 else (n or "?") for d, n in zip(self.shape, names)]

    def declared_dims(self) -> list[int | str | None]:
        """The dims as :func:`loopc.profile_constraints.variables` takes them: a name, a size, None."""
        return [d if d != "?" else None for d in self.declared()]


@dataclass
class ShapeProfile:
    """min / opt / max per input name (``--shapes`` sets all three) and example inputs."""

    min: dict[str, Dims] = field(default_factory=dict)
    opt: dict[str, Dims] = field(default_factory=dict)
    max: dict[str, Dims] = field(default_factory=dict)
    #: Example inputs (``--inputs``): their shapes, and values for shape tensors, fill every bound
    #: the flags leave open.
    examples: dict[str, np.ndarray] = field(default_factory=dict)
    #: The default bounds found for a graph (see :meth:`resolve`), kept for a narrower build of the same graph.
    _choices: dict[Graph, dict[str, tuple[list[int], list[int], list[int], str]]] = field(
        default_factory=dict, repr=False, compare=False)

    @classmethod
    def pinned(cls, inputs: Mapping[str, Any]) -> ShapeProfile:
        """min = opt = max = the shapes of ``inputs``, and their values for shape-tensor inputs."""
        return cls(examples={name: np.asarray(value) for name, value in inputs.items()})

    @classmethod
    def from_specs(
        cls, shapes: ShapeSpec | None = None, min_shapes: ShapeSpec | None = None,
        opt_shapes: ShapeSpec | None = None, max_shapes: ShapeSpec | None = None,
        examples: Mapping[str, Any] | None = None,
    ) -> ShapeProfile:
        profile = cls(examples={name: np.asarray(value) for name, value in (examples or {}).items()})
        for name, dims in parse_shapes(shapes).items():
            profile.min[name] = profile.opt[name] = profile.max[name] = dims
        for spec, target in ((min_shapes, profile.min), (opt_shapes, profile.opt), (max_shapes, profile.max)):
            target.update(parse_shapes(spec))
        profile.check_complete()
        return profile

    def renamed(self, aliases: Mapping[str, str]) -> ShapeProfile:
        """This profile with inputs named by another of their names (``aliases``: to the input's name)
        named as the network names them."""
        if not any(name in aliases for given in (self.min, self.opt, self.max, self.examples) for name in given):
            return self

        def keyed(given: dict[str, Any]) -> dict[str, Any]:
            return {aliases.get(name, name): value for name, value in given.items()}

        return dataclasses.replace(self, min=keyed(self.min), opt=keyed(self.opt), max=keyed(self.max),
                                   examples=keyed(self.examples))

    def check_complete(self) -> None:
        """An input the flags name needs all three bounds, unless an example fills the rest."""
        for name in sorted(set(self.min) | set(self.opt) | set(self.max)):
            if name not in self.examples and not (name in self.min and name in self.opt and name in self.max):
                raise LoopcError(f"input {name!r} needs all of {_all_three()} "
                                 f"(or an example of it in {option('--inputs')})")

    def resolve(self, inputs: Sequence[NetworkInput], graph: Graph | None = None, narrow: str = "",
                why: dict[str, str] | None = None) -> dict[str, InputProfile]:
        """The profile of every input, keyed by name, in the network's order.

        With ``graph`` (the IR the network was made from), defaults are sizes that graph takes (see
        :mod:`loopc.profile_constraints`), and ``why`` is given, per input, what moved them off
        :data:`DEFAULT_RANGE`; ``narrow`` (a key of :data:`NARROWINGS`) moves their bounds.
        """
        self.check_complete()
        known = {t.name for t in inputs}
        unknown = sorted((set(self.min) | set(self.opt) | set(self.max)) - known)
        if unknown:
            raise LoopcError(f"{option('--shapes')} names {', '.join(unknown)}, which the model has no input called")
        unknown = sorted(set(self.examples) - known)
        if unknown:
            raise LoopcError(f"{option('--inputs')} names {', '.join(unknown)}, which the model has no input called")
        records: dict[str, InputProfile] = {}
        symbols: dict[str, tuple[int, int, int]] = {}
        for t in inputs:  # first what the user gave, so that named dims can follow it
            if t.name in self.min or t.name in self.opt or t.name in self.max or t.name in self.examples:
                records[t.name] = self._given(t)
                if not t.shape_tensor:
                    _bind(symbols, t, records[t.name])
        fitted = self._fitted(inputs, records, graph) if graph is not None else {}
        for t in inputs:
            if t.name not in records:
                records[t.name] = _default(t, symbols, fitted.get(t.name), narrow) if t.dynamic or t.shape_tensor \
                    else _static(t)
                if why is not None and t.name in fitted and fitted[t.name][3]:
                    why[t.name] = fitted[t.name][3]
        return {t.name: records[t.name] for t in inputs}

    def _fitted(self, inputs: Sequence[NetworkInput], given: Mapping[str, InputProfile], graph: Graph
                ) -> dict[str, tuple[list[int], list[int], list[int], str]]:
        """The default bounds the graph takes for each input left to the default, and why they are not
        :data:`DEFAULT_RANGE` ("" when they are); computed once per graph."""
        if graph in self._choices:
            return self._choices[graph]
        from loopc.profile_constraints import choose, spans, variables

        names = {v.name for v in graph.inputs}
        free = {t.name: t for t in inputs if t.name not in given and t.dynamic and not t.shape_tensor}
        dims = variables({name: t.declared_dims() for name, t in free.items() if name in names})
        pinned = {name: (rec.min, rec.opt, rec.max) for name, rec in given.items()
                  if name in names and not rec.shape_tensor}
        choice = choose(graph, dims, DEFAULT_RANGE, pinned) if dims else None
        fitted: dict[str, tuple[list[int], list[int], list[int], str]] = {}
        if choice is not None and choice.fits:
            for name, low, mid, high in spans(choice, dims):
                moved = [d for d in dims[name] if not isinstance(d, int) and d in choice.why]
                fitted[name] = (low, mid, high, _reasons(free[name], dims[name], moved, choice))
        self._choices[graph] = fitted
        return fitted

    def apply(
        self, builder: Any, network: Any, cfg: Any, *,
        dim_names: Mapping[str, Sequence[str | int | None]] | None = None,
        warn: Callable[[str], None] | None = None,
        graph: Graph | None = None,
        narrow: str = "",
        refused: str = "",
    ) -> dict[str, InputProfile]:
        """Add one optimization profile covering every dynamic input of ``network``; return what each got.

        ``dim_names`` gives the model's dims per input (symbolic names where it has them); ``warn``
        is told, one line per input, the default profile an input got and why. ``graph``, ``narrow``:
        see :meth:`resolve`; ``refused`` is what TensorRT said of the wider default, for that line.
        """
        inputs = [network_input(network.get_input(i), (dim_names or {}).get(network.get_input(i).name))
                  for i in range(network.num_inputs)]
        why: dict[str, str] = {}
        records = self.resolve(inputs, graph, narrow, why)
        add_profile(builder, network, cfg, records)
        for t in inputs:
            if warn and records[t.name].source == "default":
                because = why.get(t.name, "")
                if narrow and t.dynamic and not t.shape_tensor:
                    step = NARROWINGS[narrow]
                    because = f"{because}; {step}, as TensorRT refused the wider range ({refused})".lstrip("; ")
                warn(default_warning(t, records[t.name], because))
        return records

    def _given(self, t: NetworkInput) -> InputProfile:
        flags = (self.min.get(t.name), self.opt.get(t.name), self.max.get(t.name))
        example = self.examples.get(t.name)
        source = _source(flags, example)
        if t.shape_tensor:
            values = _checked_values(t, _fill(t, flags, _example_values(t, example) if example is not None else None))
            shape = list(t.shape)
            return InputProfile(source, t.dtype, t.declared(), shape, list(shape), list(shape), True, values)
        for dims in flags:
            if dims is not None:
                _check_fits(t, dims, f"{option('--shapes')} {t.name}:{_text(dims)}")
        if example is not None:
            _check_fits(t, tuple(example.shape), f"{option('--inputs')}: input {t.name!r} of shape {_text(example.shape)}")
        if not t.dynamic:
            return _static(t)
        low, mid, high = _fill(t, flags, tuple(example.shape) if example is not None else None)
        _check_order(t.name, (low, mid, high), "")
        return InputProfile(source, t.dtype, t.declared(), list(low), list(mid), list(high))


def add_profile(builder: Any, network: Any, cfg: Any, records: Mapping[str, InputProfile]) -> None:
    """Add the optimization profile ``records`` describe (as :meth:`ShapeProfile.apply` resolves them, or as a
    build worker receives them) to ``cfg``: dims for the dynamic inputs, values for the shape-tensor inputs."""
    profile = None
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        rec = records.get(tensor.name)
        if rec is None or not (tensor.is_shape_tensor or -1 in tuple(tensor.shape)):
            continue
        profile = profile or builder.create_optimization_profile()
        if tensor.is_shape_tensor:
            assert rec.values is not None
            profile.set_shape_input(tensor.name, rec.values["min"], rec.values["opt"], rec.values["max"])
        else:
            profile.set_shape(tensor.name, tuple(rec.min), tuple(rec.opt), tuple(rec.max))
    if profile is not None:
        cfg.add_optimization_profile(profile)


def network_input(tensor: Any, dims: Sequence[str | int | None] | None = None) -> NetworkInput:
    """A TensorRT input tensor as the profile sees it; ``dims`` are the model's (with symbolic names)."""
    shape = tuple(tensor.shape)
    if dims is not None and len(dims) == len(shape):
        names = tuple(d if isinstance(d, str) else None for d in dims)
    else:
        names = tuple(dim_name(tensor, k) for k in range(len(shape)))
    from loopc.sim.dtypes import to_numpy

    dtype = to_numpy(tensor.dtype).name
    return NetworkInput(tensor.name, shape, bool(tensor.is_shape_tensor), dtype, names)


def default_warning(t: NetworkInput, rec: InputProfile, why: str = "") -> str:
    """The one line that says which default profile an input got, why when it is not :data:`DEFAULT_RANGE`,
    and how to choose another."""
    if t.shape_tensor:
        assert rec.values is not None
        lo, mid, hi = (_text(rec.values[k]) for k in ("min", "opt", "max"))
        return (f"input {t.name!r} is a shape tensor (TensorRT computes shapes from its values, e.g. a trip "
                f"count); using values min {lo} opt {mid} max {hi}; {override_hint()}")
    declared = "(" + ", ".join(str(d) for d in t.declared()) + ")"
    because = f" ({why})" if why else ""
    return (f"input {t.name!r} has dynamic dims {declared}; using min {_text(rec.min)} opt {_text(rec.opt)} "
            f"max {_text(rec.max)}{because}; {override_hint()}")


#: The largest dim, and element count, loopc accepts for an input's profile (int32 indexing, as most of
#: TensorRT's layers and loopc's trip counts use).
MAX_DIM = 2**31 - 1


def parse_shapes(spec: ShapeSpec | None) -> dict[str, Dims]:
    """``"x:1x3x224,y:4"`` (or ``{"x": (1, 3, 224), "y": (4,)}``, as the Python API takes it) →
    ``{"x": (1, 3, 224), "y": (4,)}``; a scalar is ``name:`` with no dims (``()``)."""
    if isinstance(spec, Mapping):
        return {str(name): _checked_dims(f"{name}: {dims!r}", dims) for name, dims in spec.items()}
    shapes: dict[str, Dims] = {}
    for item in spec.split(",") if spec else ():
        name, sep, dims = item.strip().rpartition(":")
        if not sep or not name:
            raise LoopcError(f"shape {item!r} is not name:DxDxD")
        shapes[name] = _checked_dims(item, dims.split("x") if dims else ())
    return shapes


def _checked_dims(item: str, dims: Any) -> Dims:
    """``dims`` as a tuple of ints within loopc's limits; ``item`` is how the user wrote the shape."""
    try:
        checked = tuple(operator.index(d) if not isinstance(d, str) else int(d) for d in dims)
    except (TypeError, ValueError):
        raise LoopcError(f"shape {item!r}: dimensions must be integers (DxDxD)") from None
    if any(d < 0 for d in checked):
        raise LoopcError(f"shape {item!r}: dimensions must not be negative")
    if any(d > MAX_DIM for d in checked):
        raise LoopcError(f"shape {item!r}: a dimension above loopc's limit of {MAX_DIM}")
    if math.prod(checked) > MAX_DIM:
        raise LoopcError(f"shape {item!r}: {math.prod(checked)} elements, above loopc's limit of {MAX_DIM} for one "
                         "input")
    return checked


def _static(t: NetworkInput) -> InputProfile:
    return InputProfile("static", t.dtype, t.declared(), list(t.shape), list(t.shape), list(t.shape))


def _default(t: NetworkInput, symbols: Mapping[str, tuple[int, int, int]],
             fitted: tuple[list[int], list[int], list[int], str] | None = None, narrow: str = "") -> InputProfile:
    if t.shape_tensor:
        count = _volume(t)
        values = {key: [v] * count for key, v in zip(("min", "opt", "max"), DEFAULT_RANGE)}
        shape = list(t.shape)
        return InputProfile("default", t.dtype, t.declared(), shape, list(shape), list(shape), True, values)
    names = t.names if len(t.names) == len(t.shape) else (None,) * len(t.shape)
    ranges = [(fitted[0][k], fitted[1][k], fitted[2][k]) if fitted else DEFAULT_RANGE for k in range(len(t.shape))]
    per_dim = [(d, d, d) if d != -1 else symbols.get(n or "", ranges[k])
               for k, (d, n) in enumerate(zip(t.shape, names))]
    low, mid, high = ([dims[k] for dims in per_dim] for k in range(3))
    if narrow:  # TensorRT refused the range: move the bounds of the dims the user left to loopc
        free = [d == -1 and n not in symbols for d, n in zip(t.shape, names)]
        low, mid, high = _narrowed(narrow, low, mid, high, free)
    return InputProfile("default", t.dtype, t.declared(), low, mid, high)


#: How a default profile TensorRT refused is moved, by what TensorRT's message names: it checks a profile's
#: shapes at the opt (kOPT), so a refused opt moves to a bound the graph takes; a refused min or max moves to
#: the opt.
NARROWINGS = {
    "opt-min": "opt moved to min", "opt-max": "opt moved to max", "min": "min raised to opt",
    "max": "max lowered to opt", "opt": "fixed to opt",
}
_TRIES = {"kMIN": ("min", "opt"), "kMAX": ("max", "opt"), "": ("opt-min", "opt-max", "min", "opt")}
#: What TensorRT's builder says when a profile's shapes are ones the network cannot take.
_SHAPE_REFUSAL = re.compile(r"shape|dimension|empty axis|indeterminate|volume|broadcast", re.IGNORECASE)


def _narrowed(narrow: str, low: list[int], mid: list[int], high: list[int], free: Sequence[bool]
              ) -> tuple[list[int], list[int], list[int]]:
    """The bounds after ``narrow`` (a key of :data:`NARROWINGS`), for the ``free`` dims only."""
    pick = {"opt-min": (low, low, high), "opt-max": (low, high, high), "min": (mid, mid, high),
            "max": (low, mid, mid), "opt": (mid, mid, mid)}[narrow]
    moved = [[p[k] if f else b[k] for k, f in enumerate(free)] for p, b in zip(pick, (low, mid, high))]
    return moved[0], moved[1], moved[2]


def build_narrowing(build: Callable[[str, str], bytes], records: Mapping[str, InputProfile], error: Exception
                    ) -> bytes:
    """Build again with moved defaults after ``error`` (TensorRT refusing the default profile for its shapes):
    ``build(narrow, refused)`` for each narrowing :data:`NARROWINGS` the message calls for, until one builds.
    Re-raises ``error`` when no input took a default range, it is no shape refusal, or none builds."""
    from loopc.trt.isolated import BuilderCrashError

    dynamic = [rec for rec in records.values() if rec.source == "default" and not rec.shape_tensor
               and rec.min != rec.max]
    if not dynamic or isinstance(error, BuilderCrashError) or not _SHAPE_REFUSAL.search(str(error)):
        raise error
    point = next((p for p in ("kMIN", "kMAX") if p in str(error)), "")
    for narrow in _TRIES[point]:
        try:
            return build(narrow, _refusal(error))
        except Exception as exc:  # the builder's own error type; the first refusal is the answer
            if isinstance(exc, BuilderCrashError) or not _SHAPE_REFUSAL.search(str(exc)):
                raise
    raise error


def _refusal(error: Exception) -> str:
    """TensorRT's reason, without the build's preamble, short enough for one line."""
    text = str(error).rsplit("Error Code ", 1)[-1].split(": ", 1)[-1].strip()
    return text if len(text) <= 160 else text[:159] + "…"


def _reasons(t: NetworkInput, dims: Sequence[Any], moved: Sequence[Any], choice: Any) -> str:
    """Why each moved dim of ``t`` is where it is: ``height 48..52: node '/rnn/LSTM' (LSTM): ...``, once per dim
    name (the first input naming it says it)."""
    parts = []
    for var in dict.fromkeys(moved):
        label = var if isinstance(var, str) else f"dim {var[1]}"
        low, high = choice.sizes["min"][var], choice.sizes["max"][var]
        span = f"= {low}" if low == high else f"in {low}..{high}"
        parts.append(f"{label} {span}: {choice.why[var]}")
        choice.why.pop(var)  # said once, for the first input that has it
    return "; ".join(parts)


def _bind(symbols: dict[str, tuple[int, int, int]], t: NetworkInput, rec: InputProfile) -> None:
    """Record the range a user gave each named dynamic dim (the first input that names it wins)."""
    for k, (d, name) in enumerate(zip(t.shape, t.names)):
        if d == -1 and name and name not in symbols:
            symbols[name] = (rec.min[k], rec.opt[k], rec.max[k])


def _fill(t: NetworkInput, flags: tuple[Dims | None, Dims | None, Dims | None], fallback: Dims | None) -> Bounds:
    """Each bound from the flags, else from the example."""
    low, mid, high = (f if f is not None else fallback for f in flags)
    if low is None or mid is None or high is None:
        raise LoopcError(f"input {t.name!r} needs all of {_all_three()}")
    return low, mid, high


def _source(flags: Sequence[Dims | None], example: Any) -> str:
    if example is None:
        return "shapes"
    return "inputs" if all(f is None for f in flags) else "inputs+shapes"


def _example_values(t: NetworkInput, example: np.ndarray) -> Dims:
    if example.dtype.kind not in "iu":
        raise LoopcError(f"{option('--inputs')}: input {t.name!r} is a shape tensor and needs integer values, "
                         f"not {example.dtype}")
    return tuple(int(v) for v in example.ravel())


def _checked_values(t: NetworkInput, bounds: Bounds) -> dict[str, list[int]]:
    count = _volume(t)
    for values in bounds:
        if len(values) != count:
            raise LoopcError(f"input {t.name!r} is a shape tensor of {count} value(s) (TensorRT computes "
                             f"shapes from them); {_text(values) or 'nothing'} gives {len(values)}")
    _check_order(t.name, bounds, " values")
    return {key: list(values) for key, values in zip(("min", "opt", "max"), bounds)}


def _check_fits(t: NetworkInput, dims: Dims, what: str) -> None:
    if len(dims) != len(t.shape) or any(d != -1 and d != g for d, g in zip(t.shape, dims)):
        decl = "x".join("?" if d == -1 else str(d) for d in t.shape) or "a scalar"
        raise LoopcError(f"{what} does not fit the input's shape {decl}")


def _check_order(name: str, bounds: Bounds, what: str) -> None:
    low, mid, high = bounds
    if len(low) != len(mid) or len(mid) != len(high) or not all(a <= b <= c for a, b, c in zip(low, mid, high)):
        raise LoopcError(f"input {name!r}: min{what} {_text(low)}, opt {_text(mid)}, max {_text(high)} are not "
                         "in order (each needs min <= opt <= max)")


def _volume(t: NetworkInput) -> int:
    if any(d < 0 for d in t.shape):
        raise LoopcError(f"input {t.name!r} is a shape tensor with dynamic dims; TensorRT needs its size fixed")
    return max(1, math.prod(t.shape))


def _text(dims: Collection[int]) -> str:
    return "x".join(str(d) for d in dims)


def dim_name(tensor: Any, index: int) -> str | None:
    """The name a TensorRT input gives a dynamic dim (TensorRT's ONNX parser sets them), if any."""
    try:
        return tensor.get_dimension_name(index) or None
    except (AttributeError, RuntimeError, TypeError):
        return None
