"""Removes copies that change nothing: aten.clone, aten.alias, aten._to_copy,
and aten.as_strided views that keep the same elements in the same order
(adaptive_avg_pool2d's decomposition leaves one on a [N, C, 1, 1] result).

A copy is dropped (its users read its input instead) only when all hold:
  - its input is produced by an op in the graph (not a user input, not a
    constant), and neither it nor its input is a graph output, so outputs
    never alias inputs, constants or each other;
  - same dtype, shape, layout and device in and out;
  - the input is contiguous and the copy asks for no other memory format, so
    PyTorch's strides (and any later `view`) are unchanged as well; for
    as_strided, the result is contiguous too, at the same storage offset.
The graph is functional (no in-place ops), so no one can observe the sharing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tern.ops import op_name

if TYPE_CHECKING:
    import torch
    import torch.fx

_COPIES = frozenset({"aten::clone", "aten::alias", "aten::_to_copy", "aten::as_strided"})


def remove_noops(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Replaces each no-op copy by its input."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and op_name(node.target) in _COPIES and _is_noop(node):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    return gm


def _is_noop(node: "torch.fx.Node") -> bool:
    src = node.args[0] if node.args else None
    if not hasattr(src, "op") or src.op != "call_function":
        return False
    if _feeds_output(node) or _feeds_output(src):
        return False
    a, b = src.meta.get("val"), node.meta.get("val")
    if not (_is_tensor(a) and _is_tensor(b)):
        return False
    same = a.dtype == b.dtype and a.shape == b.shape and a.device == b.device and a.layout == b.layout
    if not (same and a.is_contiguous() and b.is_contiguous()):
        return False
    if op_name(node.target) == "aten::as_strided":
        return b.storage_offset() == a.storage_offset()
    return _kwargs_keep(node, a)


def _kwargs_keep(node: "torch.fx.Node", src: "torch.Tensor") -> bool:
    """True if the copy's options ask for nothing but a plain same-format copy."""
    import torch

    allowed: dict[str, tuple[Any, ...]] = {
        "memory_format": (None, torch.preserve_format, torch.contiguous_format),
        "dtype": (None, src.dtype),
        "layout": (None, src.layout),
        "device": (None, src.device),
        "pin_memory": (None, False),
        "non_blocking": (False, True),
    }
    if len(node.args) > 1:
        return False
    return all(k in allowed and v in allowed[k] for k, v in node.kwargs.items())


def _feeds_output(node: "torch.fx.Node") -> bool:
    return any(u.op == "output" for u in node.users)


def _is_tensor(v: Any) -> bool:
    import torch

    return isinstance(v, torch.Tensor)
