"""Lowers aten.clamp with number bounds on floating tensors to aten.hardtanh.

    clamp(x, lo, hi) == hardtanh(x, lo if given else -inf, hi if given else +inf)

Both are min(max(x, lo), hi) in PyTorch (NaN propagates in both), so the result
is bit-identical. torch's decompositions of hardsigmoid/relu6 emit clamp;
hardtanh is the cheaper kernel. Integer or promoted inputs and tensor bounds
(clamp.Tensor) are left to the aten::clamp kernel.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx


def lower_clamp(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Rewrites each eligible clamp node as a hardtanh node."""
    import torch

    for node in list(gm.graph.nodes):
        if node.op != "call_function" or op_name(node.target) != "aten::clamp" or node.kwargs:
            continue
        x, lo, hi = (list(node.args) + [None, None])[:3]
        val = node.meta.get("val")
        src = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        # hardtanh keeps its input's dtype: only a floating input that clamp
        # does not promote (clamp(int_tensor, 0.5, 1.5) is float32) qualifies.
        if not (
            isinstance(val, torch.Tensor)
            and isinstance(src, torch.Tensor)
            and val.dtype.is_floating_point
            and src.dtype == val.dtype
            and _number(lo)
            and _number(hi)
        ):
            continue
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(torch.ops.aten.hardtanh.default, (x, lo, hi))
        new.meta.update(node.meta)
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    return gm


def _number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
