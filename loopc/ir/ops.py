"""What loopc may rely on about each ONNX op, stated once: one immutable :class:`OpTraits` per op type.

A pass asks :func:`traits` what an op is (elementwise? which attribute names an axis? can it trap?)
instead of keeping its own list, so adding an op is adding its record here, and a fact corrected
here is corrected for every reader. An op without a record gets :data:`UNKNOWN`, which claims
nothing: every question a pass may act on answers "no" for it, and it may trap in any way.

Each fact is a promise of ONNX's semantics (the newest opset, the form the frontend upgrades every
node to), for every input the op's type constraints admit; ``tests/ir/test_ops.py`` checks the
facts ONNX's schemas can tell, and some of the others against onnxruntime.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

#: How an elementwise op's operands broadcast: NumPy-style among all of them ("multi"), or the
#: later operands to the first one's shape ("uni": PRelu's slope), or not at all (None).
Broadcast = Literal["multi", "uni"] | None
#: In which type an op computes when the model runs in half precision (see :mod:`loopc.passes.half_precision`):
#: in half ("half": products, arithmetic, activations), in float32 whatever its operands ("float": what
#: accumulates many terms or normalizes, where half's 11 bits lose the result), or in its operands' type
#: ("follow": what moves, selects or compares elements, which rounds nothing).
Precision = Literal["half", "float", "follow"]
#: How :mod:`loopc.passes._batching` runs an op on operands with a new leading (trip) axis.
LiftRule = Literal["elementwise", "axis", "axes", "matmul", "gemm", "transpose", "slice", "reshape", "expand"]


class Trap(enum.Flag):
    """Ways an op may abort a run (raise in onnxruntime, fault in native code) for some operand *values*,
    when its operands' types and shapes are valid. A result that is only an unspecified value (a NaN
    cast to an integer, an integer overflow) is no trap: a value never read harms nothing, which is
    what lets a pass compute a node for loop trips that never run."""

    NONE = 0
    #: Integer division (Div, Mod) by zero; a floating-point one gives inf or NaN and cannot trap.
    ZERO_DIVISOR = enum.auto()
    #: An index operand out of range (Gather, GatherElements, ScatterND, ...).
    INDEX = enum.auto()
    #: A shape, size, count or axes operand that does not fit the data (Reshape of a wrong size,
    #: an Expand to an incompatible shape, Split sizes that do not add up, a Range of step 0).
    SHAPE = enum.auto()
    ANY = ZERO_DIVISOR | INDEX | SHAPE


@dataclass(frozen=True)
class AxisParam:
    """An attribute or operand that names dims of operand 0 (of the result when ``of_result``).

    Attributes:
        name: the attribute's name, or the operand's formal name in the schema.
        operand: the operand's position when the axes are an operand, None for an attribute.
        many: a list of axes (INTS, a 1-D tensor), not one axis (INT, a scalar).
        default: the axis (or axes) ONNX uses when none is given; None when the parameter is required
            or its absence means "all axes" (a full reduction, a flattened Compress).
        of_result: the axes count the result's dims (Unsqueeze, OneHot), not operand 0's.
        to_rank: the axis may also equal the rank (Flatten's ``axis=r``): its range is [-r, r], not [-r, r-1].
    """

    name: str
    operand: int | None = None
    many: bool = False
    default: int | tuple[int, ...] | None = None
    of_result: bool = False
    to_rank: bool = False


@dataclass(frozen=True)
class Lift:
    """How the op runs once on operands stacked along a new leading trip axis (see
    :mod:`loopc.passes._batching`, which holds the rule named here); ``fixed`` lists the operands
    (shapes, axes, bounds, indices) that must not be stacked for the rule to hold."""

    rule: LiftRule
    fixed: tuple[int, ...] = ()


@dataclass(frozen=True)
class OpTraits:
    """The facts about one op type that passes rely on. A record claims no property it does not name, and
    no trap: a record must name the ways its op traps. It is foldable unless it says otherwise.

    Attributes:
        op: the ONNX op type.
        elementwise: each result element is a function of the operands' elements at the same index
            (after broadcasting, see ``broadcast``) and of the attributes alone; the result has the
            broadcast shape. Reordering, slicing or stacking the operands alike does the same to the result.
        broadcast: how the operands of an elementwise op broadcast (see :data:`Broadcast`).
        same_shape: every result has operand 0's shape (unary elementwise ops, Softmax, Scatter*, ...).
        reshapes: the result holds operand 0's elements in the same row-major order, only its shape differs
            (Reshape, Flatten, Squeeze, Unsqueeze, Identity): a one-element value passes through unchanged.
        copies: every element of every result is an element of operand 0 (moved, repeated, selected;
            none computed), so a result's elements lie in operand 0's range.
        permutes: the result holds exactly operand 0's elements, rearranged (Transpose, DepthToSpace):
            it has as many elements.
        shape_only: the results depend on operand 0's shape alone, never on its elements (Shape, Size).
        axes: the attributes and operands naming dims (see :class:`AxisParam`).
        reduction: a Reduce* op: it reduces operand 0 over the axes operand 1 lists (all when none given,
            unless ``noop_with_empty_axes``), keeping them as 1s when ``keepdims``.
        traps: how the op may abort a run for some operand values (see :class:`Trap`);
            ``Trap.ZERO_DIVISOR`` applies only to integer operands (see :func:`may_trap`).
        foldable: the result is a function of the operands' values alone (no randomness, no subgraph,
            no sequence state), so constant folding may compute it once, ahead of time.
        value_shaped: the result's size follows operand *values*, not just their shapes (Expand, Range,
            NonZero): its size is unknown until the operands' values are.
        numpy: a NumPy function that computes the op exactly as ONNX does for every type it takes.
        lift: how the op runs on operands with a new leading trip axis, None when loopc has no rule.
        matrix_product: multiplies matrices (MatMul, Gemm, Conv, ...): the heavy work worth moving a
            loop's computation for.
        precision: the type it computes in when the model runs in half (see :data:`Precision`); float32
            unless the record says otherwise.
        shape_operands: the operands TensorRT takes as *shape tensors* (sizes, slice bounds, counts, axes),
            which it must know before a layer runs: inside a loop they may not change between trips
            (see :mod:`loopc.ir.target`).
        data_sized: the result's size follows operand values that are data, not sizes (a detector's box
            count): TensorRT sizes it at run time, which it cannot do inside a loop from per-trip values.
        extends: ``(result, operand, axis)``: the result is the operand extended along ``axis`` (Attention's
            present keys are its past keys and the new ones): a loop that carries it grows on every trip.
        shape_arithmetic: TensorRT evaluates it in shape calculations (integer arithmetic on dims and integer
            inputs), so a trip count or a size computed with it is known when a loop starts.
        pad_identity: what an element must hold for the op's result over its axis (or axes) to be as if the
            element were absent (0 for a sum, -inf for a max or a softmax); a padded value holds it in its
            padding before such an op reads it (:mod:`loopc.passes._padding`). None: no such value.
    """

    op: str
    elementwise: bool = False
    broadcast: Broadcast = None
    same_shape: bool = False
    reshapes: bool = False
    copies: bool = False
    permutes: bool = False
    shape_only: bool = False
    axes: tuple[AxisParam, ...] = ()
    reduction: bool = False
    traps: Trap = Trap.NONE
    foldable: bool = True
    value_shaped: bool = False
    numpy: Callable[..., Any] | None = None
    lift: Lift | None = None
    matrix_product: bool = False
    precision: Precision = "float"
    shape_operands: tuple[int, ...] = ()
    data_sized: bool = False
    shape_arithmetic: bool = False
    pad_identity: float | None = None
    extends: tuple[tuple[int, int, int], ...] = ()

    @property
    def axis(self) -> AxisParam | None:
        """The single-axis ``axis`` attribute that indexes operand 0's dims in [-r, r-1], if the op has one."""
        return next((a for a in self.axes if a.name == "axis" and a.operand is None and not a.many
                     and not a.of_result and not a.to_rank), None)

    @property
    def axes_operand(self) -> AxisParam | None:
        """The operand listing axes (Squeeze, Unsqueeze, Reduce*, Slice, Pad), if the op takes one."""
        return next((a for a in self.axes if a.operand is not None and a.many), None)


#: What an op without a record is: nothing claimed, any trap possible. Constant folding still offers it
#: to ONNX's reference evaluator, which refuses what it cannot run.
UNKNOWN = OpTraits("?", traps=Trap.ANY)

_REGISTRY: dict[str, OpTraits] = {}


def _add(ops: Iterable[str], **facts: Any) -> None:
    for op in ops:
        if op in _REGISTRY:
            raise ValueError(f"two trait records for {op}")
        _REGISTRY[op] = OpTraits(op, **facts)


def _axis(default: int | tuple[int, ...] | None, name: str = "axis", **more: Any) -> tuple[AxisParam, ...]:
    return (AxisParam(name, default=default, **more),)


_AXES_OPERAND = (AxisParam("axes", operand=1, many=True),)

# ------------------------------------------------------------------------------ elementwise ops

_UNARY: dict[str, Any] = dict(elementwise=True, same_shape=True, lift=Lift("elementwise"))
_add(["Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Celu", "Cos", "Cosh", "Elu", "Erf", "Exp", "Gelu",
      "HardSigmoid", "HardSwish", "LeakyRelu", "Log", "Mish", "Reciprocal", "Relu", "Selu", "Shrink", "Sigmoid",
      "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Swish", "Tan", "Tanh", "ThresholdedRelu"], **_UNARY,
     precision="half")
_add(["Abs", "Ceil", "Floor", "Round", "Sign", "IsInf", "IsNaN", "Cast", "BitwiseNot"], **_UNARY, precision="follow")
_add(["Identity"], **_UNARY, reshapes=True, copies=True, precision="follow")
_add(["Neg"], **_UNARY, numpy=np.negative, precision="follow")
_add(["Not"], **_UNARY, numpy=np.logical_not)
_add(["Clip"], elementwise=True, same_shape=True, lift=Lift("elementwise", fixed=(1, 2)), precision="half")

_BINARY: dict[str, Any] = dict(elementwise=True, broadcast="multi", lift=Lift("elementwise"))
_add(["And"], **_BINARY, numpy=np.logical_and)
_add(["Or"], **_BINARY, numpy=np.logical_or)
_add(["Xor"], **_BINARY, numpy=np.logical_xor)
_add(["Add"], **_BINARY, numpy=np.add, precision="half")
_add(["Sub"], **_BINARY, numpy=np.subtract, precision="half")
_add(["Mul"], **_BINARY, numpy=np.multiply, precision="half")
_add(["Equal"], **_BINARY, numpy=np.equal, precision="follow")
_add(["Greater"], **_BINARY, numpy=np.greater, precision="follow")
_add(["GreaterOrEqual"], **_BINARY, numpy=np.greater_equal, precision="follow")
_add(["Less"], **_BINARY, numpy=np.less, precision="follow")
_add(["LessOrEqual"], **_BINARY, numpy=np.less_equal, precision="follow")
_add(["Div"], **_BINARY, traps=Trap.ZERO_DIVISOR, precision="half")
_add(["Mod"], **_BINARY, traps=Trap.ZERO_DIVISOR)
_add(["Mean", "Sum"], **_BINARY, precision="half")
_add(["Max", "Min", "Where"], **_BINARY, precision="follow")
_add(["Pow"], **_BINARY)  # x**2 of a norm overflows half from |x| = 256
_add(["BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"], **_BINARY)
_add(["PRelu"], elementwise=True, broadcast="uni", same_shape=True, lift=Lift("elementwise"), precision="half")

# ----------------------------------------------------------------- same shape, not elementwise

_add(["Softmax", "LogSoftmax"], same_shape=True, axes=_axis(-1), lift=Lift("axis"))
_add(["Hardmax"], same_shape=True, axes=_axis(-1), precision="follow")
_add(["LpNormalization"], same_shape=True, axes=_axis(-1))
_add(["CumSum", "CumProd"], same_shape=True, axes=(AxisParam("axis", operand=1),))
_add(["LRN", "InstanceNormalization", "GroupNormalization"], same_shape=True)
_add(["CastLike", "Dropout", "Trilu"], same_shape=True, precision="follow")
_add(["RotaryEmbedding"], same_shape=True, precision="half")
_add(["MeanVarianceNormalization"], same_shape=True, axes=_axis((0, 2, 3), "axes", many=True))
_add(["RMSNormalization"], same_shape=True, axes=_axis(-1))
_add(["QuantizeLinear", "DequantizeLinear"], same_shape=True)
_add(["ReverseSequence"], same_shape=True, copies=True, permutes=True, traps=Trap.SHAPE, precision="follow",
     axes=(AxisParam("batch_axis", default=1), AxisParam("time_axis", default=0)))
_add(["ScatterElements", "Scatter"], same_shape=True, axes=_axis(0), traps=Trap.INDEX, precision="follow")
_add(["ScatterND"], same_shape=True, traps=Trap.INDEX, precision="follow")
_add(["TensorScatter"], same_shape=True, axes=_axis(-2), traps=Trap.INDEX, precision="follow")

# -------------------------------------------------------------------------- moving elements

_add(["Reshape"], reshapes=True, copies=True, traps=Trap.SHAPE, lift=Lift("reshape", fixed=(1,)), precision="follow")
_add(["Flatten"], reshapes=True, copies=True, axes=_axis(1, to_rank=True), precision="follow")
_add(["Squeeze"], reshapes=True, copies=True, traps=Trap.SHAPE, axes=_AXES_OPERAND, lift=Lift("axes", fixed=(1,)), precision="follow")
_add(["Unsqueeze"], reshapes=True, copies=True, traps=Trap.SHAPE, lift=Lift("axes", fixed=(1,)),
     axes=(AxisParam("axes", operand=1, many=True, of_result=True),), precision="follow")
_add(["Transpose"], copies=True, permutes=True, lift=Lift("transpose"), precision="follow")
_add(["DepthToSpace", "SpaceToDepth"], copies=True, permutes=True, precision="follow")
_add(["Expand"], copies=True, traps=Trap.SHAPE, value_shaped=True, lift=Lift("expand", fixed=(1,)), precision="follow")
_add(["Tile"], copies=True, traps=Trap.SHAPE, value_shaped=True, precision="follow")
_add(["Slice"], copies=True, traps=Trap.SHAPE, axes=(AxisParam("axes", operand=3, many=True),), lift=Lift("slice", fixed=(1, 2, 3, 4)), precision="follow")
_add(["Split"], copies=True, traps=Trap.SHAPE, axes=_axis(0), lift=Lift("axis", fixed=(1,)), precision="follow")
_add(["Concat"], axes=_axis(None), lift=Lift("axis"), precision="follow")
_add(["Gather"], copies=True, traps=Trap.INDEX, axes=_axis(0), lift=Lift("axis", fixed=(1,)), precision="follow")
_add(["GatherElements"], copies=True, traps=Trap.INDEX, axes=_axis(0), precision="follow")
_add(["GatherND"], copies=True, traps=Trap.INDEX, precision="follow")
_add(["Compress"], copies=True, traps=Trap.SHAPE, value_shaped=True, axes=_axis(None), precision="follow")

# ---------------------------------------------------------------------------- reductions, axes

_REDUCE = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
           "ReduceProd", "ReduceSum", "ReduceSumSquare")
_add([op for op in _REDUCE if op not in ("ReduceMax", "ReduceMin")], reduction=True, traps=Trap.SHAPE,
     axes=_AXES_OPERAND, lift=Lift("axes", fixed=(1,)))
_add(["ReduceMax", "ReduceMin"], reduction=True, traps=Trap.SHAPE, axes=_AXES_OPERAND, lift=Lift("axes", fixed=(1,)),
     precision="follow")
_add(["ArgMax", "ArgMin"], axes=_axis(0), lift=Lift("axis"), precision="follow")
_add(["TopK"], traps=Trap.SHAPE, axes=_axis(-1), precision="follow")
_add(["LayerNormalization"], axes=_axis(-1))
_add(["OneHot"], value_shaped=True, axes=_axis(-1, of_result=True), precision="follow")
_add(["Pad"], traps=Trap.SHAPE, value_shaped=True, axes=(AxisParam("axes", operand=3, many=True),), precision="follow")
_add(["Resize"], traps=Trap.SHAPE, value_shaped=True, axes=_axis(None, "axes", many=True), precision="half")
_add(["DFT"], axes=(AxisParam("axis", operand=2),))

# ------------------------------------------------------------------------ products and the rest

_add(["MatMul"], matrix_product=True, lift=Lift("matmul"), precision="half")
_add(["GroupedMatMul"], matrix_product=True, traps=Trap.INDEX, precision="half")
_add(["MatMulInteger"], matrix_product=True)
_add(["Gemm"], matrix_product=True, lift=Lift("gemm"), precision="half")
_add(["Einsum", "Conv", "ConvTranspose"], matrix_product=True, precision="half")
_add(["Shape", "Size"], shape_only=True, precision="follow")
_add(["Constant", "Loop", "If", "Scan", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
      "Bernoulli", "Multinomial", "SequenceEmpty", "SequenceInsert", "SequenceConstruct", "ConcatFromSequence"],
     foldable=False)
_add(["ConstantOfShape", "Range", "Upsample", "Col2Im"], value_shaped=True, traps=Trap.SHAPE)
_add(["CenterCropPad"], value_shaped=True, traps=Trap.SHAPE, axes=_axis(None, "axes", many=True), precision="follow")
_add(["NonZero", "StringSplit"], value_shaped=True, precision="follow")
_add(["Unique"], value_shaped=True, axes=_axis(None), precision="follow")
_add(["DynamicQuantizeLinear", "GridSample", "STFT", "BlackmanWindow", "HammingWindow", "HannWindow", "LpPool",
      "GlobalAveragePool", "GlobalLpPool"])
_add(["BatchNormalization", "SwiGLU", "Attention", "CausalConvWithState", "AveragePool"], precision="half")
_add(["EyeLike", "MaxPool", "GlobalMaxPool"], precision="follow")
_add(["MaxUnpool"], traps=Trap.INDEX, precision="follow")
_add(["RoiAlign", "NonMaxSuppression"], traps=Trap.INDEX)


# ------------------------------------------------------------------- what TensorRT takes as shapes


def _also(ops: Iterable[str], **facts: Any) -> None:
    """Add facts to records made above (TensorRT's facts are stated together, apart from ONNX's)."""
    for op in ops:
        _REGISTRY[op] = replace(_REGISTRY[op], **facts)


for _op, _operands in {
        "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "ConstantOfShape": (0,),
        "Range": (0, 1, 2), "Resize": (1, 2, 3), "Upsample": (1,), "Pad": (1, 3), "TopK": (1,), "Split": (1,),
        "OneHot": (1,), "CenterCropPad": (1, 2), "Squeeze": (1,), "Unsqueeze": (1,), "Col2Im": (1, 2),
        "CumSum": (1,), "CumProd": (1,), **{op: (1,) for op in _REDUCE}}.items():
    _also([_op], shape_operands=_operands)
_also(["Attention"], extends=((1, 4, -2), (2, 5, -2)))
_also(["NonZero", "NonMaxSuppression", "Compress", "Unique", "StringSplit"], data_sized=True)
_also(["Shape", "Size", "Constant", "Cast", "Identity", "Add", "Sub", "Mul", "Div", "Max", "Min", "Neg", "Abs",
       "Gather", "Squeeze", "Unsqueeze", "Reshape", "Flatten", "Concat", "Slice", "Less", "LessOrEqual", "Greater",
       "GreaterOrEqual", "Equal", "Not", "And", "Or", "Xor", "Where"], shape_arithmetic=True)


def _identity(value: float, ops: Iterable[str]) -> None:
    for op in ops:
        _REGISTRY[op] = replace(_REGISTRY[op], pad_identity=value)


_identity(0.0, ["ReduceSum", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum"])
_identity(-np.inf, ["ReduceMax", "ReduceLogSumExp", "ArgMax", "Softmax", "LogSoftmax"])
_identity(np.inf, ["ReduceMin", "ArgMin"])
_identity(1.0, ["ReduceProd"])

# ----------------------------------------------------------------------------------- queries


def traits(op: str) -> OpTraits:
    """The facts about ``op``; :data:`UNKNOWN` (renamed to ``op``) for an op without a record."""
    found = _REGISTRY.get(op)
    return found if found is not None else replace(UNKNOWN, op=op)


def known_ops() -> list[str]:
    """Every op type with a record, sorted."""
    return sorted(_REGISTRY)


def may_trap(op: str, dtypes: Iterable[np.dtype[Any] | None] = ()) -> Trap:
    """How a node of ``op`` with operands of ``dtypes`` (None where unknown) may trap: a zero divisor
    counts only when some operand may be an integer (a floating-point Div by zero is inf or NaN)."""
    found = traits(op).traps
    if Trap.ZERO_DIVISOR in found:
        listed = list(dtypes)
        if listed and all(d is not None and np.dtype(d).kind in "fc" for d in listed):
            found &= ~Trap.ZERO_DIVISOR
    return found
