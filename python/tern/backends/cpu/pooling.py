"""Pooling: max, average and global average (mean over H and W, adaptive
average to 1x1), as one Pool op in NHWC (QPool for int8: quantized_ops.py).
"""
from __future__ import annotations

from typing import Any

from tern.backends.cpu.ir import NHWC, PLAIN, Builder, name_of, only_values_used, pair, rank, shape

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("Pool",)
POOLS = ("aten::mean.dim", "aten::adaptive_avg_pool2d", "aten::avg_pool2d", "aten::max_pool2d_with_indices")


def supports(node: Any) -> str | None:
    """None if a pool node (one of POOLS) fits the backend's Pool / QPool
    window: NHWC, no ceil mode, no dilation, no divisor override, padding at
    most half the window; a mean or adaptive pool over the whole image.
    Else why not."""
    name = name_of(node)
    if rank(node.args[0]) != 4:
        return f"a pool of a rank-{rank(node.args[0])} tensor (4-d NCHW runs)"
    if name == "aten::mean.dim":
        return None if sorted(d % 4 for d in node.args[1]) == [2, 3] else "a mean over dims other than H and W"
    if name == "aten::adaptive_avg_pool2d":
        return None if tuple(node.args[1]) in ((1, 1), (1,)) else "an adaptive average pool to more than 1x1"
    if name == "aten::avg_pool2d":
        return _window_refusal(node, divisor_at=6)
    if not only_values_used(node):
        return "a max pool whose indices are used"
    return _window_refusal(node, dilation_at=4)


def _window_refusal(node: Any, dilation_at: int | None = None, divisor_at: int | None = None) -> str | None:
    args = list(node.args) + [None] * 8
    kernel = tuple(args[1])
    padding = tuple(args[3]) if args[3] else (0,)
    pads = padding * (2 // len(padding))
    kern = kernel * (2 // len(kernel))
    ceil_mode = args[5] if dilation_at is not None else args[4]
    if ceil_mode:
        return "a pool with ceil_mode"
    if any(2 * p > k for p, k in zip(pads, kern)):
        return "a pool padded by more than half its window"
    if dilation_at is not None and args[dilation_at] and any(d != 1 for d in args[dilation_at]):
        return "a dilated pool"
    return None if divisor_at is None or args[divisor_at] is None else "an average pool with divisor_override"


def window(node: Any) -> tuple[dict[str, Any], bool, tuple[int, int, int, int]]:
    """A pool node's Pool / QPool window fields, whether its output keeps the
    4-d shape (else a mean over [n, c]), and the NHWC output sizes."""
    name = name_of(node)
    n, c, h, w = shape(node.args[0])
    fields: dict[str, Any] = {"kind": "Average", "padding": (0, 0), "count_padding": False}
    if name in ("aten::mean.dim", "aten::adaptive_avg_pool2d"):
        fields.update(kernel=(h, w), stride=(1, 1))
        keep = name == "aten::adaptive_avg_pool2d" or (len(node.args) > 2 and node.args[2]) or node.kwargs.get("keepdim")
    else:
        args = list(node.args) + [None] * 6
        kernel = tuple(args[1])
        stride = tuple(args[2]) if args[2] else kernel
        padding = tuple(args[3]) if args[3] else (0, 0)
        fields.update(kernel=pair(kernel), stride=pair(stride), padding=pair(padding))
        if name == "aten::max_pool2d_with_indices":
            fields["kind"] = "Max"
        else:
            fields["count_padding"] = bool(args[5]) if args[5] is not None else True
        keep = True
    val = node.meta["val"]
    out_shape = tuple(int(s) for s in (val[0] if isinstance(val, (tuple, list)) else val).shape)
    oh, ow = (1, 1) if fields["kernel"] == (h, w) and fields["padding"] == (0, 0) else out_shape[2:4]
    return fields, bool(keep), (n, oh, ow, c)


def lower(c: Builder, node: Any) -> None:
    fields, keep, y_shape = window(node)
    xv = c.nhwc(node.args[0])
    y = c.workspace(y_shape)
    c.op("Pool", {"x": xv, "y": y, **fields}, [node], [xv], [y])
    c.env[node] = (y, NHWC) if keep else (c.alias(y, y_shape[::3]), PLAIN)
