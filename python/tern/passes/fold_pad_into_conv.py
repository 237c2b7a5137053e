"""Folds a symmetric zero pad into the convolution that reads it.

TensorFlow's "same" padding, as PyTorch ports write it (EfficientNet-Lite's
Conv2dStaticSamePadding: nn.ZeroPad2d, then a conv with padding=0), exports
as aten.constant_pad_nd before aten.convolution. A backend that does not
claim the pad cuts the graph there (the scene app's EfficientNet-Lite0: 17
cuts, each a layout change, a third of the time). When the pad adds the same
number of zeros on both sides of each spatial dim, it is the conv's own
padding:

    conv(pad(x, [l, l, t, t], 0), w, b, padding=[ph, pw])
        == conv(x, w, b, padding=[ph + t, pw + l])

Folded only when all hold: value 0, every amount >= 0 and equal on both
sides, only spatial dims padded, a 1d or 2d convolution (not transposed) as
the pad's only user, reading it as its input, and the pad not a graph output.
Other pads (the stride-2 "same" convs pad 0 before and 1 after) are left;
the cpu backend takes those into its Conv's padding and padding_end
(tern.backends.cpu.fusion.choose_pads).

In a quantized graph (PT2E) the pad sits between quantize/dequantize pairs
that share its input's parameters:

    dequantize(a, s, zp) -> pad -> quantize(s, zp) -> dequantize(s, zp) -> conv

The second pair gives back the values it was given (they are already on the
grid of (s, zp)), and the pad's zeros stay exactly 0 (zp - zp), so the pad and
the pair are dropped together and the conv reads the first dequantize, with
the same parameters required of all three.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx


def fold_pad_into_conv(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Moves each foldable zero pad into its convolution's padding."""
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or op_name(node.target) != "aten::constant_pad_nd":
            continue
        conv = _foldable_conv(node)
        if conv is None:
            continue
        pad = list(node.args[1])
        between = _quantized_pair(node)
        spatial = len(list(conv.args[4]))
        # pad lists the last dim first: [left, right, top, bottom] for 2d
        extra = [pad[2 * k] if 2 * k < len(pad) else 0 for k in reversed(range(spatial))]
        args = list(conv.args)
        args[0] = node.args[0]
        args[4] = [int(p) + e for p, e in zip(conv.args[4], extra)]
        conv.args = tuple(args)
        for n in reversed(between):  # dequantize, then quantize
            gm.graph.erase_node(n)
        gm.graph.erase_node(node)
    return gm


def _foldable_conv(pad_node: "torch.fx.Node") -> "torch.fx.Node | None":
    args = pad_node.args
    value = args[2] if len(args) > 2 else pad_node.kwargs.get("value", 0)
    pad = list(args[1])
    if value != 0 or len(pad) % 2 or any(not isinstance(p, int) or p < 0 for p in pad):
        return None
    if any(pad[i] != pad[i + 1] for i in range(0, len(pad), 2)):
        return None
    between = _quantized_pair(pad_node)
    reader = between[-1] if between else pad_node
    users = list(reader.users)
    if len(users) != 1 or users[0].op != "call_function" or op_name(users[0].target) != "aten::convolution":
        return None
    conv = users[0]
    if conv.args[0] is not reader or reader in conv.args[1:]:
        return None
    transposed, padding = conv.args[6], list(conv.args[4])
    if transposed or len(padding) not in (1, 2) or len(pad) // 2 > len(padding):
        return None  # pads of the batch or channel dims are not conv padding
    if any(not isinstance(p, int) for p in padding):
        return None
    return conv


_Q = "quantized_decomposed::quantize_per_tensor"
_DQ = "quantized_decomposed::dequantize_per_tensor"


def _quantized_pair(pad_node: "torch.fx.Node") -> list["torch.fx.Node"]:
    """[quantize, dequantize] after the pad, each the only user of the one
    before, with the parameters (scale, zero point, range, dtype) of the
    dequantize the pad reads; [] if not so."""
    src = pad_node.args[0]
    if not hasattr(src, "op") or src.op != "call_function" or op_name(src.target) != _DQ:
        return []
    pair, node = [], pad_node
    for want in (_Q, _DQ):
        users = list(node.users)
        if len(users) != 1 or users[0].op != "call_function" or op_name(users[0].target) != want:
            return []
        if users[0].args[0] is not node:
            return []
        node = users[0]
        if tuple(node.args[1:]) != tuple(src.args[1:]) or node.kwargs != src.kwargs:
            return []
        pair.append(node)
    return pair
