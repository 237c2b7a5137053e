"""The int8 family: lowering of the quantized patterns py finds
(QConv, QLinear, WLinear, DynamicQuantize, QBinary, QPool), of quantize and
dequantize on their own, and why a quantized node stays on the portable
kernels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tern.backends.cpu.pack import pack_qs8_conv, pack_qs8_depthwise
from tern.backends.cpu.pooling import POOLS, window
from tern.backends.cpu.ir import NHWC, PLAIN, VIEWS, Builder, name_of, pair, shape
from tern.backends.cpu.quantized import (CHOOSE, DQ, DQC, INT4, Q, claims, dynamic_of, qbinary_of, qconv_of,
                                        qlinear_dynamic_of, qparams, qpool_of, wlinear_of)

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("QConv", "QLinear", "WLinear", "DynamicQuantize", "QBinary", "QPool", "Quantize", "Dequantize")
_LINEAR = ("aten::addmm", "aten::mm")
_WEIGHTS = (DQC, INT4)


def supports(node: Any) -> str | None | bool:
    """None if the backend claims node as part of an int8 operator, a
    reason if it is a quantized node it refuses, False if node is not
    py's to decide."""
    claimed = claims(node)
    if claimed is None:
        return False
    if claimed:
        return None
    name = name_of(node)
    if name in (Q, DQ):
        return "a quantize or dequantize that is not per-tensor int8 with number parameters"
    if name in _WEIGHTS or name == "aten::permute":
        return "a dequantized weight not read by int8 convolutions or linear layers alone"
    return "a dynamic quantization whose dequantized value is not read by int8 linear layers alone"


INT8 = "tern_cpu_int8"  # node.meta key: the node's Int8Op


@dataclass
class Int8Op:
    """How this family lowers a node: the op it becomes, the pattern found
    (quantized.py: what the op takes in, its requantize and clamp included),
    the nodes lowered with it and the node whose value it writes. match()
    finds it, fusion.choose_epilogues records it on the node (meta[INT8])
    in the same walk that decides the float ops' epilogues, lower() reads it."""
    kind: str  # the cpu.fbs op (QConv, QLinear, WLinear, DynamicQuantize, QBinary, QPool, Quantize,
    #            Dequantize: made where a float op reads it), or "Weights" (read by one of them: no op)
    pattern: Any  # the quantized.py pattern; QParams for Quantize and Dequantize; None for Weights
    covers: list[Any]  # the node, then the nodes its op takes in
    defines: Any  # the node whose value the op writes (Compiler.env), or None
    reads: list[Any]  # the nodes whose values it reads (Compiler.get)


def match(node: Any) -> Int8Op | None:
    """The int8 operator node belongs to (or the quantize, dequantize or
    weights it is), else None."""
    name = name_of(node)
    qconv = qconv_of(node) if name in ("aten::convolution",) + _LINEAR else None
    qlinear = qlinear_dynamic_of(node) if name in _LINEAR and qconv is None else None
    wlinear = wlinear_of(node) if name in _LINEAR and not (qconv or qlinear) else None
    qbinary = qbinary_of(node) if name in ("aten::add.Tensor", "aten::mul.Tensor") else None
    qpool = qpool_of(node) if name in POOLS else None
    if qconv is not None:
        return Int8Op("QConv", qconv, _covers(node, qconv), qconv.q, [qconv.x_q])
    if qlinear is not None:
        return Int8Op("QLinear", qlinear, _covers(node, qlinear), node, [])
    if wlinear is not None:
        return Int8Op("WLinear", wlinear, _covers(node, wlinear), node, [_linear_input(node)])
    if name == CHOOSE:
        dq = next(u for item in node.users for u in item.users if dynamic_of(u) is not None)
        dyn = dynamic_of(dq)
        return Int8Op("DynamicQuantize", dyn, [node, *dyn.items, dyn.q, dyn.dq], None, [dyn.x])
    if qbinary is not None:
        return Int8Op("QBinary", qbinary, [node, *qbinary.covered], qbinary.q, [qbinary.a_q, qbinary.b_q])
    if qpool is not None:
        return Int8Op("QPool", qpool, [node, *qpool.covered], qpool.q, [qpool.x_q])
    if name == DQ:
        return Int8Op("Dequantize", qparams(node), [node], None, [])
    if name == Q:
        return Int8Op("Quantize", qparams(node), [node], node, [node.args[0]])
    if name in _WEIGHTS or (name == "aten::permute" and name_of(node.args[0]) in _WEIGHTS):
        return Int8Op("Weights", None, [node], None, [])
    return None


def _covers(node: Any, pattern: Any) -> list[Any]:
    return [node] + [n for n in pattern.covered if n.op == "call_function"]


def lower(c: Builder, node: Any) -> bool:
    """Lowers node as the int8 operator recorded on it (meta[INT8]); False
    if it has none (not int8)."""
    op = node.meta.get(INT8)
    if op is None:
        return False
    _LOWER[op.kind](c, op)
    return True


def covered_views(node: Any) -> list[Any]:
    """The nodes before node that its int8 operator covers (run with it):
    reshapes, and a zero pad a QConv takes in with its quantize and
    dequantize."""
    qconv = qconv_of(node)
    if qconv is not None:
        return qconv.passed
    pattern = qlinear_dynamic_of(node)
    return [n for n in pattern.covered if name_of(n) in VIEWS] if pattern is not None else []


def _dequantize(c: Builder, op: Int8Op) -> None:
    """Made a Dequantize op only where a float op reads it (Compiler.get)."""
    node = op.covers[0]
    c.lazy_dq[node] = (node.args[0], op.pattern.scale, op.pattern.zero_point)


def _quantize(c: Builder, op: Int8Op) -> None:
    node, p = op.covers[0], op.pattern
    xv, layout = c.get(node.args[0])
    y = c.workspace(c.p.values[xv].sizes, "Int8")
    fields = {"x": xv, "y": y, "inv_scale": float(np.float32(1.0 / p.scale)), "zero_point": p.zero_point,
              "qmin": p.qmin, "qmax": p.qmax}
    c.op("Quantize", fields, [node], [xv], [y])
    c.env[node] = (y, layout)


def _qconv(c: Builder, op: Int8Op) -> None:
    """An int8 convolution or linear layer (py), one QConv."""
    pat = op.pattern
    node = pat.node
    weight = getattr(c.gm, pat.weight.target).detach().numpy()
    w_scales = c.const(pat.w_scales).reshape(-1)
    bias = c.const(pat.bias).reshape(-1) if pat.bias is not None else None
    fields: dict[str, Any] = {"stride": (1, 1), "padding": (0, 0), "dilation": (1, 1), "depthwise": False}
    if pat.kind == "conv":
        _, _, b, stride, padding, dilation, _, _, groups = node.args
        n, oc, oh, ow = shape(node)
        depthwise = groups > 1
        xv = c.nhwc(pat.x_q)
        y = c.workspace((n, oh, ow, oc), "Int8")
        packed = pack_qs8_depthwise(weight) if depthwise else pack_qs8_conv(weight)
        fields.update({"stride": pair(stride), "padding": pair(padding), "dilation": pair(dilation),
                       "depthwise": depthwise, "kernel": tuple(weight.shape[2:])})
        if pat.pad is not None:  # a zero pad taken in (quantized._x_input): x is what it reads
            top, left, bottom, right = pat.pad
            ph, pw = fields["padding"]
            fields.update({"padding": (ph + top, pw + left), "padding_end": (ph + bottom, pw + right)})
        out = (y, NHWC)
    else:
        m, k = shape(node.args[1] if name_of(node) == "aten::addmm" else node.args[0])
        n_out = weight.shape[0]
        xv = c.alias(c.plain(pat.x_q), (m, 1, 1, k))
        y = c.workspace((m, 1, 1, n_out), "Int8")
        packed = pack_qs8_conv(weight.reshape(n_out, k, 1, 1))
        fields["kernel"] = (1, 1)
        out = (c.alias(y, shape(pat.q)), PLAIN)
    wv = c.weights_int8(packed)
    sv = c.weights(w_scales)
    bv = c.weights(bias) if bias is not None else -1
    fields.update({"x": xv, "weights": wv, "w_scales": sv, "bias": bv, "y": y,
                   "x_scale": pat.x.scale, "x_zero_point": pat.x.zero_point,
                   "y_scale": pat.y.scale, "y_zero_point": pat.y.zero_point, "qmin": pat.y.qmin,
                   "qmax": pat.y.qmax})
    c.op("QConv", fields, op.covers, [xv, wv, sv] + ([bv] if bv >= 0 else []), [y])
    c.done.update(op.covers)
    c.env[op.defines] = out


def _dynamic_quantize(c: Builder, op: Int8Op) -> None:
    """choose_qparams -> quantize -> dequantize (the dequantize read only by
    QLinears, py): one DynamicQuantize."""
    dyn = op.pattern
    xv = c.plain(dyn.x)
    y = c.workspace(c.p.values[xv].sizes, "Int8")
    qp = c.workspace((2,))
    fields = {"x": xv, "y": y, "qparams": qp, "qmin": dyn.qmin, "qmax": dyn.qmax, "eps": dyn.eps}
    c.op("DynamicQuantize", fields, op.covers, [xv], [y, qp])
    c.done.update(op.covers)
    c.dynamic[dyn.dq] = (y, qp)


def _linear_input(node: Any) -> Any:
    return node.args[1] if name_of(node) == "aten::addmm" else node.args[0]


def _optional_weights(c: Builder, node: Any) -> int:
    return c.weights(c.const(node).reshape(-1)) if node is not None else -1


def _qlinear(c: Builder, op: Int8Op) -> None:
    """A dynamically quantized linear layer (py), one QLinear."""
    pat = op.pattern
    node = pat.node
    y8, qp = c.dynamic[pat.dyn.dq]
    m, k = shape(_linear_input(node))
    weight = getattr(c.gm, pat.weight.target).detach().numpy()
    n = weight.shape[0]
    xv = c.alias(y8, (m, k))
    wv = c.weights_int8(pack_qs8_conv(weight.reshape(n, k, 1, 1)))
    sv = c.weights(c.const(pat.w_scales).reshape(-1))
    bv = _optional_weights(c, pat.bias)
    y = c.workspace((m, n))
    params = c.workspace((2 * ((n + 15) // 16 * 16),))
    fields = {"x": xv, "x_qparams": qp, "weights": wv, "w_scales": sv, "bias": bv, "y": y, "params": params}
    c.op("QLinear", fields, op.covers, [xv, qp, wv, sv] + ([bv] if bv >= 0 else []), [y, params])
    c.done.update(op.covers)
    c.env[op.defines] = (y, PLAIN)


def _wlinear(c: Builder, op: Int8Op) -> None:
    """A weight-only quantized linear layer (py), one WLinear."""
    pat = op.pattern
    node = pat.node
    x = _linear_input(node)
    m, k = shape(x)
    q = getattr(c.gm, pat.weight.target).detach().contiguous().numpy()
    n = q.shape[0]
    wv = c.alias(c.weights_int8(q.view(np.int8).reshape(-1)), tuple(q.shape))
    sv = c.weights(c.const(pat.scales).reshape(-1))
    zv = _optional_weights(c, pat.zero_points)
    bv = _optional_weights(c, pat.bias)
    xv = c.plain(x)
    y = c.workspace((m, n))
    fields = {"x": xv, "y": y, "weights": wv, "scales": sv, "zero_points": zv, "bias": bv, "bits": pat.bits,
              "group": pat.group, "qmin": pat.qmin}
    c.op("WLinear", fields, op.covers, [xv, wv, sv] + [v for v in (zv, bv) if v >= 0], [y])
    c.done.update(op.covers)
    c.env[op.defines] = (y, PLAIN)


def _qbinary(c: Builder, op: Int8Op) -> None:
    """An int8 add or mul (py), one QBinary, in a's layout."""
    pat = op.pattern
    av, layout = c.get(pat.a_q)
    bv = c.nhwc(pat.b_q) if layout == NHWC else c.plain(pat.b_q)
    y = c.workspace(c.p.values[av].sizes, "Int8")
    fields = {"a": av, "b": bv, "y": y, "kind": pat.kind, "a_scale": pat.a.scale, "a_zero_point": pat.a.zero_point,
              "b_scale": pat.b.scale, "b_zero_point": pat.b.zero_point,
              "y_inv_scale": float(np.float32(1.0 / pat.y.scale)), "y_zero_point": pat.y.zero_point,
              "qmin": pat.y.qmin, "qmax": pat.y.qmax}
    c.op("QBinary", fields, op.covers, [av, bv], [y])
    c.done.update(op.covers)
    c.env[op.defines] = (y, layout)


def _qpool(c: Builder, op: Int8Op) -> None:
    """An int8 pool (py), one QPool."""
    pat = op.pattern
    fields, keep, y_shape = window(pat.node)
    xv = c.nhwc(pat.x_q)
    y = c.workspace(y_shape, "Int8")
    fields.update(x_scale=pat.x.scale, x_zero_point=pat.x.zero_point,
                  y_inv_scale=float(np.float32(1.0 / pat.y.scale)), y_zero_point=pat.y.zero_point,
                  qmin=pat.y.qmin, qmax=pat.y.qmax)
    c.op("QPool", {"x": xv, "y": y, **fields}, op.covers, [xv], [y])
    c.done.update(op.covers)
    c.env[op.defines] = (y, NHWC) if keep else (c.alias(y, y_shape[::3]), PLAIN)


# Int8Op.kind -> its lowering ("Weights": read by the op of a QConv, QLinear or WLinear)
_LOWER: dict[str, Callable[[Builder, Int8Op], None]] = {
    "QConv": _qconv, "QLinear": _qlinear, "WLinear": _wlinear, "DynamicQuantize": _dynamic_quantize,
    "QBinary": _qbinary, "QPool": _qpool, "Quantize": _quantize, "Dequantize": _dequantize,
    "Weights": lambda c, op: None,
}
