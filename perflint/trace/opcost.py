"""FLOPs and bytes of one op from what `record_shapes` wrote (`Input Dims`, `Input type`, `Concrete
Inputs`) or from the profiler's own `flops` (with_flops=True), for the roofline.

Conventions (those of TraceLens's perf models, except where marked *):
- matmul family (mm, addmm, bmm, baddbmm, matmul, linear): 2*M*N*K per batch, plus M*N for a bias or
  beta*C term; bytes = A + B + output (+ the bias as recorded*: TraceLens assumes a bias of N elements).
- convolution: 2 * prod(weight[1:]) per output element, output shape from stride/padding/dilation in
  `Concrete Inputs`; *older traces do not record them: the output's spatial size is then read from the
  next op on the thread that takes a tensor of the output's batch and channels (the batch norm or
  activation after it), accepted only when some stride 1-4 and padding 0..R explain it.
  bytes = input + weight + output.
- attention (scaled_dot_product_attention and its flash / efficient / cudnn / cpu variants):
  4*B*H*Lq*Lkv*E forward (halved when causal), *backward 2.5x forward (FlashAttention's benchmark
  convention; TraceLens counts the recomputation explicitly); bytes = q + k + v + output (backward: also
  dout and the three gradients).
- elementwise: 1 FLOP per output element (the broadcast of the tensor inputs); bytes = inputs + output
  (the inputs an op reads: one for unary ops, two for binary, three for where/addcmul/addcdiv/lerp, so that
  an `out=` argument is not counted as read; none for fill_ and zero_).
- reductions: 1 FLOP per input element; bytes = input (*the output, usually small, is not counted: its
  shape depends on `dim`, which older traces do not record).
- normalisations (batch/layer/group/rms norm): *5 FLOPs per element (TraceLens: 2, or 5 when training,
  plus 6 per channel); softmax / log_softmax: 3 per element (TraceLens's); bytes = inputs + output.
Element sizes come from `Input type`; traces without it (before PyTorch 1.10) are read as float32 and
the result says so (`assumed_dtype`).
"""

from __future__ import annotations

import functools
import math
import re
from typing import NamedTuple

from perflint.trace.dtypes import dtype_size, precision
from perflint.trace.model import HostOp

GEMM, CONV, ATTENTION, ELEMENTWISE, REDUCTION, NORM = (
    "gemm", "convolution", "attention", "elementwise", "reduction", "normalization")


class OpCost(NamedTuple):
    category: str  # GEMM, CONV, ...
    flops: float
    bytes: float
    precision: str | None  # "fp32", "bf16", "fp8", "fp64": which peak applies
    assumed_dtype: bool  # no `Input type`: float32 assumed


_UNARY = {"relu", "sigmoid", "tanh", "gelu", "silu", "exp", "log", "neg", "abs", "sqrt", "rsqrt", "reciprocal",
          "sin", "cos", "erf", "hardtanh", "leaky_relu", "elu", "softplus", "clamp", "clamp_min", "clamp_max",
          "threshold", "fill", "zero", "dropout", "native_dropout", "bernoulli", "hardswish", "hardsigmoid",
          "mish", "sign", "floor", "ceil", "round", "log1p", "expm1", "pow"}
_BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "where", "threshold_backward", "sigmoid_backward",
           "tanh_backward", "gelu_backward", "silu_backward", "eq", "ne", "lt", "le", "gt", "ge", "addcmul",
           "addcdiv", "lerp", "masked_fill", "rsub", "remainder", "fmod", "logical_and", "logical_or",
           "bitwise_and", "bitwise_or", "hardtanh_backward", "leaky_relu_backward", "elu_backward"}
_TERNARY = {"where", "addcmul", "addcdiv", "lerp"}
_WRITE_ONLY = {"fill", "zero"}
_REDUCE = {"sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "linalg_vector_norm", "var", "std",
           "var_mean", "std_mean", "argmax", "argmin", "logsumexp", "any", "all", "cumsum"}
_NORM = {"batch_norm", "native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_impl_index",
         "layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "rms_norm", "_fused_rms_norm",
         "instance_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training"}
_SOFTMAX = {"softmax", "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data",
            "_log_softmax_backward_data"}
_GEMM = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addbmm"}
_CONV = {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "cudnn_convolution", "miopen_convolution",
         "mkldnn_convolution", "_mkldnn_convolution", "cudnn_convolution_relu", "cudnn_convolution_add_relu"}
# Where stride, padding and dilation sit among an op's arguments (for `Concrete Inputs`).
_CONV_ARGS = {"cudnn_convolution": (3, 2, 4), "miopen_convolution": (3, 2, 4), "mkldnn_convolution": (4, 3, 5)}
_ATTENTION = re.compile(r"^(_?scaled_dot_product_(?:flash_|efficient_|cudnn_|fused_)?attention(?:_for_cpu)?|"
                        r"_flash_attention_forward|_efficient_attention_forward|flash_attn\w*|"
                        r"_scaled_dot_product_\w+_attention\w*)$")
_BACKWARD = re.compile(r"_backward$")
_LAYOUT_BLHE = ("_flash_attention_forward", "_efficient_attention_forward", "_flash_attention_backward",
                "_efficient_attention_backward")


def base_name(op_name: str) -> str:
    """"aten::add_" -> "add": the schema name without its namespace and in-place underscore."""
    name = op_name.rsplit("::", 1)[-1]
    return name[:-1] if name.endswith("_") and not name.endswith("__") and name != "_" else name


def _numel(shape) -> int:
    return math.prod(int(d) for d in shape) if shape else 1


def _is_tensor(dims: list, types: list | None, k: int) -> bool:
    """Argument k is a tensor: it has a shape (a 0-d tensor has none; its type then says so)."""
    if types is not None and k < len(types):
        t = types[k]
        return dtype_size(t) is not None and (bool(dims[k]) or t != "Scalar")
    return bool(dims[k]) if k < len(dims) and isinstance(dims[k], list) else False


def category_of(op_name: str) -> str | None:
    """The roofline category of an op by its name, None when no formula applies."""
    name = base_name(op_name)
    if name in _GEMM:
        return GEMM
    if name in _CONV:
        return CONV
    if _ATTENTION.match(name) or (name.endswith("_backward") and _ATTENTION.match(_BACKWARD.sub("", name))):
        return ATTENTION
    if name in _UNARY or name in _BINARY:
        return ELEMENTWISE
    if name in _REDUCE:
        return REDUCTION
    if name in _NORM or name in _SOFTMAX:
        return NORM
    return None


def op_cost(op: HostOp, consumer_dims: list | None = None) -> OpCost | None:
    """The FLOPs and bytes of an op, None when its kind or its shapes are not known. `consumer_dims`: the
    first input shape of the op that consumes a convolution's output (see the module docstring)."""
    inputs = op.inputs
    category = _category(op.name)
    if category is None or inputs is None or not inputs.dims:
        return None
    try:
        return _cost(category, base_name(op.name), inputs.dims, inputs.types, inputs.concrete, inputs.flops,
                     consumer_dims)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):  # shapes that do not fit the op's schema
        return None


_category = functools.lru_cache(maxsize=4096)(category_of)


def _cost(category, name, dims, types, concrete, recorded_flops, consumer_dims) -> OpCost | None:
    size, prec, assumed = _element(types)
    if category == GEMM:
        flops, elems = _gemm(name, dims)
    elif category == CONV:
        flops, elems = _conv(name, dims, concrete, consumer_dims)
    elif category == ATTENTION:
        flops, elems = _attention(name, dims, concrete)
    else:
        shapes = [dims[k] for k in range(len(dims)) if _is_tensor(dims, types, k)]
        if not shapes:
            return None
        read = sum(_numel(s) for s in shapes)
        if category == ELEMENTWISE:  # the first `arity` tensors are read; a further one is an `out=` tensor
            arity = 3 if name in _TERNARY else 1 if name in _UNARY else 2
            out = _numel(_broadcast(shapes[:arity]))
            read = 0 if name in _WRITE_ONLY else sum(_numel(s) for s in shapes[:arity])
            flops, elems = out, read + out
        elif category == REDUCTION:
            flops, elems = _numel(shapes[0]), _numel(shapes[0])
        else:
            n = _numel(shapes[0])
            flops, elems = (3 if name in _SOFTMAX else 5) * n, read + n
    if flops is None:
        return None
    if recorded_flops:
        flops = recorded_flops
    if prec is None and category not in (GEMM, CONV, ATTENTION):  # integer work runs on the vector units
        prec = "fp32"
    return OpCost(category, float(flops), float(elems * size), prec, assumed)


def _element(types: list | None) -> tuple[int, str | None, bool]:
    """Element size and precision of the op's first tensor argument; float32 when types are absent."""
    for t in types or ():
        size = dtype_size(t)
        if size is not None:
            return size, precision(t), False
    return 4, "fp32", True


def _gemm(name: str, dims: list) -> tuple[float, float]:
    if name in ("addmm", "baddbmm", "addbmm"):
        bias, a, b = dims[0], dims[1], dims[2]
    elif name == "linear":
        a, w = dims[0], dims[1]
        bias = dims[2] if len(dims) > 2 and dims[2] else None
        m, k, n = _numel(a[:-1]), a[-1], w[0]
        return 2 * m * n * k + (m * n if bias else 0), m * k + n * k + m * n + (_numel(bias) if bias else 0)
    else:
        bias, a, b = None, dims[0], dims[1]
    batch = _numel(_broadcast([a[:-2], b[:-2]])) if len(a) > 2 or len(b) > 2 else 1
    m, k, n = a[-2], a[-1], b[-1]
    flops = 2 * batch * m * n * k + (batch * m * n if bias is not None else 0)
    elems = batch * m * k + (_numel(b[:-2]) or 1) * k * n + batch * m * n + (_numel(bias) if bias else 0)
    return flops, elems


def _conv(name: str, dims: list, concrete: list | None, consumer: list | None) -> tuple[float | None, float]:
    x, w = dims[0], dims[1]
    if len(x) < 3 or len(w) != len(x):
        return None, 0
    out = _conv_out_from_args(name, x, w, concrete) or _conv_out_from_consumer(x, w, consumer)
    if out is None:
        return None, 0
    out_shape = [x[0], w[0], *out]
    flops = 2 * _numel(w[1:]) * _numel(out_shape)
    return flops, _numel(x) + _numel(w) + _numel(out_shape)


def _ints(text: object, n: int) -> list[int] | None:
    if not isinstance(text, str) or not text.strip():
        return None
    found = [int(v) for v in re.findall(r"-?\d+", text)]
    return (found * n)[:n] if len(found) in (1, n) else None


def _conv_out_from_args(name: str, x: list, w: list, concrete: list | None) -> list[int] | None:
    if not concrete:
        return None
    stride_at, pad_at, dil_at = _CONV_ARGS.get(name, (3, 4, 5))
    n = len(x) - 2
    stride = _ints(concrete[stride_at], n) if len(concrete) > stride_at else None
    pad = _ints(concrete[pad_at], n) if len(concrete) > pad_at else None
    dil = (_ints(concrete[dil_at], n) if len(concrete) > dil_at else None) or [1] * n
    if stride is None or pad is None:
        return None
    return [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(n)]


def _conv_out_from_consumer(x: list, w: list, consumer: list | None) -> list[int] | None:
    """The output's spatial size as the op after the convolution received it, when some stride 1-4 and
    padding 0..R (dilation 1) give that size."""
    if not consumer or len(consumer) != len(x) or consumer[0] != x[0] or consumer[1] != w[0]:
        return None
    out = consumer[2:]
    for i, size in enumerate(out):
        r = w[2 + i]
        if not any((x[2 + i] + 2 * p - (r - 1) - 1) // s + 1 == size for s in (1, 2, 3, 4) for p in range(r + 1)):
            return None
    return list(out)


def _attention(name: str, dims: list, concrete: list | None) -> tuple[float, float]:
    q, k, v = dims[0], dims[1], dims[2]
    if base_name(name) in _LAYOUT_BLHE:  # these take (batch, length, heads, head dim)
        q, k, v = ([s[0], s[2], s[1], s[3]] for s in (q, k, v))
    b, h, lq, e = q
    lkv, ev = k[-2], v[-1]
    flops = 2 * b * h * lq * lkv * e + 2 * b * h * lq * lkv * ev
    causal = any(isinstance(c, str) and c.strip() == "True" for c in (concrete or [])[3:7])
    if causal:
        flops /= 2
    out = b * h * lq * ev
    elems = _numel(q) + _numel(k) + _numel(v) + out
    if name.endswith("_backward"):
        return 2.5 * flops, 2 * elems
    return flops, elems


def _broadcast(shapes: list[list]) -> list[int]:
    """NumPy broadcasting of shapes (a 1 stretches); a mismatch raises ValueError."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s, start=n - len(s)):
            if d != 1:
                if out[i] not in (1, d):
                    raise ValueError("shapes do not broadcast")
                out[i] = d
    return out
