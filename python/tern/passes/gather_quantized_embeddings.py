"""Gathers an embedding's quantized rows before dequantizing them.

    embedding(dequantize(table), ids)  ->  dequantize(embedding(table, ids), embedding(scales, ids), ...)

A weight-only quantized embedding (tern.quantize "int8-weight" or
"int4-weight") reads a table that convert_pt2e dequantizes whole: every call
would turn the vocabulary's rows into floats to use a few of them. The rows
are quantized one by one (per row, int8; in groups along the row, int4), so
gathering the integers and each row's scales (and zero points) first, then
dequantizing what was gathered, computes the same values. For
dequantize_per_channel along axis 0 and tern::dequantize_affine_int4 with
groups [1, g] of constants. Ids of one dim may have a dynamic length (a
torch.export.Dim: a bag of token ids); ids of more dims with dynamic sizes
keep the dequantized table (correct, but the whole table per call).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tern.graph import add_constant, call_function, constant_of
from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx

_DQC = "quantized_decomposed::dequantize_per_channel"
_INT4 = "tern::dequantize_affine_int4"


def gather_quantized_embeddings(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    import torch

    aten = torch.ops.aten
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.embedding.default:
            continue
        dq, ids = node.args[0], node.args[1]
        name = op_name(getattr(dq, "target", None)) if getattr(dq, "op", None) == "call_function" else ""
        if name not in (_DQC, _INT4) or len(dq.users) != 1:
            continue
        consts = [constant_of(gm, a) if isinstance(a, torch.fx.Node) else None for a in dq.args[:4]]
        g = gm.graph
        shape = list(ids.meta["val"].shape)
        one_dim = len(shape) == 1
        if not one_dim and not all(isinstance(s, int) for s in shape):
            continue
        n = 1
        for s in shape:
            n *= s
        added: list[Any] = []

        def flat_ids() -> Any:
            if one_dim:
                return ids
            added.append(call_function(g, aten.view.default, (ids, [n])))
            return added[-1]

        with g.inserting_before(node):
            if name == _DQC:
                table, scales, zps = consts[0], consts[1], consts[2]
                axis = dq.args[3]
                if table is None or scales is None or table.dim() != 2 or axis not in (0, -2) \
                        or (dq.args[2] is not None and (zps is None or bool(zps.any()))):
                    continue
                flat = flat_ids()
                rows = call_function(g, aten.embedding.default, (dq.args[0], flat))
                col = add_constant(gm, f"{dq.args[1].name}_rows", scales.reshape(-1, 1))
                s_col = call_function(g, aten.embedding.default, (col, flat))
                s_rows = call_function(g, aten.view.default, (s_col, [-1]))
                deq = call_function(g, dq.target, (rows, s_rows, None, 0, *dq.args[4:7]), dq.kwargs)
                added += [rows, s_col, s_rows, deq]
            else:
                packed, block, scale, zp = dq.args[:4]
                if consts[0] is None or consts[2] is None or consts[0].dim() != 2 or list(block)[0] != 1 \
                        or (zp is not None and consts[3] is None):
                    continue
                vocab = consts[0].shape[0]
                if consts[2].numel() % vocab or (zp is not None and consts[3].numel() % vocab):
                    continue
                # one row of parameters per table row, whatever their stored shape
                scale = add_constant(gm, f"{scale.name}_rows", consts[2].reshape(vocab, -1))
                zp = add_constant(gm, f"{zp.name}_rows", consts[3].reshape(vocab, -1)) if zp is not None else None
                flat = flat_ids()
                rows = call_function(g, aten.embedding.default, (packed, flat))
                s_rows = call_function(g, aten.embedding.default, (scale, flat))
                z_rows = call_function(g, aten.embedding.default, (zp, flat)) if zp is not None else None
                deq = call_function(g, dq.target, (rows, list(block), s_rows, z_rows, *dq.args[4:6]))
                added += [rows, s_rows, deq] + ([z_rows] if z_rows is not None else [])
            out = deq
            if not one_dim:
                out = call_function(g, aten.view.default, (deq, [*shape, deq.meta["val"].shape[-1]]))
                added.append(out)
        for new in added:
            new.meta.setdefault("stack_trace", node.meta.get("stack_trace"))
        node.replace_all_uses_with(out)
        g.erase_node(node)
        g.erase_node(dq)
    return gm
