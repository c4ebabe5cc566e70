"""What a build knows of its inputs before there is a network: dims its profile pins, inputs fixed to a value.

An engine only ever sees the shapes its profile admits. Where the profile pins a dim (min = max, from
``--shapes`` or an example input), a conditional that tests it has one outcome in that engine (see
:mod:`loopc.passes.profile_conditionals`). An input that only steers control flow — Silero VAD's sample
rate picks one of two whole models — can be fixed at build time (``--fix-input sr=16000``, like
Polygraphy's input overrides): it becomes a constant, leaves the engine's inputs, and the branches it
does not take are never built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from loopc.errors import LoopcError
from loopc.ir import Model
from loopc.ir.builder import Builder
from loopc.ir.core import Node
from loopc.profiles import ShapeProfile
from loopc.spelling import option

#: Fixed inputs as a user gives them: ``"sr=16000"``, a list of such items, or ``{"sr": 16000}``.
FixedSpec = str | Sequence[str] | Mapping[str, Any]


def pinned_dims(profile: ShapeProfile | None) -> dict[str, tuple[int | None, ...]]:
    """Per input, the dims the profile pins (an int where min = max, None where the dim may vary).

    The flags decide an input they name (both bounds needed); otherwise an example input pins its shape.
    """
    if profile is None:
        return {}
    pinned: dict[str, tuple[int | None, ...]] = {}
    for name, example in profile.examples.items():
        pinned[name] = tuple(int(d) for d in np.shape(example))
    for name in set(profile.min) | set(profile.max):
        low, high = profile.min.get(name), profile.max.get(name)
        if low is None or high is None or len(low) != len(high):
            pinned.pop(name, None)
            continue
        pinned[name] = tuple(a if a == b else None for a, b in zip(low, high))
    return pinned


def parse_fixed(spec: FixedSpec | None) -> dict[str, Any]:
    """Fixed values by input name, from ``NAME=VALUE`` items; a value is a number, true/false or a JSON list."""
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        return dict(spec)
    items = [spec] if isinstance(spec, str) else list(spec)
    fixed: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise LoopcError(f"{option('--fix-input')}: {item!r} is not NAME=VALUE (e.g. sr=16000)")
        fixed[name.strip()] = _number(name.strip(), text.strip())
    return fixed


def _number(name: str, text: str) -> Any:
    import json

    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, (int, float, bool, list)):
        raise LoopcError(f"{option('--fix-input')}: the value of {name!r} must be a number, true/false or a "
                         f"JSON list, not {text!r}")
    return value


def fix_inputs(model: Model, fixed: Mapping[str, Any]) -> None:
    """Replace each input named in ``fixed`` by a constant of its value (its dtype; its shape where the value
    holds as many elements). Unknown names and values the input's type cannot hold exactly are refused."""
    graph = model.graph
    by_name = {v.name: v for v in graph.inputs}
    by_name.update({alias: by_name[name] for alias, name in model.input_aliases.items() if name in by_name})
    constants: list[Node] = []
    builder = Builder(graph, constants, origin=f"{option('--fix-input')}")
    for name, given in fixed.items():
        value = by_name.get(name)
        if value is None:
            raise LoopcError(f"{option('--fix-input')}: the model has no input {name!r} (its inputs: "
                             f"{', '.join(v.name for v in graph.inputs)})")
        array = _as_input(value.name, value.dtype, value.shape, given)
        value.replace_all_uses_with(builder.const(array, name=value.name + "_fixed"))
    if not constants:
        return
    if len(graph.nodes):
        graph.insert_before(graph.nodes[0], constants)
    else:
        for node in constants:
            graph.add(node)
    kept = [v for v in graph.inputs if v.name not in {by_name[name].name for name in fixed}]
    graph.set_inputs(kept)
    model.input_aliases = {alias: name for alias, name in model.input_aliases.items()
                           if any(v.name == name for v in kept)}


def _as_input(name: str, dtype: Any, shape: Any, given: Any) -> np.ndarray:
    """``given`` as the input's dtype and shape, or a one-line refusal saying which does not fit."""
    what = f"{option('--fix-input')} {name}"
    array = np.asarray(given)
    if dtype is not None:
        cast = array.astype(dtype)
        if not np.array_equal(cast.astype(array.dtype), array):
            raise LoopcError(f"{what}: {given!r} is not a value of the input's type {np.dtype(dtype).name}")
        array = cast
    if shape is None:
        return array
    if all(isinstance(d, int) for d in shape) and int(np.prod(shape)) == array.size:
        return array.reshape(shape)
    if len(shape) != array.ndim or any(isinstance(d, int) and d != n for d, n in zip(shape, array.shape)):
        declared = "x".join(str(d) if isinstance(d, int) else "?" for d in shape) or "a scalar"
        raise LoopcError(f"{what}: a value of shape {list(array.shape)} does not fit the input's shape {declared}")
    return array


def unfixed_feeds(feeds: Mapping[str, Any], fixed: Mapping[str, Any]) -> dict[str, Any]:
    """``feeds`` without the fixed inputs, which an engine built with them no longer takes; a feed that gives a
    fixed input another value is refused (that engine cannot compute it)."""
    for name, value in fixed.items():
        if name in feeds and not np.array_equal(np.asarray(feeds[name]).reshape(-1), np.asarray(value).reshape(-1)):
            raise LoopcError(f"input {name!r} is fixed to {value!r} by {option('--fix-input')}, but the inputs give "
                             f"{np.asarray(feeds[name]).tolist()!r}")
    return {name: value for name, value in feeds.items() if name not in fixed}
