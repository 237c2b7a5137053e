"""Folds inference batch norm into the convolution before it.

    y = conv(x, W, b);  z = (y - mean) / sqrt(var + eps) * gamma + beta
becomes
    z = conv(x, W * s, (b - mean) * s + beta),   s = gamma / sqrt(var + eps)
with s broadcast over W's output-channel dim (dim 0 of a non-transposed
convolution's weight [C_out, C_in/groups, kH, kW]).

Matched only when: the batch norm is `_native_batch_norm_legit_no_training`
whose input is an `aten.convolution` (not transposed) used by nothing else;
W, b (if any) and all batch-norm tensors are constants; only output 0 of the
batch norm is used. The folded W and b are new constants computed in float64
and cast back to W's dtype; the old constants are dropped by dead-code
elimination if nothing else reads them.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from tern.graph import add_constant, constant_of
from tern.ops import op_name

if TYPE_CHECKING:
    import torch
    import torch.fx


def fold_batch_norm(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Folds every matching conv -> batch norm pair."""
    for bn in list(gm.graph.nodes):
        if bn.op == "call_function" and op_name(bn.target) == "aten::_native_batch_norm_legit_no_training":
            _try_fold(gm, bn)
    return gm


def _try_fold(gm: "torch.fx.GraphModule", bn: "torch.fx.Node") -> None:
    conv = bn.args[0]
    if not _foldable(gm, conv, bn):
        return
    weight, bias = _folded(gm, conv, bn)
    with gm.graph.inserting_before(conv):
        w_node = add_constant(gm, f"{conv.name}_folded_weight", weight)
        b_node = add_constant(gm, f"{conv.name}_folded_bias", bias)
        new_conv = gm.graph.call_function(conv.target, (conv.args[0], w_node, b_node, *conv.args[3:]), conv.kwargs)
    new_conv.meta.update(conv.meta)
    for user in list(bn.users):
        if user.args[1] == 0:
            user.replace_all_uses_with(new_conv)
        gm.graph.erase_node(user)
    gm.graph.erase_node(bn)
    gm.graph.erase_node(conv)


def _foldable(gm: "torch.fx.GraphModule", conv: object, bn: "torch.fx.Node") -> bool:
    if not hasattr(conv, "op") or conv.op != "call_function" or op_name(conv.target) != "aten::convolution":
        return False
    if len(conv.users) != 1 or conv.kwargs or len(conv.args) != 9 or conv.args[6]:  # args[6]: transposed
        return False
    if constant_of(gm, conv.args[1]) is None or (conv.args[2] is not None and constant_of(gm, conv.args[2]) is None):
        return False
    bn_tensors = [a for a in bn.args[1:5] if a is not None]
    if bn.kwargs or len(bn.args) != 7 or any(constant_of(gm, a) is None for a in bn_tensors):
        return False
    if any(constant_of(gm, a) is None for a in bn.args[3:5]):  # running mean and var are required
        return False
    users = list(bn.users)
    uses_ok = all(u.op == "call_function" and u.target is operator.getitem for u in users)
    return uses_ok and all(u.args[1] == 0 or not u.users for u in users) and any(u.args[1] == 0 for u in users)


def _folded(gm: "torch.fx.GraphModule", conv: "torch.fx.Node", bn: "torch.fx.Node") -> tuple["torch.Tensor", "torch.Tensor"]:
    """(W * s, (b - mean) * s + beta), computed in float64."""
    import torch

    w = constant_of(gm, conv.args[1])
    c_out = w.shape[0]
    f64 = dict(dtype=torch.float64)
    b = constant_of(gm, conv.args[2]).to(**f64) if conv.args[2] is not None else torch.zeros(c_out, **f64)
    gamma, beta, mean, var = (constant_of(gm, a).to(**f64) if a is not None else None for a in bn.args[1:5])
    eps = float(bn.args[6])
    scale = torch.rsqrt(var + eps) * (gamma if gamma is not None else 1.0)
    shift = beta if beta is not None else torch.zeros(c_out, **f64)
    weight = w.to(**f64) * scale.reshape(-1, *([1] * (w.dim() - 1)))
    bias = (b - mean) * scale + shift
    return weight.to(w.dtype).contiguous(), bias.to(w.dtype).contiguous()
