"""Conv and ConvTranspose as IConvolutionLayer / IDeconvolutionLayer; CausalConvWithState as a depthwise
convolution of its state and input.

TensorRT convolves 2 or 3 spatial axes, so a 1-D op gets a trailing unit axis (input, kernel and
every per-axis attribute) and loses it after, as onnx-tensorrt does. Weights known when building are
the layer's kernel and bias weights; computed ones are its inputs 1 and 2.

Padding is made explicit wherever ONNX fixes it, so that the layer's own padding mode never has to
agree with ONNX's: ``auto_pad`` SAME pads of static spatial axes are computed here, and a dynamic
axis uses TensorRT's SAME mode only where its documented padding equals ONNX's (a dilated kernel at
least as long as the stride). A ConvTranspose's output is the full deconvolution less its pads,
plus ``output_padding`` zeros at the end: TensorRT's post padding crops, so output padding larger
than the end pad (and an ``output_shape`` beyond the full size) becomes a zero-filling slice, with
the bias added after it, as ONNX adds the bias to those elements too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, np_dtype
from loopc.backend.trt.ops.pool_windows import AUTO_PADS, same_pads, split_pads
from loopc.backend.trt.ops.sampling import sampled_slice
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node, Value, text_attr
from loopc.semantics.attributes import attr
from loopc.trt import trt

#: Spatial axes TensorRT convolves; a 1-D op is lowered to 2-D.
_MAX_SPATIAL = 3


def _ints(node: Node, name: str) -> list[int] | None:
    value = node.attrs.get(name)
    return None if value is None else [int(v) for v in value]


def _attribute_refusal(node: Node) -> str | None:
    """What no input shape can make convertible: an unknown auto_pad, negative pads, too many axes."""
    auto_pad = text_attr(node, "auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        return f"auto_pad={auto_pad!r} (ONNX defines {', '.join(AUTO_PADS)})"
    pads = _ints(node, "pads") or []
    if any(p < 0 for p in pads):
        return f"negative pads {pads} (TensorRT pads a convolution by >= 0)"
    for name in ("strides", "dilations"):
        if any(v < 1 for v in _ints(node, name) or []):
            return f"{name}={_ints(node, name)} (each must be >= 1)"
    if int(node.attrs.get("group", 1)) < 1:
        return f"group={node.attrs.get('group')} (it must be >= 1)"
    kernel = _ints(node, "kernel_shape")
    if kernel is not None and len(kernel) > _MAX_SPATIAL:
        return f"a {len(kernel)}-D {node.op}; TensorRT convolves 1 to 3 spatial axes"
    if any(p < 0 for p in _ints(node, "output_padding") or []):
        return f"negative output_padding {_ints(node, 'output_padding')}"
    return None


@dataclass(frozen=True)
class _Window:
    """Per-spatial-axis attributes of one node, with ONNX's defaults filled in."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    auto_pad: str

    @property
    def extents(self) -> list[int]:
        """The dilated kernel, (k - 1) d + 1: how far one window reaches."""
        return [(k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations)]


def _window(node: Node, weight_shape: Sequence[int], spatial: int) -> _Window:
    """The kernel is ``kernel_shape``, else the weights' spatial dims (which must then be known)."""
    from_weights = [int(d) for d in weight_shape[2:]]
    kernel = _ints(node, "kernel_shape")
    if kernel is None:
        if -1 in from_weights:
            raise unsupported(node, f"a computed weight of dynamic spatial dims {from_weights} without "
                                    "kernel_shape", hint="give the node kernel_shape")
        kernel = from_weights
    elif any(w not in (-1, k) for w, k in zip(from_weights, kernel)):
        raise unsupported(node, f"kernel_shape {kernel} that differs from the weights' spatial dims {from_weights}")
    values = {name: _ints(node, name) or [1] * spatial for name in ("strides", "dilations")}
    for name, given in (("kernel_shape", kernel), *values.items()):
        if len(given) != spatial:
            raise unsupported(node, f"{name} {given} for an input with {spatial} spatial axes")
    return _Window(kernel, values["strides"], values["dilations"], text_attr(node, "auto_pad", "NOTSET"))


def _pads(node: Node, spatial: int) -> tuple[list[int], list[int]]:
    """The explicit ``pads`` as (begins, ends); zeros when absent."""
    pads = _ints(node, "pads") or [0] * (2 * spatial)
    if len(pads) != 2 * spatial:
        raise unsupported(node, f"pads {pads} for an input with {spatial} spatial axes (it needs {2 * spatial})")
    return pads[:spatial], pads[spatial:]


@dataclass
class _Operands:
    """The input, kernel and bias as the layer takes them (a 1-D op's with its unit axis added)."""

    x: Any
    kernel: Any  # trt.Weights or ITensor
    bias: Any  # trt.Weights, ITensor or None
    kernel_array: np.ndarray | None
    bias_array: np.ndarray | None


def _as_layer_operand(ctx: ConversionContext, node: Node, value: Value | None, x: Any, unit_axis: bool,
                      what: str) -> tuple[Any, np.ndarray | None]:
    """A constant as weights of the input's type (kept alive until the build) and its array, else a tensor.

    TensorRT wants the weights in the input's type, and its Python API takes no bfloat16 arrays: a
    bfloat16 constant is a float32 constant tensor cast to BF16, like a computed operand."""
    if value is None:
        return None, None
    array = ctx.constant_of(value)
    if array is None:
        tensor = ctx.cast(ctx.get(value, node), x.dtype, node, f"{what}_typed")
    else:
        typed = np.ascontiguousarray(array, dtype=np_dtype(x.dtype))
        if unit_axis:
            typed = typed.reshape(typed.shape + (1,))
        if x.dtype != trt().bfloat16:
            return ctx.weights(typed), typed
        return ctx.cast(ctx.constant(typed, node, what), x.dtype, node, f"{what}_bf16"), None
    return (ctx.unsqueeze(tensor, [len(tensor.shape)], node, f"{what}_2d") if unit_axis else tensor), None


def _operands(ctx: ConversionContext, node: Node, compute: Any = None) -> tuple[_Operands, int, list[int]]:
    """The layer's operands (in TensorRT type ``compute`` if given), the op's spatial rank, and the
    weights' shape (a computed one's may hold -1)."""
    x = ctx.get(node.inputs[0], node)
    shape = list(x.shape)
    spatial = len(shape) - 2
    if not 1 <= spatial <= _MAX_SPATIAL:
        raise unsupported(node, f"a {node.op} of a rank-{len(shape)} input; TensorRT convolves [N, C, D1 (, D2, D3)]")
    if x.dtype not in (trt().float32, trt().float16, trt().bfloat16):
        raise unsupported(node, f"a {node.op} of {x.dtype} tensors; TensorRT convolves floating-point tensors")
    if len(node.inputs) < 2 or node.inputs[1] is None:
        raise unsupported(node, f"a {node.op} without weights (input 1)")
    weights = ctx.constant_of(node.inputs[1])
    weight_shape = list(weights.shape) if weights is not None else list(ctx.get(node.inputs[1], node).shape)
    if len(weight_shape) != len(shape):
        raise unsupported(node, f"weights of rank {len(weight_shape)} for a rank-{len(shape)} input")
    if shape[1] == -1:
        raise unsupported(node, "a dynamic channel count (input dim 1); TensorRT needs it when it builds",
                          hint="give the input a static channel dim")
    x = x if compute is None else ctx.cast(x, compute, node, "x_typed")
    unit_axis = spatial == 1
    if unit_axis:
        x = ctx.unsqueeze(x, [3], node, "x_2d")
    kernel, kernel_array = _as_layer_operand(ctx, node, node.inputs[1], x, unit_axis, "kernel")
    bias_value = node.inputs[2] if len(node.inputs) > 2 else None
    bias, bias_array = _as_layer_operand(ctx, node, bias_value, x, False, "bias")
    return _Operands(x, kernel, bias, kernel_array, bias_array), spatial, weight_shape


def _groups(node: Node, channels: int, maps: int, weight_channels: int | None) -> int:
    """``group``, checked against the channel counts (``weight_channels``: a Conv's weights' dim 1)."""
    group = int(node.attrs.get("group", 1))
    if channels % group or maps % group or weight_channels not in (None, -1, channels // group):
        layout = "[M, C/group, k...]" if weight_channels is not None else "[C, M/group, k...]"
        raise unsupported(node, f"group={group} with {channels} input channels and {maps} output maps "
                                f"(weights are {layout})")
    return group


def _add_layer(ctx: ConversionContext, node: Node, ops: _Operands, maps: int, kernel: list[int],
               transposed: bool, with_bias: bool) -> Any:
    """The (de)convolution layer with its kernel and, if ``with_bias``, its bias, as weights or inputs."""
    T = trt()
    empty = T.Weights()
    kernel_weights = ops.kernel if isinstance(ops.kernel, T.Weights) else empty
    bias = ops.bias if with_bias else None
    bias_weights = bias if isinstance(bias, T.Weights) else empty
    add = ctx.network.add_deconvolution_nd if transposed else ctx.network.add_convolution_nd
    layer = add(ops.x, maps, tuple(kernel), kernel_weights, bias_weights)
    if not isinstance(ops.kernel, T.Weights):
        layer.set_input(1, ops.kernel)
    if bias is not None and not isinstance(bias, T.Weights):
        layer.set_input(2, bias)
    return layer


def _lowered(values: Sequence[int], spatial: int, unit: int) -> tuple[int, ...]:
    """Per-axis values of a 1-D op with the unit axis's value appended."""
    return tuple(values) + ((unit,) if spatial == 1 else ())


def _finish(ctx: ConversionContext, node: Node, layer: Any, spatial: int, last: bool) -> Any:
    """The layer's output, its unit axis dropped for a 1-D op; the last layer takes the node's own name."""
    if spatial != 1:
        return ctx.out(layer, node, "" if last else "conv")
    y = ctx.out(layer, node, "conv")
    return ctx.squeeze(y, [3], node, "" if last else "1d")


# -- Conv -----------------------------------------------------------------------------------------


def _conv_padding(node: Node, window: _Window, sizes: Sequence[int]) -> tuple[str, list[int], list[int]]:
    """(TensorRT padding mode, pre, post) for ONNX's padding of a Conv (module docstring)."""
    spatial = len(sizes)
    if window.auto_pad == "VALID":
        return "EXPLICIT_ROUND_DOWN", [0] * spatial, [0] * spatial
    if window.auto_pad == "NOTSET":
        begins, ends = _pads(node, spatial)
        return "EXPLICIT_ROUND_DOWN", begins, ends
    upper = window.auto_pad == "SAME_UPPER"
    if all(size != -1 or dk == 1 for size, dk in zip(sizes, window.extents)):
        pre, post = [], []
        for size, s, dk in zip(sizes, window.strides, window.extents):
            # ceil(size / s) outputs; a unit dilated kernel on a dynamic axis needs none
            begin, end = (0, 0) if size == -1 else same_pads(size, s, dk, upper)
            pre.append(begin)
            post.append(end)
        return "EXPLICIT_ROUND_DOWN", pre, post
    short = [i + 2 for i, (s, dk) in enumerate(zip(window.strides, window.extents)) if dk < s]
    if not short:
        # TensorRT's SAME padding, floor((I - 1) / S) S + DK - I, is ONNX's when it cannot be negative
        return window.auto_pad, [0] * spatial, [0] * spatial
    raise unsupported(node, f"auto_pad={window.auto_pad} on dynamic spatial dims {list(sizes)} with a dilated "
                            f"kernel {window.extents} shorter than the strides {window.strides} on axes {short} "
                            "(TensorRT's SAME padding differs from ONNX's there)",
                      hint="give the input static spatial dims")


@converter("Conv", capability=_attribute_refusal)
def conv(ctx: ConversionContext, node: Node) -> None:
    ops, spatial, weight_shape = _operands(ctx, node)
    maps = weight_shape[0]
    if maps == -1:
        raise unsupported(node, "computed weights with a dynamic output-channel count (dim 0); TensorRT needs "
                                "num_output_maps when it builds")
    group = _groups(node, int(ops.x.shape[1]), maps, weight_shape[1])
    window = _window(node, weight_shape, spatial)
    mode, pre, post = _conv_padding(node, window, list(ctx.get(node.inputs[0], node).shape)[2:])
    layer = _add_layer(ctx, node, ops, maps, list(_lowered(window.kernel, spatial, 1)), False, True)
    layer.num_groups = group
    layer.stride_nd = _lowered(window.strides, spatial, 1)
    layer.dilation_nd = _lowered(window.dilations, spatial, 1)
    layer.padding_mode = getattr(trt().PaddingMode, mode)
    layer.pre_padding = _lowered(pre, spatial, 0)
    layer.post_padding = _lowered(post, spatial, 0)
    ctx.set(node.outputs[0], _finish(ctx, node, layer, spatial, last=True))


# -- ConvTranspose --------------------------------------------------------------------------------


def _transpose_pads(node: Node, window: _Window, sizes: Sequence[int],
                    output_padding: list[int]) -> tuple[list[int], list[int]]:
    """ONNX's (begins, ends) of a ConvTranspose: elements its full output loses at each end before
    ``output_padding`` is added; an end below 0 extends the output (an ``output_shape`` beyond it)."""
    spatial = len(sizes)
    shape = _ints(node, "output_shape")
    upper = window.auto_pad == "SAME_UPPER"
    if shape is not None:
        shape = shape[-spatial:] if len(shape) == spatial + 2 else shape
        if len(shape) != spatial:
            raise unsupported(node, f"output_shape {_ints(node, 'output_shape')} for {spatial} spatial axes")
        begins, ends = [], []
        for i, (size, s, dk, op, out) in enumerate(zip(sizes, window.strides, window.extents, output_padding, shape)):
            if size == -1:
                raise unsupported(node, f"output_shape with a dynamic input spatial dim (axis {i + 2}): its pads "
                                        "depend on it and TensorRT needs them when it builds",
                                  hint="give the input static spatial dims, or pads instead of output_shape")
            total = (size - 1) * s + dk + op - out
            # as onnxruntime does: pads split like SAME's (NOTSET like SAME_LOWER), a negative total extends the end
            begin, end = split_pads(total, upper) if total >= 0 else (0, total)
            begins.append(begin)
            ends.append(end)
        return begins, ends
    if window.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for s, dk, op in zip(window.strides, window.extents, output_padding):
            total = dk - s + op  # the output is input * stride long
            if total < 0:
                raise unsupported(node, f"auto_pad={window.auto_pad} with a dilated kernel {dk} plus output_padding "
                                        f"{op} shorter than the stride {s}: ONNX makes the output input x stride "
                                        "long, onnxruntime makes it the full deconvolution",
                                  hint="give explicit pads or output_shape")
            begin, end = split_pads(total, upper)
            begins.append(begin)
            ends.append(end)
        return begins, ends
    if window.auto_pad == "VALID":
        return [0] * spatial, [0] * spatial
    return _pads(node, spatial)


def _extend(ctx: ConversionContext, node: Node, y: Any, axes: list[int], extra: list[int]) -> Any:
    """``y`` with ``extra`` zeros after each of ``axes`` (a FILL slice, sized by a shape tensor when dynamic)."""
    shape = list(y.shape)
    if all(shape[a] != -1 for a in axes):
        size: Any = [shape[a] + e for a, e in zip(axes, extra)]
    else:
        lengths = ctx.gather1(ctx.shape_of(y, node, "full_shape"), axes, node, "lengths")
        size = ctx.elementwise(lengths, ctx.constant(np.array(extra, np.int64), node, "extra"), "SUM", node, "size")
    return sampled_slice(ctx, node, y, axes, [0] * len(axes), size, "FILL")


@converter("ConvTranspose", capability=_attribute_refusal)
def conv_transpose(ctx: ConversionContext, node: Node) -> None:
    narrow = ctx.get(node.inputs[0], node).dtype
    widened = narrow == trt().bfloat16  # TensorRT's builder has no bfloat16 deconvolution: computed in float32
    ops, spatial, weight_shape = _operands(ctx, node, trt().float32 if widened else None)
    if weight_shape[1] == -1:
        raise unsupported(node, "computed weights with a dynamic output-channel count (dim 1); TensorRT needs "
                                "num_output_maps when it builds")
    channels = int(ops.x.shape[1])
    if weight_shape[0] not in (-1, channels):
        raise unsupported(node, f"weights of {weight_shape[0]} input channels for an input of {channels}")
    group = int(attr(node, "group"))
    maps = weight_shape[1] * group
    _groups(node, channels, maps, None)
    window = _window(node, weight_shape, spatial)
    output_padding = _ints(node, "output_padding") or [0] * spatial
    if len(output_padding) != spatial:
        raise unsupported(node, f"output_padding {output_padding} for an input with {spatial} spatial axes")
    sizes = list(ctx.get(node.inputs[0], node).shape)[2:]
    begins, ends = _transpose_pads(node, window, sizes, output_padding)
    cropped = [max(end - op, 0) for end, op in zip(ends, output_padding)]
    extra = [max(op - end, 0) for end, op in zip(ends, output_padding)]
    extended = any(extra)
    kernel = list(_lowered(window.kernel, spatial, 1))
    dilations = _lowered(window.dilations, spatial, 1)
    if max(window.strides) > 1 and max(dilations) > 1:
        # TensorRT's builder refuses a deconvolution both strided and dilated: the kernel is dilated instead
        ops.kernel = _dilated_kernel(ctx, node, ops, [channels, weight_shape[1]] + kernel, dilations)
        kernel = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        dilations = (1,) * len(kernel)
    layer = _add_layer(ctx, node, ops, maps, kernel, True, not extended)
    layer.num_groups = group
    layer.stride_nd = _lowered(window.strides, spatial, 1)
    layer.dilation_nd = dilations
    layer.pre_padding = _lowered(begins, spatial, 0)
    layer.post_padding = _lowered(cropped, spatial, 0)
    y = _finish(ctx, node, layer, spatial, last=not (extended or widened))
    if extended:
        y = _extend(ctx, node, y, list(range(2, 2 + spatial)), extra)
        if ops.bias is not None:
            y = ctx.elementwise(y, _bias_column(ctx, node, ops, maps, spatial), "SUM", node, "biased")
    ctx.set(node.outputs[0], ctx.cast(y, narrow, node) if widened else y)


def _bias_column(ctx: ConversionContext, node: Node, ops: _Operands, maps: int, spatial: int) -> Any:
    """The bias as [1, M, 1, ...] to add after the output was extended."""
    shape = [1, maps] + [1] * spatial
    if ops.bias_array is not None:
        return ctx.constant(ops.bias_array.reshape(shape), node, "bias")  # already in the input's type
    return ctx.reshape(ops.bias, shape, node, "bias")


def _dilated_kernel(ctx: ConversionContext, node: Node, ops: _Operands, shape: list[int],
                    dilations: Sequence[int]) -> Any:
    """The kernel [C, M/G, k...] with d - 1 zeros between taps along each axis: (k - 1) d + 1 long, dilation 1."""
    spatial = len(dilations)
    dilated = shape[:2] + [(k - 1) * d + 1 for k, d in zip(shape[2:], dilations)]
    if ops.kernel_array is not None:
        array = np.zeros(dilated, ops.kernel_array.dtype)
        array[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in dilations)] = ops.kernel_array
        return ctx.weights(array)
    # each tap followed by d - 1 zeros ([.., k, 1] -> [.., k, d], zero filled), flattened, the trailing zeros cut
    taps = ctx.reshape(ops.kernel, shape[:2] + [n for k in shape[2:] for n in (k, 1)], node, "kernel_taps")
    axes = list(range(3, 3 + 2 * spatial, 2))
    spread = sampled_slice(ctx, node, taps, axes, [0] * spatial, list(dilations), "FILL", suffix="kernel_zeros")
    flat = ctx.reshape(spread, shape[:2] + [k * d for k, d in zip(shape[2:], dilations)], node, "kernel_spread")
    return sampled_slice(ctx, node, flat, list(range(2, 2 + spatial)), [0] * spatial, dilated[2:], "STRICT_BOUNDS",
                         suffix="kernel_dilated")


# -- CausalConvWithState --------------------------------------------------------------------------

_CAUSAL_ACTIVATIONS = ("none", "silu", "swish")


def _causal_refusal(node: Node) -> str | None:
    activation = text_attr(node, "activation", "none")
    if activation not in _CAUSAL_ACTIVATIONS:
        return f"activation={activation!r} (ONNX defines {', '.join(_CAUSAL_ACTIVATIONS)})"
    return None


@converter("CausalConvWithState", capability=_causal_refusal)
def causal_conv_with_state(ctx: ConversionContext, node: Node) -> None:
    """A depthwise causal 1-D convolution that carries its last k - 1 inputs: the past state (zeros
    when absent: the layer's pre padding) before the input, one group per channel, then y * sigmoid(y)
    for silu / swish; the present state is the last k - 1 positions of state and input together."""
    x = ctx.get(node.inputs[0], node)
    shape = list(x.shape)
    if len(shape) != 3 or shape[1] == -1:
        raise unsupported(node, f"a CausalConvWithState input of shape {shape}; it needs [N, C, L] with C static")
    channels = int(shape[1])
    weights = ctx.constant_of(node.inputs[1])
    weight_shape = list(weights.shape) if weights is not None else list(ctx.get(node.inputs[1], node).shape)
    if len(weight_shape) != 3 or weight_shape[0] not in (-1, channels) or weight_shape[1] not in (-1, 1) \
            or weight_shape[2] == -1:
        raise unsupported(node, f"weights of shape {weight_shape} for {channels} channels (they must be "
                                "[C, 1, k] with k static)")
    k = int(weight_shape[2])
    past = node.inputs[3] if len(node.inputs) > 3 else None
    padded = x if past is None else ctx.concat([ctx.get(past, node), x], node, "padded", axis=2)
    lowered = ctx.unsqueeze(padded, [3], node, "x_2d")
    kernel, kernel_array = _as_layer_operand(ctx, node, node.inputs[1], lowered, True, "kernel")
    bias_value = node.inputs[2] if len(node.inputs) > 2 else None
    bias, bias_array = _as_layer_operand(ctx, node, bias_value, lowered, False, "bias")
    layer = _add_layer(ctx, node, _Operands(lowered, kernel, bias, kernel_array, bias_array), channels, [k, 1],
                       False, True)
    layer.num_groups = channels
    layer.pre_padding = (k - 1 if past is None else 0, 0)
    layer.post_padding = (0, 0)
    activated = text_attr(node, "activation", "none") != "none"
    y = ctx.squeeze(ctx.out(layer, node, "conv"), [3], node, "conv_1d" if activated else "")
    if activated:
        sigmoid = ctx.out(ctx.network.add_activation(y, trt().ActivationType.SIGMOID), node, "sigmoid")
        y = ctx.elementwise(y, sigmoid, "PROD", node)
    ctx.set(node.outputs[0], y)
    if len(node.outputs) > 1:
        _carry_state(ctx, node, x, padded, past is not None, k)


def _carry_state(ctx: ConversionContext, node: Node, x: Any, padded: Any, has_past: bool, k: int) -> None:
    """present_state: ``padded`` from the input's length on (past state given), else the input's last
    k - 1 positions, zeros where it is shorter (a FILL slice starting before it)."""
    if k == 1:  # no past positions to carry: the present state is the input's first 0 positions
        ctx.set(node.outputs[1], sampled_slice(ctx, node, x, [2], [0], [0], "STRICT_BOUNDS", suffix="state"))
        return
    length = int(x.shape[2])
    source = padded if has_past else x
    if length != -1:
        start: Any = [length if has_past else length - (k - 1)]
    else:
        lengths = ctx.gather1(ctx.shape_of(x, node, "input_shape"), [2], node, "length")
        start = lengths if has_past else ctx.elementwise(
            lengths, ctx.constant(np.array([k - 1], np.int64), node, "carried"), "SUB", node, "state_start")
    state = sampled_slice(ctx, node, source, [2], start, [k - 1], "STRICT_BOUNDS" if has_past else "FILL",
                          suffix="state")
    ctx.set(node.outputs[1], state)
