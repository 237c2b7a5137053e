"""Stores 4-bit weights two per byte.

    torchao::dequantize_affine(w_int4_in_int8 [N, K], [1, g], scale, zp, int8, -8, 7)
      -> tern::dequantize_affine_int4(w_packed uint8 [N, K/2], [1, g], scale, zp, -8, 7)

convert_pt2e keeps int4 weights one per int8 byte; packed, they take half
the file. The rewrite applies to a dequantize_affine of a constant whose
quant range fits 4 bits (signed -8..7 or unsigned 0..15) and whose last dim
is even; an all-zero zero point (symmetric quantization) is dropped. Packing: element 2j of a row in the low nibble of byte j, 2j+1 in the
high nibble, as two's complement when quant_min < 0 (the kernel:
kernels/portable/op_quantize.cpp). The values are unchanged, so the graph's
outputs are too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tern.graph import add_constant, constant_of

if TYPE_CHECKING:
    import torch
    import torch.fx

_SCHEMA = ("dequantize_affine_int4(Tensor packed, int[] block_size, Tensor scale, Tensor? zero_point, "
           "int quant_min, int quant_max) -> Tensor")


def int4_op() -> "torch._ops.OpOverload":
    """torch.ops.tern.dequantize_affine_int4.default, defined on first use."""
    from tern.custom_ops import define

    return define("dequantize_affine_int4", _SCHEMA, _dequantize_int4, _dequantize_int4_meta)


def pack_int4(q: "torch.Tensor") -> "torch.Tensor":
    """int8 values in [-8, 15] [..., K] (K even) -> uint8 [..., K/2]."""
    import torch

    nib = (q.to(torch.int16) & 0xF).to(torch.uint8)
    return (nib[..., 0::2] | (nib[..., 1::2] << 4)).contiguous()


def unpack_int4(packed: "torch.Tensor", is_signed: bool) -> "torch.Tensor":
    """pack_int4's inverse: uint8 [..., K/2] -> int16 [..., K]."""
    import torch

    lo = (packed & 0xF).to(torch.int16)
    hi = (packed >> 4).to(torch.int16)
    if is_signed:
        lo = torch.where(lo >= 8, lo - 16, lo)
        hi = torch.where(hi >= 8, hi - 16, hi)
    return torch.stack([lo, hi], dim=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)


def _dequantize_int4(packed, block_size, scale, zero_point, quant_min, quant_max):
    import torch
    from torchao.quantization.quant_primitives import _dequantize_affine_no_dtype_check

    q = unpack_int4(packed, quant_min < 0).to(torch.int32)
    return _dequantize_affine_no_dtype_check(q, list(block_size), scale, zero_point, quant_min, quant_max,
                                             torch.float32)


def _dequantize_int4_meta(packed, block_size, scale, zero_point, quant_min, quant_max):
    import torch

    return packed.new_empty((*packed.shape[:-1], packed.shape[-1] * 2), dtype=torch.float32)


def pack_int4_weights(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Rewrites each dequantize_affine of constant 4-bit values to its packed form."""
    import torch

    affine = getattr(getattr(torch.ops, "torchao", None), "dequantize_affine", None)
    if affine is None:
        return gm
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not affine.default:
            continue
        args = list(node.args) + [None] * (7 - len(node.args))
        q_node, block, scale, zp, _dtype, qmin, qmax = args[:7]
        qmin = node.kwargs.get("quant_min", qmin)
        qmax = node.kwargs.get("quant_max", qmax)
        out_dtype = node.kwargs.get("output_dtype", torch.float32)
        q = constant_of(gm, q_node) if isinstance(q_node, torch.fx.Node) else None
        if (q is None or q.dim() == 0 or q.shape[-1] % 2 or out_dtype != torch.float32
                or not isinstance(qmin, int) or not isinstance(qmax, int)
                or not ((-8 <= qmin and qmax <= 7) or (0 <= qmin and qmax <= 15))
                or q.dtype not in (torch.int8, torch.uint8, torch.int16, torch.int32)):
            continue
        if int(q.min()) < qmin or int(q.max()) > qmax:
            continue  # values outside the range they claim: leave them as they are
        zp_value = constant_of(gm, zp) if isinstance(zp, torch.fx.Node) else None
        if zp_value is not None and not bool(zp_value.any()):
            zp = None  # all zero (symmetric): nothing to store or subtract
        with gm.graph.inserting_before(node):
            packed = add_constant(gm, f"{q_node.name}_int4", pack_int4(q))
            new = gm.graph.call_function(int4_op(), (packed, list(block), scale, zp, qmin, qmax))
        new.meta.update(node.meta)
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    return gm
