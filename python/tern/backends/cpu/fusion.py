"""Fusions: what an op takes in besides its own node, decided by passes
that write their decision down; the families' lowering only reads it, and
each op built from a decision names what it took in (Op.decisions, for
readers and tests: {"bias" | "residual" | "activation": node name,
"winograd": True, "row_chain": "head" | "stage"}).

Run by the compiler (compile.py) in this order:
  1. before lowering, over the claimed graph, recorded on the node:
     choose_pads (meta[PAD] on a convolution: the zero pad before it that
     its padding takes in, `decisions["pad"]`); choose_winograd
     (meta[WINOGRAD]: whether a 3x3 convolution runs as
     Winograd F(2x2, 3x3)); choose_epilogues (meta[EPILOGUE], an
     ir.Epilogue: the bias add, residual add and activation a head op takes
     in; and meta[INT8], a quantized_ops.Int8Op: the int8 operator a node
     belongs to, its requantize and clamp included); choose_block_linears
     first (meta[BLOCK_LINEAR] on a linear layer of a GGUF weight: one
     BlockLinear, no head);
  2. after lowering, over the ops: mark_row_chains (Conv.fuse_next, and
     `decisions["row_chain"]`).
Concat's writers (layout.lower_cat: a Conv writing straight into its slice
of a concat, `decisions["writes_into_concat"]`) are still decided while
lowering the concat.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import tern.backends.cpu.quantized_ops as quantized_ops
from tern.backends.cpu.activations import activation_of, affine_of
from tern.backends.cpu.elementwise import BINARY
from tern.backends.cpu.ir import (EPILOGUE, VIEWS, Epilogue, Op, Program, before, is_const, name_of, only_user,
                                  pad_amounts, shape)
from tern.backends.cpu.layout import expanded_weight, simplify_permute
from tern.backends.cpu.linear import BLOCK_LINEAR, block_weight_of
from tern.backends.cpu.options import CpuOptions
from tern.backends.cpu.quantized_ops import INT8

if TYPE_CHECKING:
    import torch.fx

WINOGRAD = "tern_cpu_winograd"  # node.meta key: True if the convolution runs as Winograd
PAD = "tern_cpu_pad"  # node.meta key of a convolution: (the pad node it takes in, (top, left, bottom, right))


def choose_pads(gm: "torch.fx.GraphModule") -> list[Any]:
    """Records on each float convolution whose input is a zero pad of the
    spatial dims (pad_amounts), used by it alone, that pad: the Conv reads
    the pad's input and adds the amounts to its padding before (top, left)
    and after (padding_end: bottom, right). Returns the pads taken in (the
    compiler lowers them with their convolution, never on their own).
    TensorFlow's "same" convolutions of stride 2 pad 0 before and 1 after,
    which aten.convolution's symmetric padding cannot say
    (tern.passes.fold_pad_into_conv folds the symmetric ones before)."""
    taken = []
    for node in gm.graph.nodes:
        node.meta.pop(PAD, None)
    for node in gm.graph.nodes:
        conv = conv_taking_pad(node)
        if conv is not None:
            conv.meta[PAD] = (node, pad_amounts(node))
            taken.append(node)
    return taken


def conv_taking_pad(node: Any) -> Any:
    """The convolution whose padding takes in the zero pad `node`
    (pad_amounts) if the pad's only user is an untransposed convolution
    reading it as its input alone; else None."""
    conv = only_user(node)
    if (pad_amounts(node) is None or conv is None or name_of(conv) != "aten::convolution" or conv.args[6]
            or conv.args[0] is not node or node in conv.args[1:]):
        return None
    return conv


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


def choose_block_linears(gm: "torch.fx.GraphModule", options: CpuOptions) -> tuple[list[Any], list[Any]]:
    """Records on each addmm / mm of a GGUF weight the partitioner claimed
    (linear.block_weight_of) its BlockWeight (meta[BLOCK_LINEAR], read by
    linear.lower_linear: one BlockLinear). Returns (those linear layers,
    the gguf_dequantize and permute nodes their ops cover). The linear
    layers are no heads (choose_epilogues' skip): a bias add, residual add
    or activation after them runs as its own op."""
    heads, covered = [], []
    for node in gm.graph.nodes:
        node.meta.pop(BLOCK_LINEAR, None)
        bw = block_weight_of(node) if options.block_linear and name_of(node) in ("aten::mm", "aten::addmm") else None
        if bw is not None:
            node.meta[BLOCK_LINEAR] = bw
            heads.append(node)
            covered += [bw.dequantize, bw.transpose]
    return heads, covered


def choose_epilogues(gm: "torch.fx.GraphModule", skip: set[Any] | None = None) -> None:
    """Records on each head node what its op takes in after it
    (meta[EPILOGUE], an ir.Epilogue), and on each node of an int8 operator
    the operator (meta[INT8], quantized_ops.match: its requantize and clamp
    are part of the pattern). A head takes in, in this order, each the only
    user of what it took in last (of the head, at first):
      - a bias: an add of a constant of n values over the last dim, past
        reshapes (linear layers, whose output has n features);
      - a residual: an add of a value computed before the head's op runs
        (past reshapes for linear layers; for convolutions, ungrouped or
        depthwise ones only);
      - an activation (past reshapes for linear layers).
    Heads: float convolutions (a transposed or grouped one: the activation
    only), linear layers (addmm, mm, and bmm of a constant matrix expanded
    over the batch), add / sub / mul of tensors and x op number (the
    activation only).
    Whether a residual is computed before depends on what earlier ops took
    in, so the nodes are walked as the compiler lowers them: in graph order,
    skipping nodes an earlier op took in (and the reshapes an int8 operator
    covers); a value is computed once an op before writes it, a dequantize
    once an op before reads it (Compiler.get makes its Dequantize then)."""
    graph = gm.graph
    taken: set[Any] = set(skip or ())  # nodes an op took in (skip: by a pass before): never lowered on their own
    for node in graph.nodes:
        node.meta.pop(EPILOGUE, None)
        node.meta.pop(INT8, None)
        if node.op == "call_function":
            taken.update(n for n in quantized_ops.covered_views(node) if n.graph is graph and before(n, node))
    computed: set[Any] = set()  # nodes whose value an op before writes
    lazy: set[Any] = set()  # dequantize nodes not yet read
    for node in graph.nodes:
        if node in taken:
            continue
        if node.op == "placeholder":
            computed.add(node)
        if node.op != "call_function":
            continue
        int8 = quantized_ops.match(node)
        reads = int8.reads if int8 is not None else node.all_input_nodes  # read before it decides
        computed.update(n for n in reads if n in lazy)
        if int8 is not None:
            node.meta[INT8] = int8
            taken.update(int8.covers)
            written = int8.defines
            if int8.kind == "Dequantize":
                lazy.add(node)
        else:
            ep = _epilogue(node, computed)
            if ep is not None:
                node.meta[EPILOGUE] = ep
                taken.update(ep.nodes)
            written = ep.last if ep is not None else node
        if written is not None:
            computed.add(written)


def _epilogue(node: Any, computed: set[Any]) -> Epilogue | None:
    """What a head node takes in (choose_epilogues), None if node is no head."""
    name = name_of(node)
    parts, views = ("activation",), False
    if name == "aten::convolution":
        x, transposed, groups = node.args[0], node.args[6], node.args[8]
        depthwise = groups > 1 and groups == shape(x)[1] == shape(node)[1]
        if not transposed and (groups == 1 or depthwise):
            parts = ("residual", "activation")
    elif name in ("aten::addmm", "aten::mm") or (name == "aten::bmm" and expanded_weight(node.args[1]) is not None):
        parts, views = ("bias", "residual", "activation"), True
    elif name not in BINARY and affine_of(node) is None:
        return None
    ep = Epilogue([node])
    if "bias" in parts:
        _take_bias(ep, shape(node)[-1])
    if "residual" in parts:
        _take_residual(ep, computed, views)
    _take_activation(ep, views)
    return ep


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


def _added(node: Any, views: bool) -> tuple[Any, list[Any], Any, Any]:
    """(the add, reshapes passed, node's last reshape or node, the add's
    other operand) if node's only user (past reshapes) is an add.Tensor
    without alpha; else Nones."""
    u, passed = past_views(node, views)
    if u is None or name_of(u) != "aten::add.Tensor" or u.kwargs.get("alpha", 1) != 1 or len(u.args) != 2:
        return None, [], None, None
    mine = passed[-1] if passed else node
    return u, passed, mine, (u.args[1] if u.args[0] is mine else u.args[0])


def _take_bias(ep: Epilogue, n: int) -> None:
    """Takes in the last node's only user, past reshapes, if it adds a
    constant of n values over the last dim."""
    u, passed, mine, other = _added(ep.last, True)
    if u is None or not is_const(other) or shape(u) != shape(mine):
        return
    size = shape(other)
    if size[-1:] != (n,) or math.prod(size) != n:
        return
    ep.nodes.extend(passed + [u])
    ep.bias, ep.bias_value = u, other


def _take_residual(ep: Epilogue, computed: set[Any], views: bool) -> None:
    """Takes in the last node's only user (past reshapes, with `views`) if
    it adds the last node's value to one computed already, of its shape."""
    u, passed, mine, other = _added(ep.last, views)
    if u is None:
        return
    if other is mine or not (other in computed or is_const(other)) or shape(other) != shape(mine):
        return
    ep.nodes.extend(passed + [u])
    ep.residual, ep.residual_value = u, other


def _take_activation(ep: Epilogue, views: bool) -> None:
    """Takes in the last node's only user (past reshapes, with `views`) if
    it is an activation."""
    u, passed = past_views(ep.last, views)
    act = activation_of(u) if u is not None else None
    if act is None:
        return
    ep.nodes.extend(passed + [u])
    ep.activation, ep.act = u, act


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
            and f["padding"] == (0, 0) and "padding_end" not in f and f["dilation"] == (1, 1)
            and not f.get("in_channels")
            and not f.get("out_channels"))
