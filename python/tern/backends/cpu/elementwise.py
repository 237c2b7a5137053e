"""Elementwise ops and row-wise normalizations: add / sub / mul of tensors
(Binary: same shape, a scalar, a per-channel gate, a bias over the last
dims), an activation or x op number (Unary), each taking in a following
activation; softmax, layer norm and RMSNorm (a pattern of five or six
nodes, rms_norm_at) over the last dims.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tern.backends.cpu.activations import activation_of, affine_of, epilogue
from tern.backends.cpu.ir import (NHWC, PLAIN, Builder, epilogue_of, is_const, name_of, only_user,
                                  only_values_used, rank, shape, val)
from tern.errors import ExportError

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("Binary", "Unary", "LayerNorm", "Softmax", "RmsNorm")
BINARY = {"aten::add.Tensor": "Add", "aten::sub.Tensor": "Sub", "aten::mul.Tensor": "Mul"}


def broadcast_of(out: tuple[int, ...], b: tuple[int, ...], nhwc: bool) -> tuple[int, int] | None:
    """(b_inner, b_block) of b broadcast to `out` (cpu.fbs Binary), in the
    layout the op runs in, or None if this broadcast is not supported.
    (0, 0): same shape."""
    if b == out:
        return (0, 0)
    b = (1,) * (len(out) - len(b)) + tuple(b)
    total = math.prod(out)
    if math.prod(b) == 1:
        return (1, 0)
    if nhwc and len(out) == 4 and b[2:] == (1, 1) and b[1] == out[1] and b[0] in (1, out[0]):
        c = out[1]  # a per-channel gate: NHWC [n, 1, 1, c] over [n, h, w, c]
        return (c, total // out[0] if b[0] > 1 and out[0] > 1 else 0)
    if not nhwc:
        # b equals out's trailing dims, 1 before them: [d] or [1, s, d] over [b, s, d]
        k = next((i for i, s in enumerate(b) if s != 1), len(b))
        if b[k:] == out[k:]:
            return (math.prod(b), 0)
        # b equals out on leading and trailing dims, 1 between: [t, 1, d] over
        # [t, h, d] (rotary angles over the heads): out as [outer, mid,
        # inner], b as [outer, 1, inner]; out's dims of size 1 fit either
        dims = [(o, s) for o, s in zip(out, b) if o != 1]
        if any(s != 1 and s != o for o, s in dims):
            return None
        k = len(dims)
        while k > 0 and dims[k - 1][1] != 1:
            k -= 1
        j = k
        while j > 0 and dims[j - 1][1] == 1:
            j -= 1
        if 0 < j < k < len(dims) and all(s != 1 for _, s in dims[:j]):
            return (math.prod(o for o, _ in dims[k:]), math.prod(o for o, _ in dims[j:]))
    return None


def supports_binary(node: Any) -> str | None:
    """Both operands tensors; one of the output's shape, the other the same
    or broadcast in a way the backend runs (broadcast_of) in either layout
    it may pick; sub only with the full-size operand first."""
    import torch

    if len(node.args) != 2 or not all(isinstance(val(t), torch.Tensor) for t in node.args):
        return "an elementwise op with a number operand (x op number runs as its .Scalar form)"
    if node.kwargs.get("alpha", 1) != 1:
        return "an add or sub with alpha other than 1"
    out = shape(node)
    a, b = (shape(t) for t in node.args)
    if a != out:
        if name_of(node) == "aten::sub.Tensor" or b != out:
            return f"a broadcast of both operands, or of the first of a sub ({list(a)} and {list(b)} to {list(out)})"
        a, b = b, a
    # a 4-d op may run in either layout (lower_binary picks the one that can
    # broadcast b, NHWC when both can and an operand is NHWC already); one
    # that is no image (attention scores [windows, heads, n, n] + a bias
    # [heads, n, n]) broadcasts in the plain layout only
    if broadcast_of(out, b, len(out) == 4) is None and broadcast_of(out, b, False) is None:
        return f"a broadcast of {list(b)} to {list(out)} (same shape, a number, a per-channel gate or trailing dims run)"
    return None


def supports_affine(node: Any) -> str | None:
    return None if affine_of(node) is not None else "x op number with a number that is not finite, or a division by 0"


def supports_activation(node: Any) -> str | None:
    return None if activation_of(node) is not None else "gelu with the tanh approximation"


def supports_layer_norm(node: Any) -> str | None:
    x, norm_shape, w, b = node.args[:4]
    if not only_values_used(node):
        return "a layer norm whose mean or rstd is used"
    if not all(a is None or is_const(a) for a in (w, b)):
        return "a layer norm whose weight or bias is computed, not a constant"
    return None if shape(x)[-len(norm_shape):] == tuple(norm_shape) else "a layer norm of a shape it does not end with"


def supports_softmax(node: Any) -> str | None:
    dim, half = node.args[1], node.args[2] if len(node.args) > 2 else False
    if half:
        return "a softmax to half precision"
    return None if dim % rank(node) == rank(node) - 1 else "a softmax over a dim other than the last"


def lower_binary(c: Builder, node: Any) -> None:
    a, b = node.args[:2]
    out = shape(node)
    if shape(a) != out:  # the full-size operand first (add and mul commute; supports() checked sub)
        a, b = b, a
    nhwc = (len(out) == 4 and broadcast_of(out, shape(b), True) is not None
            and (c.get(a)[1] == NHWC or c.get(b)[1] == NHWC
                 or broadcast_of(out, shape(b), False) is None))  # a per-channel gate: NHWC
    inner, block = broadcast_of(out, shape(b), nhwc)  # supports_binary: one layout can
    av = c.nhwc(a) if nhwc else c.plain(a)
    bv = (c.nhwc(b) if len(shape(b)) == 4 else c.plain(b)) if nhwc else c.plain(b)
    ep = epilogue_of(node)  # an activation
    fused, decisions, last, act = ep.nodes, ep.decisions(), ep.last, ep.act
    y = c.workspace(c.p.values[av].sizes)
    fields = {"a": av, "b": bv, "y": y, "kind": BINARY[name_of(node)], **epilogue(act), "b_inner": inner,
              "b_block": block}
    c.op("Binary", fields, fused, [av, bv], [y], decisions)
    c.done.update(fused)
    c.env[last] = (y, NHWC if nhwc else PLAIN)


def lower_unary(c: Builder, node: Any) -> None:
    """An activation, or x * scale + shift and the activation after it."""
    xv, layout = c.get(node.args[0])
    y = c.workspace(c.p.values[xv].sizes)
    affine = affine_of(node)
    fused, decisions = [node], {}
    if affine is None:
        last, act = node, activation_of(node)
        if act is None:
            raise ExportError(f"cpu backend: node {node.name} is neither an affine op nor an activation")
    else:
        ep = epilogue_of(node)  # an activation
        fused, decisions, last, act = ep.nodes, ep.decisions(), ep.last, ep.act
    scale, shift = affine or (1.0, 0.0)
    c.op("Unary", {"x": xv, "y": y, **epilogue(act), "scale": scale, "shift": shift}, fused, [xv], [y], decisions)
    c.done.update(fused)
    c.env[last] = (y, layout)


def lower_layer_norm(c: Builder, node: Any) -> None:
    x, norm_shape, w, b, eps = node.args[:5]
    xv = c.plain(x)
    wv = c.weights(c.const(w).reshape(-1)) if w is not None else -1
    bv = c.weights(c.const(b).reshape(-1)) if b is not None else -1
    y = c.workspace(shape(x))
    fields = {"x": xv, "y": y, "weight": wv, "bias": bv, "inner": math.prod(norm_shape), "eps": float(eps)}
    c.op("LayerNorm", fields, [node], [v for v in (xv, wv, bv) if v >= 0], [y])
    c.env[node] = (y, PLAIN)  # its getitem 0 (the only use) reads it


def lower_softmax(c: Builder, node: Any) -> None:
    x = c.plain(node.args[0])
    y = c.workspace(shape(node))
    c.op("Softmax", {"x": x, "y": y, "inner": shape(node)[-1]}, [node], [x], [y])
    c.env[node] = (y, PLAIN)


@dataclass
class RmsNorm:
    """x / sqrt(mean(x^2, last dim) + eps) [* weight], as models write it
    (Llama's LlamaRMSNorm, torch.nn.RMSNorm after decomposition):
    pow(x, 2) -> mean.dim(-1, keepdim) -> add.Scalar(eps) -> rsqrt ->
    mul(x, .) [-> mul by a constant weight of the last dim's size]."""
    x: Any
    eps: float
    weight: Any  # a get_attr node, or None
    nodes: list[Any]  # the pow first, the last node (what the norm's value is) last


def rms_norm_at(head: Any) -> RmsNorm | None:
    """The RMSNorm whose first node (the pow) is head, else None."""
    if name_of(head) != "aten::pow.Tensor_Scalar" or len(head.args) != 2 or head.args[1] != 2:
        return None
    x = head.args[0]
    if not hasattr(x, "meta") or rank(x) < 1:
        return None
    d = shape(x)[-1]
    mean = only_user(head)
    if (mean is None or name_of(mean) != "aten::mean.dim" or len(mean.args) < 3 or mean.args[2] is not True
            or [int(a) % rank(x) for a in mean.args[1]] != [rank(x) - 1] or mean.kwargs.get("dtype") is not None):
        return None
    add = only_user(mean)
    if add is None or name_of(add) != "aten::add.Scalar" or add.args[0] is not mean or len(add.args) != 2:
        return None
    eps = add.args[1]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
        return None
    rsqrt = only_user(add)
    mul = only_user(rsqrt) if rsqrt is not None and name_of(rsqrt) == "aten::rsqrt" else None
    if mul is None or name_of(mul) != "aten::mul.Tensor" or set(mul.args) != {x, rsqrt} or len(mul.args) != 2:
        return None
    nodes, weight = [head, mean, add, rsqrt, mul], None
    scaled = only_user(mul)
    if scaled is not None and name_of(scaled) == "aten::mul.Tensor" and len(scaled.args) == 2 and mul in scaled.args:
        w = scaled.args[1] if scaled.args[0] is mul else scaled.args[0]
        if is_const(w) and w is not mul and shape(w)[-1:] == (d,) and math.prod(shape(w)) == d:
            nodes.append(scaled)
            weight = w
    return RmsNorm(x, float(eps), weight, nodes)


def rms_norm_containing(node: Any) -> RmsNorm | None:
    """The RMSNorm node is part of (found from its pow, at most 5 calls
    before it), else None."""
    if name_of(node) not in RMS_NORM_OPS:
        return None
    seen, frontier = set(), [node]
    for _ in range(6):
        nxt = []
        for n in frontier:
            if n in seen or getattr(n, "op", None) != "call_function":
                continue
            seen.add(n)
            norm = rms_norm_at(n)
            if norm is not None and node in norm.nodes:
                return norm
            nxt.extend(n.all_input_nodes)
        frontier = nxt
    return None


RMS_NORM_OPS = ("aten::pow.Tensor_Scalar", "aten::mean.dim", "aten::add.Scalar", "aten::rsqrt",
                "aten::mul.Tensor")


def lower_rms_norm(c: Builder, node: Any) -> None:
    norm = rms_norm_at(node)
    if norm is None:
        raise ExportError(f"cpu backend: node {node.name} is not the start of an RMSNorm")
    xv = c.plain(norm.x)
    wv = c.weights(c.const(norm.weight).reshape(-1)) if norm.weight is not None else -1
    y = c.workspace(shape(norm.x))
    fields = {"x": xv, "y": y, "weight": wv, "inner": shape(norm.x)[-1], "eps": norm.eps}
    c.op("RmsNorm", fields, norm.nodes, [v for v in (xv, wv) if v >= 0], [y])
    c.done.update(norm.nodes)
    c.env[norm.nodes[-1]] = (y, PLAIN)
