"""Uses the Scalar overloads when the other operand is a Python number.

    aten.add.Tensor(x, 2.0, alpha=a) -> aten.add.Scalar(x, 2.0, alpha=a)
    (likewise sub, mul, div, eq; div.Tensor_mode -> div.Scalar_mode)

PyTorch implements the Scalar overloads by wrapping the number exactly as it
does for the Tensor overloads, so results are identical; the runtime then
gets a Double/Int argument instead of a 0-d constant tensor. Only the second
operand is rewritten (there is no Scalar overload for `2 - x`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx


def lower_scalar_operands(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Rewrites op.Tensor(node, number) as op.Scalar(node, number)."""
    import torch

    aten = torch.ops.aten
    scalar_ops = {
        "aten::add.Tensor": aten.add.Scalar,
        "aten::sub.Tensor": aten.sub.Scalar,
        "aten::mul.Tensor": aten.mul.Scalar,
        "aten::div.Tensor": aten.div.Scalar,
        "aten::div.Tensor_mode": aten.div.Scalar_mode,
        "aten::eq.Tensor": aten.eq.Scalar,
    }
    for node in list(gm.graph.nodes):
        target = scalar_ops.get(op_name(node.target)) if node.op == "call_function" else None
        if target is None or len(node.args) != 2 or not _is_node(node.args[0]) or not _is_number(node.args[1]):
            continue
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(target, tuple(node.args), dict(node.kwargs))
        new.meta.update(node.meta)
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    return gm


def _is_node(v: Any) -> bool:
    return hasattr(v, "op")


def _is_number(v: Any) -> bool:
    return isinstance(v, (bool, int, float))
