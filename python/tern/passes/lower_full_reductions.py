"""Lowers full sums (x.sum()) to their dim-list form.

    aten.sum.default(x, dtype=d) -> aten.sum.dim_IntList(x, [0, .., n-1], False, dtype=d)

Same result (a 0-d tensor); the runtime has a kernel for the dim form only.
A 0-d input reduces over no dims, which is also the identity in both forms.
Full means (aten.mean.default) stay as they are: the runtime has a kernel
for them (kernels/portable/op_mean.cpp), and it takes 0-d inputs too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx


def lower_full_reductions(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Rewrites sum.default nodes."""
    import torch

    aten = torch.ops.aten
    targets = {"aten::sum": aten.sum.dim_IntList}
    for node in list(gm.graph.nodes):
        target = targets.get(op_name(node.target)) if node.op == "call_function" else None
        x = node.args[0] if node.args else None
        val = getattr(x, "meta", {}).get("val")
        if target is None or len(node.args) != 1 or not isinstance(val, torch.Tensor) or val.dim() == 0:
            continue
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(target, (x, list(range(val.dim())), False), dict(node.kwargs))
        new.meta.update(node.meta)
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    return gm
