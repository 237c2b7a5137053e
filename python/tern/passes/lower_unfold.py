"""Lowers aten.unfold (sliding windows, e.g. torch.stft's frames) to index_select.

    x.unfold(d, size, step) == index_select(x, d, idx).view(.., frames, size, ..).movedim(d + 1, -1)

with idx = [f * step + i for f in range(frames) for i in range(size)], a
constant, and frames = (x.shape[d] - size) // step + 1. The same elements in
the same order (a copy where unfold is a view; every kernel output is one).
Only static shapes are lowered.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tern.graph import add_constant
from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx


def lower_unfold(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Rewrites each aten.unfold node whose input shape is static."""
    import torch

    aten = torch.ops.aten
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or op_name(node.target) != "aten::unfold":
            continue
        x, dim, size, step = node.args
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        out = node.meta.get("val")
        if not (isinstance(val, torch.Tensor) and isinstance(out, torch.Tensor) and val.dim() >= 1
                and all(isinstance(s, int) for s in val.shape)):
            continue
        d = dim % val.dim()
        frames = int(out.shape[d])
        idx = (torch.arange(frames)[:, None] * step + torch.arange(size)[None, :]).reshape(-1)
        shape = [int(s) for s in val.shape]
        windows = shape[:d] + [frames, size] + shape[d + 1:]
        order = list(range(d + 1)) + list(range(d + 2, len(windows))) + [d + 1]
        with gm.graph.inserting_before(node):
            index = add_constant(gm, f"{node.name}_index", idx)
            picked = gm.graph.call_function(aten.index_select.default, (x, d, index))
            picked.meta["val"] = val.new_empty(shape[:d] + [frames * size] + shape[d + 1:])
            new = gm.graph.call_function(aten.view.default, (picked, windows))
            new.meta["val"] = val.new_empty(windows)
            if order != list(range(len(windows))):
                new = gm.graph.call_function(aten.permute.default, (new, order))
                new.meta["val"] = out
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in node.meta:
                picked.meta[key] = new.meta[key] = node.meta[key]
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    return gm
