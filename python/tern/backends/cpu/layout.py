"""Layout ops: reshapes, expand, permute, select / slice / split, concat.
Reshapes are views (no op); the rest are Transpose, Slice and Concat ops in
the graph's plain layout, or NHWC for a channel concat.
"""
from __future__ import annotations

import math
import operator
from typing import Any

from tern.backends.cpu.ir import NHWC, PLAIN, VIEWS, Builder, Op, SymDim, is_const, name_of, rank, shape
from tern.ops import op_name

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("Transpose", "Slice", "Concat")
RESHAPES = VIEWS + ("aten::clone", "aten::alias", "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim",
                    "aten::squeeze.dims")
SPLITS = ("aten::split.Tensor", "aten::split_with_sizes")
SLICES = ("aten::select.int", "aten::slice.Tensor")
SHAPE_ONLY = RESHAPES + ("aten::expand", "aten::permute") + SLICES + SPLITS


def simplify_permute(sizes: tuple[int, ...], perm: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The same permutation of the same elements with fewer dims: size-1 dims
    dropped, and dims that stay neighbours in order merged. ((), ()): a copy."""
    r = len(sizes)
    perm = [int(d) % r for d in perm] if r else []
    keep = [d for d in range(r) if sizes[d] != 1]
    perm = [keep.index(d) for d in perm if sizes[d] != 1]
    sizes = [sizes[d] for d in keep]
    groups: list[list[int]] = []  # runs of input dims that stay in order
    for d in perm:
        if groups and groups[-1][-1] + 1 == d:
            groups[-1].append(d)
        else:
            groups.append([d])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])  # groups in input order
    merged = {g: math.prod(sizes[d] for d in groups[g]) for g in range(len(groups))}
    new_sizes = tuple(merged[g] for g in order)
    new_perm = tuple(order.index(g) for g in range(len(groups)))
    if new_perm == tuple(range(len(new_perm))):
        return (), ()
    return new_sizes, new_perm


def slice_of(node: Any) -> tuple[int, int, int] | None:
    """(outer, offset, inner) of a select.int or a slice.Tensor of step 1 in
    its input's plain layout: y[o] = x[o][offset : offset + inner] for each
    of `outer` rows; None for other steps."""
    if node.target is operator.getitem and split_of(node.args[0]) is not None:
        dim, sizes = split_of(node.args[0])
        size = shape(node.args[0].args[0])
        unit = math.prod(size[dim + 1:])
        i = int(node.args[1])
        return math.prod(size[:dim]), sum(sizes[:i]) * unit, sizes[i] * unit
    name = name_of(node)
    size = shape(node.args[0])
    if not size:
        return None
    dim = int(node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)) % len(size)
    unit = math.prod(size[dim + 1:])
    if name == "aten::select.int":
        if not isinstance(node.args[2], int):
            return None  # an index computed from sizes
        index = node.args[2]
        return math.prod(size[:dim]), (index if index >= 0 else size[dim] + index) * unit, unit
    if name == "aten::slice.Tensor":
        args = list(node.args) + [None] * 5
        start, end, step = args[2], args[3], args[4] if args[4] is not None else 1
        if step != 1 or not all(isinstance(v, (int, type(None))) for v in (start, end)):
            return None
        length = shape(node)[dim]  # the output's: a dynamic size when the end follows one
        if isinstance(size[dim], SymDim):
            start = 0 if start is None else start if start >= 0 else size[dim] + start  # no clamping at run time
        else:
            start = slice(start, end).indices(size[dim])[0]
        return math.prod(size[:dim]), start * unit, length * unit
    return None


def split_of(node: Any) -> tuple[int, list[int]] | None:
    """(dim, piece sizes) of a split.Tensor or split_with_sizes; None for other nodes."""
    name = name_of(node)
    if name not in SPLITS:
        return None
    size = shape(node.args[0])
    if not size:
        return None
    dim = int(node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % len(size)
    if name == "aten::split_with_sizes":
        return (dim, list(node.args[1])) if all(isinstance(s, int) for s in node.args[1]) else None
    if not isinstance(node.args[1], int):
        return None  # a piece size computed from sizes
    step = node.args[1]
    return dim, [min(step, size[dim] - start) for start in range(0, size[dim], step)] if step > 0 else None


def expanded_weight(node: Any) -> Any:
    """The constant matrix an expand repeats over a batch (or a same-shape
    reshape of such an expand) if every use, past same-shape reshapes, is as
    bmm's second operand: bmm(x, w.expand(b, k, n)) is a linear layer over
    x's b * m rows (how a linear layer of a non-contiguous input
    decomposes). Else None."""
    name = name_of(node)
    if name in VIEWS and shape(node) == shape(node.args[0]):
        w = expanded_weight(node.args[0])
    elif name == "aten::expand":
        w = node.args[0]
        size = shape(w) if is_const(w) else ()
        if len(size) not in (2, 3) or (len(size) == 3 and size[0] != 1):
            return None
    else:
        return None
    return w if w is not None and _only_as_bmm_weight(node) else None


def _only_as_bmm_weight(node: Any) -> bool:
    def ok(u: Any) -> bool:
        name = name_of(u)
        if name == "aten::bmm":
            return u.args[1] is node and u.args[0] is not node
        return name in VIEWS and shape(u) == shape(node) and _only_as_bmm_weight(u)

    return bool(node.users) and all(ok(u) for u in node.users)


# supports: None if the backend runs the node, else why not


def supports_reshape(node: Any) -> str | None:
    return None


def supports_expand(node: Any) -> str | None:
    # a no-op, or a constant matrix repeated over a batch for bmm (a linear layer)
    if shape(node) == shape(node.args[0]) or expanded_weight(node) is not None:
        return None
    return "an expand that copies data (only no-op expands and a constant weight expanded for bmm run)"


def supports_permute(node: Any) -> str | None:
    sizes, _ = simplify_permute(shape(node.args[0]), node.args[1])
    return None if len(sizes) <= 4 else f"a permute of {len(sizes)} dims after merging (at most 4 run)"


def supports_split(node: Any) -> str | None:
    return None if split_of(node) is not None else ("a split with a step that is not positive, or pieces "
                                                     "computed from sizes")


def supports_slice(node: Any) -> str | None:
    return None if slice_of(node) is not None else ("a slice with a step other than 1, of a 0-d tensor, or "
                                                     "with an index computed from sizes")


def supports_getitem(node: Any) -> str | None:
    """A getitem of max pool's values or layer norm's output (their other
    results go unused), or of a split's piece."""
    src = node.args[0]
    if name_of(src) in ("aten::max_pool2d_with_indices", "aten::native_layer_norm") and node.args[1] == 0:
        return None
    if split_of(src) is not None:
        return None
    return f"an item of {op_name(getattr(src, 'target', src))} that is not its first result or a split's piece"


def supports_cat(node: Any) -> str | None:
    if not (len(node.args[0]) >= 1 and all(hasattr(t, "meta") for t in node.args[0])):
        return "a concat of no tensors, or of a non-tensor"
    return None if 1 <= rank(node) <= 8 else f"a concat of rank {rank(node)} (1 to 8 run)"


# lower: the backend ops of one node


def lower_reshape(c: Builder, node: Any) -> None:
    if expanded_weight(node) is not None:
        return  # bmm reads the constant itself (linear.lower_bmm)
    c.env[node] = (c.alias(c.plain(node.args[0]), shape(node)), PLAIN)  # expand: only identities


def lower_permute(c: Builder, node: Any) -> None:
    x = c.plain(node.args[0])
    sizes, perm = simplify_permute(shape(node.args[0]), node.args[1])
    if not perm:  # the elements stay in order: a view
        c.env[node] = (c.alias(x, shape(node)), PLAIN)
        return
    y = c.workspace(tuple(sizes[d] for d in perm))
    c.op("Transpose", {"x": c.alias(x, sizes), "y": y, "perm": perm}, [node], [x], [y])
    c.env[node] = (c.alias(y, shape(node)), PLAIN)


def lower_slice(c: Builder, node: Any) -> None:
    outer, offset, inner = slice_of(node)
    x = c.plain(node.args[0].args[0] if node.target is operator.getitem else node.args[0])
    y = c.workspace(shape(node))
    c.op("Slice", {"x": x, "y": y, "outer": outer, "offset": offset}, [node], [x], [y])
    c.env[node] = (y, PLAIN)


def lower_split(c: Builder, node: Any) -> None:
    pass  # its getitems are slices


def lower_getitem(c: Builder, node: Any) -> None:
    if split_of(node.args[0]) is not None:
        lower_slice(c, node)
    else:  # the first result of max pool or layer norm: the op's value
        c.env[node] = c.env[node.args[0]]


def lower_cat(c: Builder, node: Any) -> None:
    """A Concat op; a channel concat runs in NHWC, and an input that only a
    convolution wrote and only this concat reads is written by that
    convolution straight into its slice (no copy)."""
    xs, dim = node.args[0], (node.args[1] if len(node.args) > 1 else 0) % len(shape(node))
    size = shape(node)
    nhwc = len(size) == 4 and dim == 1
    if nhwc:
        n, ch, h, w = size
        y = c.workspace((n, h, w, ch))
        outer = n * h * w
    else:
        y = c.workspace(size)
        outer = math.prod(size[:dim])
    parts, offsets, reads, at = [], [], [], 0
    for x in xs:
        v = c.nhwc(x) if nhwc else c.plain(x)
        inner = math.prod(c.p.values[v].sizes) // outer
        writers = _sole_conv_writers(c, x, v) if nhwc and xs.count(x) == 1 else []
        for op in writers:  # each writes its channels of v at y_offset: now of y, shifted by at
            op.fields.setdefault("out_channels", inner)
            op.fields.update(y=y, y_offset=at + op.fields.get("y_offset", 0))
            op.writes = [y if wv == v else wv for wv in op.writes]
            op.decisions["writes_into_concat"] = node.name
        if not writers:
            parts.append(v)
            offsets.append(at)
            reads.append(v)
        at += inner
    if parts:
        c.op("Concat", {"xs": parts, "offsets": offsets, "y": y, "outer": outer}, [node], reads, [y])
    c.env[node] = (y, NHWC if nhwc else PLAIN)


def _sole_conv_writers(c: Builder, x: Any, v: int) -> list[Op]:
    """The Conv ops that wrote value v (one, or one per group), if v is
    x's value, x is used by this concat alone, nothing has read v and
    they are non-depthwise Convs without a residual; else []."""
    if len(x.users) != 1 or any(v in op.reads for op in c.p.ops):
        return []
    writers = [op for op in c.p.ops if v in op.writes]
    if any(op.kind != "Conv" or op.fields["depthwise"] or op.fields["residual"] >= 0 for op in writers):
        return []
    return writers
