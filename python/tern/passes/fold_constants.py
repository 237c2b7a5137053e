"""Computes at export time the ops whose inputs are all constants.

    permute(weight, [1, 0]) -> weight_t   (a new constant; no copy per inference)

An op node is folded when every tensor it reads is a get_attr constant (or it
reads none), it returns one tensor, it is not random, and folding does not
grow the file much: the result is at most as big as the constants it reads,
or at most SMALL_BYTES; dequantize ops are never folded (the integers they
read are what a quantized file stores). The result is computed by the same ATen op in eager
PyTorch, so numerics are unchanged. Replaced constants that nothing else
reads are dropped by dead-code elimination.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from tern.graph import add_constant, constant_of

if TYPE_CHECKING:
    import torch
    import torch.fx

SMALL_BYTES = 4096


def _is_dequantize(target: Any) -> bool:
    """A dequantize op (quantized_decomposed::dequantize_per_channel, ...):
    never folded, whatever its size. The file keeps the integers, and the cpu
    backend finds the quantized operators by their dequantize inputs."""
    return "dequantize" in target._schema.name


def fold_constants(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Replaces each foldable op node (in graph order, so chains fold) by a constant."""
    for node in list(gm.graph.nodes):
        value = _fold(gm, node)
        if value is None:
            continue
        with gm.graph.inserting_before(node):
            const = add_constant(gm, f"{node.name}_folded", value)
        const.meta.update({k: v for k, v in node.meta.items() if k != "val"})
        node.replace_all_uses_with(const)
        gm.graph.erase_node(node)
    return gm


def _fold(gm: "torch.fx.GraphModule", node: "torch.fx.Node") -> "torch.Tensor | None":
    """The node's value if it should be folded, else None."""
    import torch
    from torch.fx.node import map_arg

    if node.op != "call_function" or node.target is operator.getitem or not hasattr(node.target, "_schema"):
        return None
    if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
        return None
    if _is_dequantize(node.target):
        return None
    if len(node.target._schema.returns) != 1 or not isinstance(node.meta.get("val"), torch.Tensor):
        return None
    inputs = node.all_input_nodes
    consts = [constant_of(gm, n) for n in inputs]
    if any(c is None for c in consts):
        return None
    out = node.meta["val"]
    out_bytes = out.numel() * out.element_size()
    if out_bytes > max(sum(c.numel() * c.element_size() for c in consts), SMALL_BYTES):
        return None
    env: dict[Any, Any] = dict(zip(inputs, consts))
    with torch.no_grad():
        value = node.target(*map_arg(node.args, env.__getitem__), **map_arg(node.kwargs, env.__getitem__))
    return value.contiguous().clone()
