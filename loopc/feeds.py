"""Data as users have it → the arrays a network takes: the one place inputs are converted and checked.

``loopc run``, :func:`loopc.run` and ``loopc build --inputs`` all go through :func:`prepare_inputs`,
so the same data is accepted, converted or refused with the same one-line message. The model's
declared type is the contract, with NumPy's habits allowed for: data of the same kind but another
width is converted when its values fit (``np.array([1, 2])`` is int64, ``np.array([0.5])`` float64,
and a float64 model input is computed in float32 by TensorRT anyway), and bfloat16 arrays that an
``.npz`` gives back as raw 2-byte void are read as bfloat16. Anything else names the input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loopc.errors import LoopcError
from loopc.profiles import dim_name

Dim = int | str | None


@dataclass(frozen=True)
class InputSpec:
    """One network input as the model declares it and as the network takes it."""

    name: str
    #: What the network takes (TensorRT has no float64: a float64 model input is float32 here).
    dtype: np.dtype[Any]
    #: The network's dims; -1 where dynamic.
    shape: tuple[int, ...]
    #: The model's own type, when it differs from ``dtype``.
    declared: np.dtype[Any] | None = None
    #: The model's dims: ints, symbolic names ("batch"), or None where unknown.
    dims: tuple[Dim, ...] | None = None
    #: The input's other names, by which data may be given too.
    aliases: tuple[str, ...] = ()

    def dims_text(self) -> str:
        """``(batch, seq, 8)``; ``?`` for a dynamic dim without a name."""
        dims = self.dims if self.dims is not None and len(self.dims) == len(self.shape) else self.shape
        return "(" + ", ".join(_dim_text(d) for d in dims) + ")"

    def type_text(self) -> str:
        """``float32``, or ``float64 (TensorRT computes it in float32)``."""
        if self.declared is None or self.declared == self.dtype:
            return _dtype_name(self.dtype)
        return f"{_dtype_name(self.declared)} (TensorRT computes it in {_dtype_name(self.dtype)})"


def input_specs(network: Any, model: Any = None) -> list[InputSpec]:
    """The inputs of a TensorRT ``network``; ``model`` (a loopc IR Model) adds declared types and names."""
    from loopc.sim.dtypes import to_numpy

    declared = {v.name: v for v in model.graph.inputs} if model is not None else {}
    aliases: dict[str, list[str]] = {}
    for alias, name in getattr(model, "input_aliases", {}).items():
        aliases.setdefault(name, []).append(alias)
    specs = []
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        value = declared.get(tensor.name)
        dims = tuple(value.shape) if value is not None and value.shape is not None else None
        if dims is None:
            dims = tuple(dim_name(tensor, k) if d == -1 else d for k, d in enumerate(tensor.shape))
        decl = np.dtype(value.dtype) if value is not None and value.dtype is not None else None
        specs.append(InputSpec(tensor.name, to_numpy(tensor.dtype), tuple(tensor.shape), decl, dims,
                               tuple(aliases.get(tensor.name, ()))))
    return specs


def prepare_inputs(
    specs: Sequence[InputSpec], arrays: Mapping[str, Any], *, partial: bool = False, origin: str = ""
) -> dict[str, np.ndarray]:
    """Check ``arrays`` against ``specs`` and convert each to the dtype its network input takes.

    ``partial`` allows inputs to be left out (examples that fix only some shapes); ``origin``
    prefixes each message (``--inputs: ``). Raises :class:`LoopcError` naming the input.
    """
    by_name = {spec.name: spec for spec in specs}
    names = ", ".join(by_name) or "none"
    arrays = by_input_name(specs, arrays, origin)
    extra = [name for name in arrays if name not in by_name]
    if extra:
        raise LoopcError(f"{origin}unknown input {_names(extra)}; the model's inputs are {names}")
    missing = [name for name in by_name if name not in arrays]
    if missing and not partial:
        raise LoopcError(f"{origin}missing input {_names(missing)}; the model's inputs are {names}")
    return {name: convert(by_name[name], value, origin) for name, value in arrays.items()}


def by_input_name(specs: Sequence[InputSpec], arrays: Mapping[str, Any], origin: str = "") -> dict[str, Any]:
    """``arrays`` keyed by their inputs' names: data given by another name of an input (an alias) is that
    input's; the same input given twice is an error."""
    canonical = {alias: spec.name for spec in specs for alias in spec.aliases}
    keyed: dict[str, Any] = {}
    given: dict[str, str] = {}
    for key, value in arrays.items():
        name = canonical.get(key, key)
        if name in keyed:
            raise LoopcError(f"{origin}input {name!r} is given twice, as {given[name]!r} and as {key!r} "
                             f"(two names of one input)")
        keyed[name], given[name] = value, key
    return keyed


def convert(spec: InputSpec, data: Any, origin: str = "") -> np.ndarray:
    """``data`` as the array ``spec``'s network input takes, or a one-line error naming the input."""
    where = f"{origin}input {spec.name!r}"
    value = np.asarray(data)
    want = spec.dtype
    if value.dtype.type is np.void and not value.dtype.fields:
        if _is_ml_dtype(want) and value.dtype.itemsize == want.itemsize:
            value = value.view(want)  # how an .npz gives back bfloat16 (and the other ml_dtypes types)
        else:
            raise LoopcError(
                f"{where} holds raw {value.dtype.itemsize}-byte data ({value.dtype.str}, how NumPy saves "
                f"bfloat16 and other non-NumPy types); the model expects {spec.type_text()}"
            )
    have, need = _kind(value.dtype), _kind(want)
    if have != need:
        raise LoopcError(
            f"{where} has {_dtype_name(value.dtype)} data ({_KIND_NAMES.get(have, have)}); the model expects "
            f"{spec.type_text()} ({_KIND_NAMES.get(need, need)}): convert it first"
        )
    _check_shape(spec, value, where)
    if value.dtype == want:
        return value
    if need == "int":
        _check_int_range(spec, value, where)
        return value.astype(want)
    converted = value.astype(want)
    overflow = np.isfinite(value) & ~np.isfinite(converted)
    if overflow.any():
        biggest = np.max(np.abs(value.astype(np.float64)[overflow]))
        raise LoopcError(f"{where} has values up to {biggest:g}, beyond the range of {_dtype_name(want)}, "
                         "which the network computes it in")
    return converted


def _check_shape(spec: InputSpec, value: np.ndarray, where: str) -> None:
    shape = tuple(value.shape)
    got = "x".join(map(str, shape)) or "a scalar"
    if len(shape) != len(spec.shape):
        raise LoopcError(f"{where} has shape {got} (rank {len(shape)}); the model expects rank "
                         f"{len(spec.shape)}: {spec.dims_text()}")
    if any(d not in (-1, v) for d, v in zip(spec.shape, shape)):
        raise LoopcError(f"{where} has shape {got}; the model expects {spec.dims_text()}")


def _check_int_range(spec: InputSpec, value: np.ndarray, where: str) -> None:
    if value.size == 0:
        return
    info = np.iinfo(spec.dtype)
    low, high = int(value.min()), int(value.max())
    if low < info.min or high > info.max:
        bad = high if high > info.max else low
        raise LoopcError(f"{where} has the value {bad}, which the network's {_dtype_name(spec.dtype)} cannot hold "
                         f"({info.min}..{info.max}); the model expects {spec.type_text()}")


_KIND_NAMES = {"bool": "booleans", "int": "integers", "float": "floating point", "complex": "complex numbers",
               "object": "Python objects", "str": "strings"}


def _kind(dtype: np.dtype[Any]) -> str:
    if dtype == np.bool_:
        return "bool"
    if dtype.kind in "iu" or _ml_kind(dtype) == "int":
        return "int"
    if dtype.kind == "f" or _ml_kind(dtype) == "float":
        return "float"
    return {"c": "complex", "O": "object", "U": "str", "S": "str"}.get(dtype.kind, dtype.str)


def _ml_kind(dtype: np.dtype[Any]) -> str | None:
    """``float`` / ``int`` for the ml_dtypes types (bfloat16, float8, int4), whose NumPy kind is ``V``."""
    if not _is_ml_dtype(dtype):
        return None
    return "int" if "int" in dtype.name else "float"


def _is_ml_dtype(dtype: np.dtype[Any]) -> bool:
    return dtype.kind == "V" and dtype.type is not np.void


def _dtype_name(dtype: np.dtype[Any]) -> str:
    return dtype.name if dtype.type is not np.void else dtype.str


def _names(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _dim_text(dim: Dim) -> str:
    return "?" if dim is None or dim == -1 else str(dim)

