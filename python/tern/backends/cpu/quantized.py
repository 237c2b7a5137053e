"""The quantized operators the cpu backend runs on integers, found in a
converted PT2E graph (docs/quantization.md):

    dequantize_per_tensor(x_int8) --+
    dequantize_per_channel(w_int8) -+-> convolution / linear -> [relu, relu6, clamp] -> quantize_per_tensor

becomes one QConv (backends/cpu/schema/cpu.fbs) on int8 activations, with the
weights packed for the qs8 microkernels (pack.py); an add or mul of two
dequantized tensors, quantized after, one QBinary; a pool between a
dequantize and a quantize, one QPool. The partitioner claims the
pattern's nodes, and quantize / dequantize on their own (Quantize and
Dequantize ops; a dequantize only where a float op reads it).
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any

from tern.backends.cpu.activations import activation_of
from tern.backends.cpu.ir import VIEWS, only_user, pad_amounts, pair, shape
from tern.backends.cpu.pooling import POOLS
from tern.backends.cpu.pooling import supports as pool_refusal
from tern.ops import op_name

Q = "quantized_decomposed::quantize_per_tensor"
DQ = "quantized_decomposed::dequantize_per_tensor"
DQC = "quantized_decomposed::dequantize_per_channel"
# The int32 accumulators of the qs8 microkernels hold at most this many
# products per output (backends/cpu/ops/qlinear.cpp checks it too: prepare_QConv,
# prepare_QLinear).
MAX_PRODUCTS = 1 << 15


@dataclass
class QParams:
    scale: float
    zero_point: int
    qmin: int
    qmax: int


def qparams(node: Any) -> QParams | None:
    """A quantize_per_tensor or dequantize_per_tensor (default overload) to or
    from int8, with number parameters: its parameters, else None."""
    import torch

    if getattr(node, "op", None) != "call_function" or op_name(node.target) not in (Q, DQ):
        return None
    args = list(node.args)
    if len(args) < 6 or node.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    _, scale, zp, qmin, qmax, dtype = args[:6]
    if dtype != torch.int8 or isinstance(scale, bool) or not isinstance(scale, (int, float)) \
            or not isinstance(zp, int) or not isinstance(qmin, int) or not isinstance(qmax, int):
        return None
    if not (scale > 0 and math.isfinite(scale) and -128 <= zp <= 127 and -128 <= qmin <= qmax <= 127):
        return None
    return QParams(float(scale), zp, qmin, qmax)


@dataclass
class QConvPattern:
    """One quantized convolution or linear layer, and the nodes it covers."""
    kind: str  # "conv" or "linear"
    node: Any  # the convolution / addmm / mm
    x_q: Any  # the int8 input (the dequantize's input)
    x: QParams
    weight: Any  # get_attr of the int8 weights
    w_scales: Any  # get_attr of their per-channel scales
    bias: Any  # get_attr or None
    y: QParams  # of the quantize, its range narrowed by the activation
    q: Any  # the quantize
    covered: list[Any] = field(default_factory=list)  # nodes besides the dequantize of x
    # the nodes between x's dequantize and the op, run with it (_x_input:
    # reshapes, or a zero pad with its quantize and dequantize), and that
    # pad's (top, left, bottom, right)
    passed: list[Any] = field(default_factory=list)
    pad: tuple[int, int, int, int] | None = None


def qconv_of(node: Any) -> QConvPattern | None:
    """The pattern around a convolution or addmm / mm node, or None."""
    name = op_name(node.target) if getattr(node, "op", None) == "call_function" else ""
    if name == "aten::convolution":
        return _conv(node)
    if name in ("aten::addmm", "aten::mm"):
        return _linear(node)
    return None


def weight_of(dqc: Any) -> tuple[Any, Any] | None:
    """(int8 weight get_attr, scales get_attr) of a dequantize_per_channel of
    constant symmetric int8 weights along axis 0, else None."""
    import torch

    if getattr(dqc, "op", None) != "call_function" or op_name(dqc.target) != DQC:
        return None
    args = list(dqc.args) + [None] * 7
    w, scales, zps, axis, qmin, qmax, dtype = args[:7]
    if dtype != torch.int8 or axis != 0 or getattr(w, "op", None) != "get_attr" \
            or getattr(scales, "op", None) != "get_attr" or dqc.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    if zps is not None:
        z = _const(zps)
        if z is None or bool(z.any()):
            return None  # asymmetric weights: not what the kernels take
    val = w.meta.get("val")
    if val is None or val.dtype != torch.int8:
        return None
    return w, scales


def _const(node: Any) -> Any:
    if getattr(node, "op", None) != "get_attr":
        return None
    gm = node.graph.owning_module
    return getattr(gm, node.target, None)


def _x_input(x: Any) -> tuple[Any, QParams, list[Any], tuple[int, int, int, int] | None] | None:
    """(int8 node, its parameters, nodes passed, pad) if x is a dequantize,
    or reshapes of one, each used once. A zero pad of the spatial dims
    between two pairs of the same parameters, as PT2E writes TensorFlow's
    "same" padding of a quantized convolution,

        dequantize(a) -> pad -> quantize -> dequantize -> x

    is passed too: its zeros quantize to the zero point, what the kernels
    read outside x (the pad's amounts, ir.pad_amounts, are the last item)."""
    views = []
    while getattr(x, "op", None) == "call_function" and op_name(x.target) in VIEWS and len(x.users) == 1:
        views.append(x)
        x = x.args[0]
    p = qparams(x)
    if p is None or op_name(x.target) != DQ:
        return None
    pad = _padded(x, p)
    if pad is not None:
        q, pad_node = x.args[0], x.args[0].args[0]
        return pad_node.args[0].args[0], p, views + [x, q, pad_node], pad_amounts(pad_node)
    return x.args[0], p, views, None


def _padded(dq: Any, p: QParams) -> Any:
    """The dequantize before a zero pad that dq's quantize reads, each of
    the three used once and of dq's parameters; else None."""
    q = dq.args[0]
    if len(dq.users) != 1 or qparams(q) != p or op_name(q.target) != Q or len(q.users) != 1:
        return None
    pad_node = q.args[0]
    if getattr(pad_node, "op", None) != "call_function" or pad_amounts(pad_node) is None or len(pad_node.users) != 1:
        return None
    dq1 = pad_node.args[0]
    if qparams(dq1) != p or op_name(dq1.target) != DQ:
        return None
    return dq1


def _output(node: Any, views: bool = False) -> tuple[Any, QParams, list[Any]] | None:
    """(the quantize, its range narrowed by a relu / clamp between, the nodes
    between) if node's only user, past an activation (and, with `views`,
    reshapes), quantizes it."""
    between: list[Any] = []

    def next_user(n: Any) -> Any:
        u = only_user(n)
        while views and u is not None and op_name(u.target) in VIEWS:
            between.append(u)
            u = only_user(u)
        return u

    u = next_user(node)
    lo, hi = -math.inf, math.inf
    act = activation_of(u) if u is not None and op_name(u.target) not in (Q,) else None
    if act is not None:
        if act[0] != "Clamp":
            return None
        lo, hi = act[1], act[2]
        between.append(u)
        u = next_user(u)
    p = qparams(u) if u is not None else None
    if p is None or op_name(u.target) != Q:
        return None
    return u, narrow(p, lo, hi), between


def narrow(p: QParams, lo: float, hi: float) -> QParams:
    """p's range after clamping the float values to [lo, hi] before quantizing:
    quantize(clamp(v, lo, hi)) = clamp(quantize(v), quantize(lo), quantize(hi)),
    as quantize is monotonic (computed as PyTorch does, in float32)."""
    import numpy as np

    inv = np.float32(1.0 / p.scale)
    qmin, qmax = p.qmin, p.qmax
    if math.isfinite(lo):
        qmin = max(qmin, min(qmax, int(np.rint(np.float32(lo) * inv)) + p.zero_point))
    if math.isfinite(hi):
        qmax = min(qmax, max(qmin, int(np.rint(np.float32(hi) * inv)) + p.zero_point))
    return QParams(p.scale, p.zero_point, qmin, qmax)


def _conv(node: Any) -> QConvPattern | None:
    x, w, b, stride, padding, dilation, transposed, _, groups = node.args
    xi, wi, out = _x_input(x), weight_of(w), _output(node)
    if xi is None or wi is None or out is None or transposed or len(shape(node)) != 4:
        return None
    if b is not None and getattr(b, "op", None) != "get_attr":
        return None
    oc, c, kh, kw = shape(wi[0])
    cin = shape(x)[1]
    depthwise = groups > 1 and groups == cin == oc and c == 1
    if (groups != 1 and not depthwise) or any(int(p) < 0 for p in padding):
        return None
    if kh * kw > 1024 or kh * kw * (1 if depthwise else (c + 3) // 4 * 4) > MAX_PRODUCTS:
        return None
    q, yp, between = out
    return QConvPattern("conv", node, xi[0], xi[1], wi[0], wi[1], b, yp, q, [w, *between, q, *xi[2]], xi[2], xi[3])


def _linear_operands(node: Any) -> tuple[Any, Any, Any] | None:
    """(x, the permute of the weight, the bias get_attr or None) of a linear
    layer as decomposed: addmm(bias, x [m, k], permute(w, [1, 0])) with beta
    and alpha 1, or mm(x, permute(w, [1, 0])); else None."""
    name = op_name(node.target) if getattr(node, "op", None) == "call_function" else ""
    if name == "aten::addmm":
        b, x, wt = node.args[:3]
        beta = node.kwargs.get("beta", node.args[3] if len(node.args) > 3 else 1)
        alpha = node.kwargs.get("alpha", node.args[4] if len(node.args) > 4 else 1)
        if beta != 1 or alpha != 1 or getattr(b, "op", None) != "get_attr" or len(shape(b)) != 1:
            return None
    elif name == "aten::mm":
        (x, wt), b = node.args[:2], None
    else:
        return None
    if getattr(wt, "op", None) != "call_function" or op_name(wt.target) != "aten::permute" \
            or list(wt.args[1]) != [1, 0] or len(wt.users) != 1 or len(shape(x)) != 2:
        return None
    return x, wt, b


def _linear(node: Any) -> QConvPattern | None:
    parts = _linear_operands(node)
    if parts is None:
        return None
    x, wt, b = parts
    xi, wi, out = _x_input(x), weight_of(wt.args[0]), _output(node, views=True)
    if xi is None or wi is None or out is None or xi[3] is not None:
        return None
    n, k = shape(wi[0])
    if (k + 3) // 4 * 4 > MAX_PRODUCTS:
        return None
    q, yp, between = out
    return QConvPattern("linear", node, xi[0], xi[1], wi[0], wi[1], b, yp, q, [wt, wt.args[0], *between, q, *xi[2]],
                        xi[2])


@dataclass
class QBinaryPattern:
    """A quantized add or mul: dequantize(a) op dequantize(b) -> [relu] -> quantize."""
    node: Any
    kind: str  # "Add" or "Mul"
    a_q: Any
    a: QParams
    b_q: Any
    b: QParams
    y: QParams
    q: Any
    covered: list[Any] = field(default_factory=list)


def qbinary_of(node: Any) -> QBinaryPattern | None:
    """The pattern around an add.Tensor / mul.Tensor node of two dequantized
    int8 tensors of its own shape, else None."""
    name = op_name(node.target) if getattr(node, "op", None) == "call_function" else ""
    if name not in ("aten::add.Tensor", "aten::mul.Tensor") or len(node.args) != 2 \
            or node.kwargs.get("alpha", 1) != 1:
        return None
    a, b = node.args
    pa, pb = qparams(a), qparams(b)
    if pa is None or pb is None or op_name(a.target) != DQ or op_name(b.target) != DQ:
        return None
    if shape(a) != shape(node) or shape(b) != shape(node):
        return None
    out = _output(node)
    if out is None:
        return None
    q, yp, between = out
    kind = "Add" if name == "aten::add.Tensor" else "Mul"
    return QBinaryPattern(node, kind, a.args[0], pa, b.args[0], pb, yp, q, [*between, q])


@dataclass
class QPoolPattern:
    """A quantized pool: dequantize(x) -> pool -> [getitem] -> [relu] -> quantize."""
    node: Any  # the pool
    x_q: Any
    x: QParams
    y: QParams
    q: Any
    covered: list[Any] = field(default_factory=list)


# The int32 sums of the int8 pool kernels hold at most this many taps
# (backends/cpu/ops/pool.cpp checks it too: prepare_QPool).
MAX_POOL_TAPS = 1 << 16


def qpool_of(node: Any) -> QPoolPattern | None:
    """The pattern around a pool node (the cpu backend's POOLS) of a
    dequantized int8 tensor whose values are quantized again, else None."""
    name = op_name(node.target) if getattr(node, "op", None) == "call_function" else ""
    if name not in POOLS or pool_refusal(node) is not None:
        return None
    x = node.args[0]
    px = qparams(x)
    if px is None or op_name(x.target) != DQ:
        return None
    _, _, h, w = shape(x)
    taps = h * w if name in ("aten::mean.dim", "aten::adaptive_avg_pool2d") else math.prod(pair(node.args[1]))
    if taps > MAX_POOL_TAPS:
        return None
    first = []
    last = node
    if name == "aten::max_pool2d_with_indices":
        items = list(node.users)
        if len(items) != 1 or items[0].target is not operator.getitem:
            return None
        first = [items[0]]
        last = items[0]
    out = _output(last)
    if out is None:
        return None
    q, yp, between = out
    return QPoolPattern(node, x.args[0], px, yp, q, [*first, *between, q])


CHOOSE = "quantized_decomposed::choose_qparams.tensor"
QT = "quantized_decomposed::quantize_per_tensor.tensor"
DQT = "quantized_decomposed::dequantize_per_tensor.tensor"


@dataclass
class DynamicQuant:
    """choose_qparams.tensor(x) -> (scale, zero point) -> quantize.tensor -> dequantize.tensor:
    an activation quantized at every call (the "int8-dynamic" scheme)."""
    x: Any
    choose: Any
    items: list[Any]
    q: Any
    dq: Any
    qmin: int
    qmax: int
    eps: float


def dynamic_of(dq: Any) -> DynamicQuant | None:
    """The dynamic quantization chain ending at a dequantize_per_tensor.tensor node, else None."""
    import torch

    if getattr(dq, "op", None) != "call_function" or op_name(dq.target) != DQT or len(dq.args) < 6:
        return None
    q, s, zp, qmin, qmax, dtype = dq.args[:6]
    if getattr(q, "op", None) != "call_function" or op_name(q.target) != QT or len(q.args) < 6 \
            or tuple(q.args[1:6]) != (s, zp, qmin, qmax, dtype) or dtype != torch.int8 or len(q.users) != 1:
        return None
    if not (getattr(s, "target", None) is operator.getitem and getattr(zp, "target", None) is operator.getitem
            and s.args[0] is zp.args[0] and (s.args[1], zp.args[1]) == (0, 1)):
        return None
    choose = s.args[0]
    if op_name(getattr(choose, "target", None)) != CHOOSE or len(choose.args) < 5:
        return None
    x, cmin, cmax, eps, cdtype = choose.args[:5]
    if x is not q.args[0] or (cmin, cmax, cdtype) != (qmin, qmax, dtype) or not isinstance(eps, (int, float)) \
            or not (eps > 0) or not (-128 <= qmin <= qmax <= 127) or len(choose.users) != 2 \
            or any(u not in (q, dq) for item in (s, zp) for u in item.users):
        return None
    if x.meta["val"].dtype != torch.float32:
        return None
    return DynamicQuant(x, choose, [s, zp], q, dq, qmin, qmax, float(eps))


@dataclass
class QLinearPattern:
    """A dynamically quantized linear layer: dequantize.tensor(dynamic x) -> [reshapes] ->
    addmm / mm with dequantize_per_channel(int8 weights): one QLinear."""
    node: Any
    dyn: DynamicQuant
    weight: Any
    w_scales: Any
    bias: Any
    covered: list[Any] = field(default_factory=list)  # the reshapes before it, permute, dequantize of weights


def qlinear_dynamic_of(node: Any, check_siblings: bool = True) -> QLinearPattern | None:
    """The pattern around an addmm / mm node, else None. With check_siblings,
    also requires every other reader of the dequantized x to be such a
    pattern (they share one DynamicQuantize)."""
    parts = _linear_operands(node)
    if parts is None:
        return None
    x, wt, b = parts
    views = []
    while getattr(x, "op", None) == "call_function" and op_name(x.target) in VIEWS and len(x.users) == 1:
        views.append(x)
        x = x.args[0]
    dyn, wi = dynamic_of(x), weight_of(wt.args[0])
    if dyn is None or wi is None or (shape(wi[0])[1] + 3) // 4 * 4 > MAX_PRODUCTS:
        return None
    if check_siblings and not all(_dynamic_linear_use(u) for u in dyn.dq.users):
        return None
    return QLinearPattern(node, dyn, wi[0], wi[1], b, [*views, wt, wt.args[0]])


def _dynamic_linear_use(u: Any) -> bool:
    """u (a reader of a dynamic dequantize) is, past reshapes, a QLinear pattern."""
    while getattr(u, "op", None) == "call_function" and op_name(u.target) in VIEWS and len(u.users) == 1:
        u = next(iter(u.users))
    return qlinear_dynamic_of(u, check_siblings=False) is not None


INT4 = "tern::dequantize_affine_int4"


@dataclass
class WLinearPattern:
    """A linear layer of weight-only quantized weights: float x, addmm / mm with
    dequantize_per_channel(int8) or dequantize_affine_int4(packed) weights:
    one WLinear (its weights dequantized at load)."""
    node: Any
    bits: int
    weight: Any  # get_attr: int8 [n, k] or uint8 [n, k / 2]
    scales: Any
    zero_points: Any  # get_attr or None
    bias: Any
    group: int
    qmin: int
    covered: list[Any] = field(default_factory=list)


def _int4_weight(node: Any) -> tuple[Any, Any, Any, int, int] | None:
    """(packed, scales, zero points or None, group, quant_min) of a
    dequantize_affine_int4 of constants in groups [1, g] along a 2-d weight's rows."""
    import torch

    if getattr(node, "op", None) != "call_function" or op_name(node.target) != INT4 or len(node.args) < 6:
        return None
    packed, block, scale, zp, qmin, _qmax = node.args[:6]
    if getattr(packed, "op", None) != "get_attr" or getattr(scale, "op", None) != "get_attr" \
            or (zp is not None and getattr(zp, "op", None) != "get_attr"):
        return None
    if packed.meta["val"].dtype != torch.uint8 or len(shape(packed)) != 2 or len(block) != 2 or block[0] != 1:
        return None
    if scale.meta["val"].dtype != torch.float32 or (zp is not None and zp.meta["val"].dtype != torch.float32):
        return None
    return packed, scale, zp, int(block[1]), int(qmin)


def wlinear_of(node: Any) -> WLinearPattern | None:
    """The weight-only quantized linear layer at an addmm / mm node, else None."""
    parts = _linear_operands(node)
    if parts is None:
        return None
    x, wt, b = parts
    import torch

    if x.meta["val"].dtype != torch.float32 or op_name(getattr(x, "target", None)) in (DQ, DQT):
        return None  # a quantized activation: QConv / QLinear's
    w = wt.args[0]
    per_channel = weight_of(w)
    if per_channel is not None:
        return WLinearPattern(node, 8, per_channel[0], per_channel[1], None, b, 0, -128, [wt, w])
    int4 = _int4_weight(w)
    if int4 is not None:
        packed, scale, zp, group, qmin = int4
        return WLinearPattern(node, 4, packed, scale, zp, b, group, qmin, [wt, w])
    return None


def claims(node: Any) -> bool | None:
    """Whether the cpu backend claims `node` as part of a quantized operator
    (or a quantize / dequantize of its own); None for nodes this module does
    not decide."""
    name = op_name(node.target) if node.op == "call_function" else ""
    if name in (Q, DQ):
        return qparams(node) is not None
    if name in (CHOOSE, QT, DQT) or (node.target is operator.getitem
                                     and op_name(getattr(node.args[0], "target", None)) == CHOOSE):
        return _dynamic_claimed(node)
    if name == DQC:
        return bool(node.users) and all(_weight_use(u) for u in node.users)
    if name == "aten::permute" and op_name(getattr(node.args[0], "target", None)) == DQC:
        return claims(node.args[0])
    if name in ("aten::convolution", "aten::addmm", "aten::mm") and qconv_of(node) is not None:
        return True
    if name == "aten::constant_pad_nd" and _qconv_taking_pad(node) is not None:
        return True  # else a float pad: not this module's to decide
    if name in ("aten::add.Tensor", "aten::mul.Tensor") and qbinary_of(node) is not None:
        return True
    if qpool_of(node) is not None:
        return True
    if name in ("aten::addmm", "aten::mm") and (qlinear_dynamic_of(node) is not None or wlinear_of(node) is not None):
        return True
    if name == INT4:
        return bool(node.users) and all(_weight_use(u) for u in node.users)
    if name == "aten::permute" and op_name(getattr(node.args[0], "target", None)) == INT4:
        return claims(node.args[0])
    return None


def _qconv_taking_pad(node: Any) -> QConvPattern | None:
    """The int8 convolution whose padding takes in the zero pad node
    (quantize, dequantize, then the convolution: _x_input), else None."""
    q = only_user(node)
    dq = only_user(q) if q is not None else None
    conv = only_user(dq) if dq is not None else None
    pattern = qconv_of(conv) if conv is not None else None
    return pattern if pattern is not None and node in pattern.passed else None


def _dynamic_claimed(node: Any) -> bool:
    """A node of a dynamic quantization chain is claimed when every reader of
    its dequantized value is a QLinear pattern."""
    name = op_name(node.target)
    if name == DQT:
        dq = node
    elif name == QT:
        dq = next(iter(node.users), None)
    else:
        choose = node.args[0] if node.target is operator.getitem else node
        qs = [u for item in choose.users for u in item.users if op_name(u.target) == QT]
        dq = next(iter(qs[0].users), None) if qs else None
    dyn = dynamic_of(dq) if dq is not None else None
    return dyn is not None and bool(dq.users) and all(_dynamic_linear_use(u) for u in dq.users)


def _weight_use(u: Any) -> bool:
    """u reads a dequantized weight as a QConv pattern does."""
    name = op_name(u.target) if u.op == "call_function" else ""
    if name == "aten::convolution":
        return qconv_of(u) is not None
    if name == "aten::permute":
        user = next(iter(u.users)) if len(u.users) == 1 else None
        return user is not None and (qconv_of(user) is not None or qlinear_dynamic_of(user) is not None
                                     or wlinear_of(user) is not None)
    return False
