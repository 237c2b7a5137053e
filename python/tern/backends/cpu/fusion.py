"""Fusions: what an op takes in besides its own node, each decision written
down where the serializer and a reader find it.

Run by the compiler in a fixed order:
  1. before lowering, over the claimed graph: choose_winograd (on the node,
     meta[WINOGRAD]: whether a 3x3 convolution runs as Winograd F(2x2, 3x3));
  2. while lowering, as each head op is built (the head decides, in this
     order): a constant bias add (fuse_bias_add, linear layers), a residual add
     (fuse_residual), then an activation (fuse_activation); the op's `decisions`
     name the nodes taken in;
  3. after lowering, over the ops: mark_row_chains (Conv.fuse_next, and
     `decisions["row_chain"]`).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from tern.backends.cpu.activations import NO_ACTIVATION, activation_of
from tern.backends.cpu.ir import VIEWS, Builder, Op, Program, name_of, only_user, shape
from tern.backends.cpu.layout import simplify_permute
from tern.backends.cpu.options import CpuOptions

if TYPE_CHECKING:
    import torch.fx

WINOGRAD = "tern_cpu_winograd"  # node.meta key: True if the convolution runs as Winograd


def winograd_fits(wshape: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...], oh: int, ow: int,
                  options: CpuOptions) -> bool:
    oc, c, kh, kw = wshape
    return (options.winograd and (kh, kw) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)
            and oh * ow >= options.winograd_min_pixels and min(c, oc) >= options.winograd_min_channels)


def choose_winograd(gm: "torch.fx.GraphModule", options: CpuOptions) -> None:
    """Marks each ungrouped, untransposed float convolution: Winograd or direct."""
    for node in gm.graph.nodes:
        if name_of(node) != "aten::convolution" or node.args[6] or node.args[8] != 1:
            continue
        w, stride, dilation = node.args[1], node.args[3], node.args[5]
        oh, ow = shape(node)[2:]
        node.meta[WINOGRAD] = winograd_fits(tuple(w.meta["val"].shape), tuple(stride), tuple(dilation), oh, ow,
                                            options)


def is_view(node: Any) -> bool:
    """A reshape, or a permute that keeps the elements in order (of size-1 dims)."""
    name = name_of(node)
    if name == "aten::permute":
        return simplify_permute(shape(node.args[0]), node.args[1]) == ((), ())
    return name in VIEWS


def past_views(node: Any, views: bool) -> tuple[Any, list[Any]]:
    """node's only user and, with `views`, past a chain of reshapes each
    used once (an elementwise op after them may be fused all the same, in
    the plain layout): (that user or None, the reshapes passed)."""
    u, passed = only_user(node), []
    while views and u is not None and is_view(u) and only_user(u) is not None:
        passed.append(u)
        u = only_user(u)
    return u, passed


def fuse_activation(last: Any, fused: list[Any], decisions: dict[str, Any],
               views: bool = False) -> tuple[Any, tuple[str, float, float]]:
    """(new last node, activation) if last's only user (past reshapes, with
    `views`) is an activation; else (last, no activation)."""
    u, passed = past_views(last, views)
    act = activation_of(u) if u is not None else None
    if act is None:
        return last, NO_ACTIVATION
    fused.extend(passed + [u])
    decisions["activation"] = u.name
    return u, act


def _added(node: Any, views: bool) -> tuple[Any, list[Any], Any, Any]:
    """(the add, reshapes passed, node's last reshape or node, the add's
    other operand) if node's only user (past reshapes) is an add.Tensor
    without alpha; else Nones."""
    u, passed = past_views(node, views)
    if u is None or name_of(u) != "aten::add.Tensor" or u.kwargs.get("alpha", 1) != 1 or len(u.args) != 2:
        return None, [], None, None
    mine = passed[-1] if passed else node
    return u, passed, mine, (u.args[1] if u.args[0] is mine else u.args[0])


def fuse_bias_add(c: Builder, node: Any, fused: list[Any], n: int,
             decisions: dict[str, Any]) -> tuple[Any, np.ndarray | None]:
    """(new last node, bias [n]) if node's only user, past reshapes, adds a
    constant of n values over the last dim; else (node, None)."""
    u, passed, mine, other = _added(node, True)
    if u is None or getattr(other, "op", None) != "get_attr" or shape(u) != shape(mine):
        return node, None
    size = shape(other)
    if size[-1:] != (n,) or math.prod(size) != n:
        return node, None
    fused.extend(passed + [u])
    decisions["bias"] = u.name
    return u, c.const(other).reshape(n)


def fuse_residual(c: Builder, node: Any, fused: list[Any], decisions: dict[str, Any],
             views: bool = False) -> tuple[Any, Any]:
    """(the node whose value becomes the residual, the new last node) if
    node's only user (past reshapes, with `views`) adds it to a value
    already computed; else (None, node)."""
    u, passed, mine, other = _added(node, views)
    if u is None:
        return None, node
    known = c.has_value(other) or getattr(other, "op", None) == "get_attr"
    if other is mine or not known or shape(other) != shape(mine):
        return None, node
    fused.extend(passed + [u])
    decisions["residual"] = u.name
    return other, u


def mark_row_chains(p: Program, options: CpuOptions) -> None:
    """Sets fuse_next on each pointwise Conv whose output only the next op,
    a depthwise Conv, reads, and on that depthwise Conv where only the
    op after it, another pointwise Conv, reads its output (options.row_chains).
    A Conv already a stage of one chain never heads another: in pw > dw > pw
    > dw > pw (MobileNetV1) the second pw ends the first chain and the
    third pw heads the next."""
    if not options.row_chains:
        return
    values, ops = p.values, p.ops
    readers: dict[int, int] = {}  # workspace buffer -> ops that read it
    for op in ops:
        for b in {values[v].buffer for v in op.reads if values[v].storage == "Workspace"}:
            readers[b] = readers.get(b, 0) + 1

    def feeds(a: Op, b: Op) -> bool:  # b reads a's output, and nothing else does
        y = values[a.fields["y"]]
        return (b.fields["x"] == a.fields["y"] and y.storage == "Workspace" and readers.get(y.buffer) == 1)

    staged: set[int] = set()  # ops already a stage of a chain: never the head of another
    for i, (a, b, c) in enumerate(zip(ops, ops[1:], ops[2:] + [None])):
        if not (i not in staged and _pointwise(a) and a.fields["residual"] < 0 and b.kind == "Conv"
                and b.fields["depthwise"] and feeds(a, b)
                and values[a.fields["y"]].nbytes >= options.row_chain_min_bytes):
            continue
        # the chain reads x while it writes its output: x lives until the end
        a.fields["fuse_next"] = True
        a.decisions["row_chain"] = "head"
        b.reads.append(a.fields["x"])
        b.decisions["row_chain"] = "stage"
        staged.add(i + 1)
        if c is not None and _pointwise(c) and feeds(b, c):
            b.fields["fuse_next"] = True
            c.reads.append(a.fields["x"])
            c.decisions["row_chain"] = "stage"
            staged.add(i + 2)


def _pointwise(op: Op) -> bool:
    f = op.fields
    return (op.kind == "Conv" and not f["depthwise"] and f["kernel"] == (1, 1) and f["stride"] == (1, 1)
            and f["padding"] == (0, 0) and f["dilation"] == (1, 1) and not f.get("in_channels")
            and not f.get("out_channels"))
