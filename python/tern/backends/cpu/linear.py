"""Linear layers and matrix products: addmm / mm with a constant weight as
a 1x1 Conv (a bias add, a residual add and an activation fused after it,
past reshapes), bmm of a constant matrix expanded over the batch the same
way, and other batched products as MatMul.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tern.backends.cpu.activations import epilogue
from tern.backends.cpu.ir import PLAIN, Builder, epilogue_of, is_const, name_of, rank, shape
from tern.backends.cpu.pack import pack_linear
from tern.backends.cpu.layout import expanded_weight

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("Conv", "MatMul")


def supports_linear(node: Any) -> str | None:
    if name_of(node) == "aten::mm":
        x, w = node.args[:2]
        if rank(x) != 2:
            return f"an mm of a rank-{rank(x)} input"
        return None if is_const(w) else "an mm whose second operand is computed, not a constant weight"
    b, x, w = node.args[:3]
    beta = node.kwargs.get("beta", node.args[3] if len(node.args) > 3 else 1)
    alpha = node.kwargs.get("alpha", node.args[4] if len(node.args) > 4 else 1)
    if rank(x) != 2:
        return f"an addmm of a rank-{rank(x)} input"
    if not (is_const(w) and is_const(b) and rank(b) == 1):
        return "an addmm whose weight or bias is computed, or whose bias is not a vector"
    return None if beta == 1 and alpha == 1 else "an addmm with beta or alpha other than 1"


def supports_bmm(node: Any) -> str | None:
    if rank(node.args[0]) == 3 and rank(node.args[1]) == 3:
        return None
    return "a bmm of operands that are not 3-d"


def lower_linear(c: Builder, node: Any) -> None:
    if name_of(node) == "aten::addmm":
        b, x, w = node.args[:3]
        bias = c.const(b)
    else:
        (x, w), bias = node.args[:2], None
    m, k = shape(x)
    _gemm(c, node, x, c.const(w), bias, m)


def _gemm(c: Builder, node: Any, x: Any, w_kn: np.ndarray, bias: np.ndarray | None, m: int) -> None:
    """y [m, n] = x [m, k] . w_kn + bias as a 1x1 Conv, with what its
    epilogue takes in (plain layout, so past reshapes): a constant bias
    over the last dim, a residual add, an activation."""
    k, n = w_kn.shape
    xv = c.alias(c.plain(x), (m, 1, 1, k))
    ep = epilogue_of(node)
    fused, decisions, res, last, act = ep.nodes, ep.decisions(), ep.residual_value, ep.last, ep.act
    if ep.bias_value is not None:
        extra = c.const(ep.bias_value).reshape(n)
        bias = extra if bias is None else bias + extra
    y = c.workspace((m, 1, 1, n))
    rv = c.alias(c.plain(res), (m, 1, 1, n)) if res is not None else -1
    wv = c.weights(pack_linear(w_kn, bias))
    fields = {"x": xv, "weights": wv, "residual": rv, "y": y, "kernel": (1, 1), "stride": (1, 1),
              "padding": (0, 0), "dilation": (1, 1), "depthwise": False, **epilogue(act)}
    c.op("Conv", fields, fused, [xv, wv] + ([rv] if rv >= 0 else []), [y], decisions)
    c.done.update(fused)
    c.env[last] = (c.alias(y, shape(last)), PLAIN)


def lower_bmm(c: Builder, node: Any) -> None:
    a, b = node.args[:2]
    batch, m, k = shape(a)
    w = expanded_weight(b)
    if w is not None:  # the same matrix for every batch: one linear layer over batch * m rows
        _gemm(c, node, a, c.const(w).reshape(k, -1), None, batch * m)
        return
    n = shape(b)[2]
    av, bv = c.plain(a), c.plain(b)
    packed = c.workspace((batch * ((n + 15) // 16) * 16 * (1 + k),))
    y = c.workspace((batch, m, n))
    fields = {"a": av, "b": bv, "y": y, "packed": packed, "batch": batch, "m": m, "k": k, "n": n}
    c.op("MatMul", fields, [node], [av, bv, packed], [y, packed])
    c.env[node] = (y, PLAIN)
