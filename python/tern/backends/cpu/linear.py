"""Linear layers and matrix products: addmm / mm with a constant weight as
a 1x1 Conv (a bias add, a residual add and an activation fused after it,
past reshapes), bmm of a constant matrix expanded over the batch the same
way, and other batched products as MatMul; and (CpuOptions.block_linear)
addmm / mm of a GGUF weight, tern::gguf_dequantize of constant Q4_0, Q4_1
or Q8_0 rows transposed (what F.linear(x, gguf_dequantize(...)) exports
as), as one BlockLinear over the rows as the file holds them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tern.backends.cpu.activations import epilogue
from tern.backends.cpu.ir import PLAIN, Builder, epilogue_of, is_const, name_of, only_user, rank, shape
from tern.backends.cpu.pack import pack_linear
from tern.backends.cpu.layout import expanded_weight

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("Conv", "MatMul", "BlockLinear")

GGUF = "tern::gguf_dequantize"
BLOCK_FORMATS = {2: "Q4_0", 3: "Q4_1", 8: "Q8_0"}  # GGML's type numbers BlockLinear reads (cpu.fbs)
BLOCK_LINEAR = "tern_cpu_block_linear"  # node.meta key of an addmm / mm: its BlockWeight (choose_block_linears)
SUBGRAPH = "_tern_cpu_subgraph"  # set on a claimed subgraph's module while it compiles (compile.py)


@dataclass(frozen=True)
class BlockWeight:
    """A linear layer's weight that BlockLinear reads: the gguf_dequantize
    of constant rows and the transpose (permute [1, 0]) the linear layer reads."""
    rows: Any  # the get_attr of uint8 [n, row_bytes]
    code: int  # its format, a BLOCK_FORMATS key
    k: int
    dequantize: Any
    transpose: Any
    linear: Any  # the addmm or mm


def block_weight(node: Any) -> BlockWeight | str:
    """node, a tern::gguf_dequantize, as a BlockWeight if it is one linear
    layer's weight and nothing else; else why not. Its rows are a constant
    (a get_attr), or, in a claimed subgraph, a placeholder: a constant the
    rest of the method reads too, passed as a delegate input
    (CpuPartitioner.shares_constant)."""
    rows, code, k = node.args[:3]
    if code not in BLOCK_FORMATS:
        return f"a GGUF weight of format {code} (BlockLinear reads Q4_0 (2), Q4_1 (3), Q8_0 (8))"
    shared = getattr(rows, "op", None) == "placeholder" and node.graph.owning_module is not None and getattr(
        node.graph.owning_module, SUBGRAPH, False)
    if not (is_const(rows) or shared) or rank(rows) != 2:
        return "GGUF rows that are not a constant [n, row_bytes]"
    t = only_user(node)
    if t is None or name_of(t) != "aten::permute" or [int(d) % 2 for d in t.args[1]] != [1, 0]:
        return "a dequantized GGUF weight used other than as the weight of one linear layer"
    lin = only_user(t)
    if lin is None or name_of(lin) not in ("aten::mm", "aten::addmm"):
        return "a dequantized GGUF weight used other than as the weight of one linear layer"
    x, w = lin.args[:2] if name_of(lin) == "aten::mm" else lin.args[1:3]
    if w is not t or x is t or rank(x) != 2:
        return "a dequantized GGUF weight used other than as the weight of one linear layer"
    if name_of(lin) == "aten::addmm" and supports_linear(lin, const_weight=False) is not None:
        return supports_linear(lin, const_weight=False)
    return BlockWeight(rows, int(code), int(k), node, t, lin)


def block_weight_of(linear: Any) -> BlockWeight | None:
    """The BlockWeight an addmm / mm reads, or None."""
    w = linear.args[1] if name_of(linear) == "aten::mm" else linear.args[2]
    src = w.args[0] if name_of(w) == "aten::permute" else None
    bw = block_weight(src) if src is not None and name_of(src) == GGUF else None
    return bw if isinstance(bw, BlockWeight) and bw.linear is linear else None


def shares_rows(placeholder: Any, options: Any) -> bool:
    """Whether a claimed subgraph's placeholder is GGUF rows its BlockLinears
    alone read (CpuPartitioner.shares_constant): the constant then stays a
    delegate input, so a file whose embedding and output layer share their
    rows (tied weights) holds them once."""
    users = list(placeholder.users)
    return options.block_linear and rank(placeholder) == 2 and bool(users) and all(
        name_of(u) == GGUF and u.args[0] is placeholder for u in users)


def block_linear_refusal(node: Any, options: Any) -> str | None | bool:
    """For the partitioner: None if node is a part of a BlockLinear it
    claims (the gguf_dequantize or the linear layer), a string saying why a
    gguf_dequantize stays portable, or False for any other node (the other
    families decide)."""
    if name_of(node) == GGUF:
        if not options.block_linear:
            return "CpuOptions(block_linear=False): GGUF weights are dequantized by the portable kernel"
        bw = block_weight(node)
        return bw if isinstance(bw, str) else None
    if options.block_linear and name_of(node) in ("aten::mm", "aten::addmm") and block_weight_of(node) is not None:
        return None
    return False


def supports_linear(node: Any, const_weight: bool = True) -> str | None:
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
    if not ((is_const(w) or not const_weight) and is_const(b) and rank(b) == 1):
        return "an addmm whose weight or bias is computed, or whose bias is not a vector"
    return None if beta == 1 and alpha == 1 else "an addmm with beta or alpha other than 1"


def supports_bmm(node: Any) -> str | None:
    if rank(node.args[0]) == 3 and rank(node.args[1]) == 3:
        return None
    return "a bmm of operands that are not 3-d"


def lower_linear(c: Builder, node: Any) -> None:
    if BLOCK_LINEAR in node.meta:
        _block_linear(c, node, node.meta[BLOCK_LINEAR])
        return
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


def _block_linear(c: Builder, node: Any, bw: BlockWeight) -> None:
    """y [m, n] = x [m, k] . W^T (+ the addmm's bias), W the GGUF rows as
    they are: an Int8 weights value [n, row_bytes] of their bytes. Its
    epilogue stays the following ops' (choose_block_linears keeps it no head)."""
    if bw.rows.op == "placeholder":  # shared with the rest of the method: the delegate input, as the file holds it
        wv = c.get(bw.rows)[0]
        n = shape(bw.rows)[0]
    else:
        rows = getattr(c.gm, bw.rows.target).detach().contiguous().numpy()
        n, row_bytes = rows.shape
        wv = c.alias(c.weights_int8(rows.view(np.int8).reshape(-1)), (n, row_bytes))
    x = node.args[0] if name_of(node) == "aten::mm" else node.args[1]
    xv = c.plain(x)
    m = shape(x)[0]
    reads = [xv, wv]
    fields: dict[str, Any] = {"x": xv, "weights": wv, "bias": -1}
    if name_of(node) == "aten::addmm":
        fields["bias"] = c.weights(c.const(node.args[0]).reshape(n))
        reads.append(fields["bias"])
    y = c.workspace((m, n))
    fields.update({"y": y, "format": bw.code})
    c.op("BlockLinear", fields, [node, bw.dequantize, bw.transpose], reads, [y], {"block_linear": bw.rows.name})
    c.env[node] = (y, PLAIN)


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
