"""Removes runtime assertions that torch.export leaves in the graph.

`x.to(dtype)` and friends leave `aten._assert_tensor_metadata` (and dynamic
shapes leave `_assert_scalar` / `sym_constrain_range*`). Format v1 has static
shapes and dtypes that the runtime checks once at load, so these checks were
already decided at export time; they produce nothing and have no kernel.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx

_ASSERTS = frozenset(
    {
        "aten::_assert_tensor_metadata",
        "aten::_assert_scalar",
        "aten::_assert_async",
        "aten::_assert_async.msg",
        "aten::sym_constrain_range",
        "aten::sym_constrain_range_for_size",
    }
)


def remove_asserts(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Erases assertion nodes (they have no users)."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and not node.users and op_name(node.target) in _ASSERTS:
            gm.graph.erase_node(node)
    return gm
