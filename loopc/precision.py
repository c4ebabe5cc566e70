"""``--fp16`` / ``--bf16`` / ``--fp16-state``: which half type an engine computes in, and what the build did for it.

On TensorRT-RTX, whose networks are strongly typed, the half types are loopc's to write: the half-precision
pass (:mod:`loopc.passes.half_precision`) retypes the IR before the network is made. On datacenter TensorRT
the flags keep their builder meaning (``BuilderFlag.FP16`` / ``BF16``: TensorRT picks each layer's precision).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loopc.errors import LoopcError
from loopc.spelling import option

#: How far a half network's output may stray from the float32 network's: its largest error over the float32
#: output's largest magnitude. Float16 keeps 11 significant bits, bfloat16 8.
HALF_TOLERANCE = {"fp16": 1e-2, "bf16": 6e-2}


@dataclass(frozen=True)
class Precision:
    """What the user asked for: a half type (``fp16``, ``bf16``) or none, and whether loop state goes half too."""

    half: str | None = None
    half_state: bool = False

    @classmethod
    def of(cls, fp16: bool = False, bf16: bool = False, half_state: bool = False) -> Precision:
        if fp16 and bf16:
            raise LoopcError(f"{option('--fp16')} and {option('--bf16')} ask for two half types; give one")
        if half_state and not (fp16 or bf16):
            raise LoopcError(f"{option('--fp16-state')} puts loop state in the half type, which {option('--fp16')} or "
                             f"{option('--bf16')} chooses")
        return cls("fp16" if fp16 else "bf16" if bf16 else None, half_state)

    def __bool__(self) -> bool:
        return self.half is not None

    def __str__(self) -> str:
        """``fp32``, ``fp16``, ``bf16``, or ``fp16 (state too)``."""
        return (self.half or "fp32") + (" (state too)" if self.half_state else "")


@dataclass
class PrecisionReport:
    """What a half-precision build did: the report's ``precision``."""

    half: str
    half_state: bool
    #: How the engine got its types: loopc's pass (TensorRT-RTX) or TensorRT's builder flag.
    by: str = "loopc"
    half_nodes: int = 0
    casts: int = 0
    #: Constants stored in half (the weights).
    weights: int = 0
    #: Each node (or loop state) left computing in float32, and why.
    kept_fp32: list[dict[str, str]] = field(default_factory=list)
    #: The float32 build's engine size, to set against the report's ``engine_bytes``.
    fp32_engine_bytes: int = 0

    def kept_by_reason(self) -> dict[str, int]:
        return dict(Counter(entry["reason"] for entry in self.kept_fp32).most_common())

    @classmethod
    def of_pass(cls, precision: Precision, half_pass: Any) -> PrecisionReport:
        stats = half_pass.stats
        return cls(precision.half or "", precision.half_state, half_nodes=stats.get("half_nodes", 0),
                   casts=stats.get("casts", 0), weights=stats.get("weights", 0),
                   kept_fp32=[{"node": k.node, "op": k.op, "reason": k.reason} for k in half_pass.kept])
