"""Input shapes the trtexec way: ``--shapes x:1x3x224,y:4`` and ``--min/opt/max-shapes``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loopc.errors import LoopcError

Dims = tuple[int, ...]


@dataclass
class ShapeProfile:
    """min / opt / max shapes per input name; ``--shapes`` sets all three."""

    min: dict[str, Dims] = field(default_factory=dict)
    opt: dict[str, Dims] = field(default_factory=dict)
    max: dict[str, Dims] = field(default_factory=dict)
    #: min / opt / max values of shape-tensor inputs (integers TensorRT computes shapes from, like
    #: a trip count). Without an entry here, a shape tensor's --shapes entry gives its values, as in trtexec.
    values: dict[str, tuple[Dims, Dims, Dims]] = field(default_factory=dict)

    @classmethod
    def pinned(cls, inputs: Mapping[str, Any]) -> ShapeProfile:
        """min = opt = max = the shapes of ``inputs``, and their values for shape-tensor inputs."""
        profile = cls()
        for name, value in inputs.items():
            array = np.asarray(value)
            profile.min[name] = profile.opt[name] = profile.max[name] = tuple(array.shape)
            if array.dtype.kind in "iu":
                flat = tuple(int(v) for v in array.ravel())
                profile.values[name] = (flat, flat, flat)
        return profile

    @classmethod
    def from_specs(
        cls, shapes: str | None = None, min_shapes: str | None = None, opt_shapes: str | None = None,
        max_shapes: str | None = None,
    ) -> ShapeProfile:
        profile = cls()
        for name, dims in parse_shapes(shapes).items():
            profile.min[name] = profile.opt[name] = profile.max[name] = dims
        for spec, target in ((min_shapes, profile.min), (opt_shapes, profile.opt), (max_shapes, profile.max)):
            target.update(parse_shapes(spec))
        for name in set(profile.min) | set(profile.opt) | set(profile.max):
            if not (name in profile.min and name in profile.opt and name in profile.max):
                raise LoopcError(f"input {name!r} needs all of --min-shapes, --opt-shapes and --max-shapes")
        return profile

    def apply(self, builder: Any, network: Any, cfg: Any) -> None:
        """Add one optimization profile covering every dynamic input of ``network``."""
        inputs = {network.get_input(i).name: network.get_input(i) for i in range(network.num_inputs)}
        unknown = sorted(set(self.min) - set(inputs))
        if unknown:
            raise LoopcError(f"--shapes names {', '.join(unknown)}, which the model has no input called")
        dynamic = [t for t in inputs.values() if -1 in tuple(t.shape) or t.is_shape_tensor]
        if not dynamic:
            return
        profile = builder.create_optimization_profile()
        for tensor in dynamic:
            name = tensor.name
            if tensor.is_shape_tensor:
                if name in self.values:
                    low, mid, high = self.values[name]
                elif name in self.min:
                    low, mid, high = self.min[name], self.opt[name], self.max[name]
                else:
                    raise LoopcError(f"input {name!r} is a shape tensor (TensorRT computes shapes from its value, "
                                     f"e.g. a trip count): give its values with --shapes {name}:V "
                                     "or --min/opt/max-shapes")
                profile.set_shape_input(name, list(low), list(mid), list(high))
                continue
            if name not in self.min:
                shape = "x".join("?" if d == -1 else str(d) for d in tensor.shape)
                raise LoopcError(f"input {name!r} has dynamic dims ({shape}); give its shape with --shapes {name}:...")
            for dims in (self.min[name], self.opt[name], self.max[name]):
                _check_fits(name, tuple(tensor.shape), dims)
            profile.set_shape(name, self.min[name], self.opt[name], self.max[name])
        cfg.add_optimization_profile(profile)


def parse_shapes(spec: str | None) -> dict[str, Dims]:
    """``"x:1x3x224,y:4"`` → ``{"x": (1, 3, 224), "y": (4,)}``; a scalar is ``name:`` with no dims."""
    shapes: dict[str, Dims] = {}
    if not spec:
        return shapes
    for item in spec.split(","):
        name, sep, dims = item.strip().rpartition(":")
        if not sep or not name:
            raise LoopcError(f"shape {item!r} is not name:DxDxD")
        try:
            shapes[name] = tuple(int(d) for d in dims.split("x")) if dims else ()
        except ValueError:
            raise LoopcError(f"shape {item!r}: dimensions must be integers joined by 'x'") from None
        if any(d < 0 for d in shapes[name]):
            raise LoopcError(f"shape {item!r}: dimensions must not be negative")
    return shapes


def _check_fits(name: str, declared: Dims, dims: Dims) -> None:
    if len(dims) != len(declared) or any(d != -1 and d != g for d, g in zip(declared, dims)):
        decl = "x".join("?" if d == -1 else str(d) for d in declared)
        raise LoopcError(f"--shapes {name}:{'x'.join(map(str, dims))} does not fit the input's shape {decl}")

