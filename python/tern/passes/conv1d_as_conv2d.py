"""Rewrites a 1-d convolution as a 2-d one of height 1.

    conv1d(x [N, C, L], w [O, C/g, K], b, stride s, padding p, dilation d)
        == view(conv2d(view(x, [N, C, 1, L]), view(w, [O, C/g, 1, K]), b,
                       stride (1, s), padding (0, p), dilation (1, d)), [N, O, L'])

The cpu backend runs 2-d convolutions only; a 1-d one was left to the portable
kernel (the vad app's Silero VAD: 6 conv1d, 90% of a call, issue 25). The
same sums in the same order, so the results are those of the portable kernel
up to the backend's own rounding. Rewritten only when all hold: not
transposed, a 3-d input of static shape, the weight a constant (get_attr: a
float model's; a quantized graph's dequantized weights are left as they are).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx


def conv1d_as_conv2d(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Rewrites each eligible aten.convolution of one spatial dim."""
    import torch

    aten = torch.ops.aten
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or op_name(node.target) != "aten::convolution":
            continue
        x, w, b, stride, padding, dilation, transposed, output_padding, groups = node.args
        xv, wv, out = (n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in (x, w, node))
        if transposed or len(list(padding)) != 1 or not isinstance(w, torch.fx.Node) or w.op != "get_attr":
            continue
        if not all(isinstance(t, torch.Tensor) and t.dim() == 3 and all(isinstance(s, int) for s in t.shape)
                   for t in (xv, wv, out)):
            continue
        n_, c, length = (int(s) for s in xv.shape)
        o, ci, k = (int(s) for s in wv.shape)
        with gm.graph.inserting_before(node):
            x4 = gm.graph.call_function(aten.view.default, (x, [n_, c, 1, length]))
            x4.meta["val"] = xv.new_empty([n_, c, 1, length])
            w4 = gm.graph.call_function(aten.view.default, (w, [o, ci, 1, k]))
            w4.meta["val"] = wv.new_empty([o, ci, 1, k])
            y4 = gm.graph.call_function(aten.convolution.default, (
                x4, w4, b, [1, int(stride[0])], [0, int(padding[0])], [1, int(dilation[0])], False, [0, 0],
                groups))
            y4.meta["val"] = out.new_empty([int(out.shape[0]), int(out.shape[1]), 1, int(out.shape[2])])
            y = gm.graph.call_function(aten.view.default, (y4, [int(s) for s in out.shape]))
            y.meta["val"] = out
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in node.meta:
                x4.meta[key] = w4.meta[key] = y4.meta[key] = y.meta[key] = node.meta[key]
        node.replace_all_uses_with(y)
        gm.graph.erase_node(node)
    return gm
