"""Compiles a subgraph the cpu backend claimed into its program: the ops of
backends/cpu/schema/cpu.fbs over values in the delegate's inputs, outputs,
workspace and packed weights.

Decided here, ahead of time:
  - layout: 4-d activations are NHWC between the backend's ops; the
    delegate's inputs and outputs keep the graph's NCHW, converted by
    Transpose ops at the edges (none where the two orders coincide, e.g. a
    [n, c, 1, 1] tensor);
  - fusion: a convolution or linear layer takes a following residual add and
    activation into its epilogue; an add, sub or mul takes a following
    activation;
  - weights: packed for the microkernels (pack.py), bias included;
  - memory: the workspace's buffers get offsets from the exporter's own
    planner (tern.memory_plan), so they share bytes when their lifetimes allow.
"""
from __future__ import annotations

import hashlib
import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tern.backends.cpu import POOLS, pack
from tern.errors import ExportError
from tern.memory_plan import align, lifetimes, plan
from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx

NHWC, PLAIN = "nhwc", "plain"
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)
INF = float("inf")
_VIEWS = ("aten::view", "aten::_unsafe_view", "aten::reshape")

# Elementwise activations an op can end with: op -> (Activation, min, max).
_ACTIVATIONS = {
    "aten::relu": ("Clamp", 0.0, INF),
    "aten::hardswish": ("Hardswish", -INF, INF),
    "aten::sigmoid": ("Sigmoid", -INF, INF),
    "aten::tanh": ("Tanh", -INF, INF),
    "aten::gelu": ("Gelu", -INF, INF),
    "aten::silu": ("Silu", -INF, INF),
}


# x op number as y = x * scale + shift: op -> (scale, shift) of the number s
# and alpha a.
_AFFINE = {
    "aten::add.Scalar": lambda s, a: (1.0, s * a),
    "aten::sub.Scalar": lambda s, a: (1.0, -s * a),
    "aten::mul.Scalar": lambda s, a: (s, 0.0),
    "aten::div.Scalar": lambda s, a: (1.0 / s, 0.0),
}


def affine_of(node: "torch.fx.Node") -> tuple[float, float] | None:
    """(scale, shift) of an op.Scalar node with a finite nonzero number, else None."""
    name = op_name(node.target) if node.op == "call_function" else ""
    if name not in _AFFINE or len(node.args) < 2 or not isinstance(node.args[1], (int, float)):
        return None
    s = float(node.args[1])
    alpha = float(node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1))
    if not math.isfinite(s) or (name == "aten::div.Scalar" and s == 0.0):
        return None
    return _AFFINE[name](s, alpha)


def broadcast_of(out: tuple[int, ...], b: tuple[int, ...], nhwc: bool) -> tuple[int, int] | None:
    """(b_inner, b_block) of b broadcast to `out` (cpu.fbs Binary), in the
    layout the op runs in, or None if this broadcast is not supported.
    (0, 0): same shape."""
    if b == out:
        return (0, 0)
    b = (1,) * (len(out) - len(b)) + tuple(b)
    total = math.prod(out)
    if math.prod(b) == 1:
        return (1, 0)
    if nhwc and len(out) == 4 and b[2:] == (1, 1) and b[1] == out[1] and b[0] in (1, out[0]):
        c = out[1]  # a per-channel gate: NHWC [n, 1, 1, c] over [n, h, w, c]
        return (c, total // out[0] if b[0] > 1 and out[0] > 1 else 0)
    if not nhwc:
        # b equals out's trailing dims, 1 before them: [d] or [1, s, d] over [b, s, d]
        k = next((i for i, s in enumerate(b) if s != 1), len(b))
        if b[k:] == out[k:]:
            return (math.prod(b), 0)
    return None


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


def slice_of(node: "torch.fx.Node") -> tuple[int, int, int] | None:
    """(outer, offset, inner) of a select.int or a slice.Tensor of step 1 in
    its input's plain layout: y[o] = x[o][offset : offset + inner] for each
    of `outer` rows; None for other steps."""
    if node.target is operator.getitem and split_of(node.args[0]) is not None:
        dim, sizes = split_of(node.args[0])
        shape = tuple(int(d) for d in node.args[0].args[0].meta["val"].shape)
        unit = math.prod(shape[dim + 1:])
        i = int(node.args[1])
        return math.prod(shape[:dim]), sum(sizes[:i]) * unit, sizes[i] * unit
    name = op_name(node.target) if node.op == "call_function" else ""
    x = node.args[0]
    shape = tuple(int(d) for d in x.meta["val"].shape)
    if not shape:
        return None
    dim = int(node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)) % len(shape)
    unit = math.prod(shape[dim + 1:])
    if name == "aten::select.int":
        index = int(node.args[2]) % shape[dim]
        return math.prod(shape[:dim]), index * unit, unit
    if name == "aten::slice.Tensor":
        args = list(node.args) + [None] * 5
        start, end, step = args[2], args[3], args[4] if args[4] is not None else 1
        if step != 1 or not all(isinstance(v, (int, type(None))) for v in (start, end)):
            return None
        start, end, _ = slice(start, end).indices(shape[dim])
        return math.prod(shape[:dim]), start * unit, max(end - start, 0) * unit
    return None


def split_of(node: Any) -> tuple[int, list[int]] | None:
    """(dim, piece sizes) of a split.Tensor or split_with_sizes; None for other nodes."""
    name = op_name(node.target) if getattr(node, "op", None) == "call_function" else ""
    if name not in ("aten::split.Tensor", "aten::split_with_sizes"):
        return None
    shape = tuple(int(d) for d in node.args[0].meta["val"].shape)
    if not shape:
        return None
    dim = int(node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % len(shape)
    if name == "aten::split_with_sizes":
        return dim, [int(s) for s in node.args[1]]
    step = int(node.args[1])
    return dim, [min(step, shape[dim] - start) for start in range(0, shape[dim], step)] if step > 0 else None


# Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions of at least this many
# output pixels and input and output channels. Measured (2026-12-01, AVX-512,
# 1 thread, four 3x3 convolutions in a row, Winograd / direct time): 64
# channels at 56x56 1.01, 128 at 28x28 0.77, 256 at 14x14 0.66, 512 at 7x7
# 0.80: with fewer channels the 16 GEMMs' short k and the transforms eat the
# 2.25x fewer multiply-adds.
WINOGRAD = True
WINOGRAD_MIN_PIXELS = 36
WINOGRAD_MIN_CHANNELS = 128


def winograd_fits(wshape: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...], oh: int, ow: int) -> bool:
    oc, c, kh, kw = wshape
    return (WINOGRAD and (kh, kw) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)
            and oh * ow >= WINOGRAD_MIN_PIXELS and min(c, oc) >= WINOGRAD_MIN_CHANNELS)


# Row chains (cpu.fbs Conv.fuse_next): a pointwise convolution, the
# depthwise one that alone reads its output and, where it alone reads the
# depthwise output, the pointwise projection after it (an inverted residual
# block) run output row by output row, so the wide tensors between them stay
# in cache. Only where the expanded tensor is at least this many bytes:
# smaller ones stay in cache anyway, and each thread recomputes the rows its
# first output row needs (about (k - stride) rows a thread).
ROW_CHAINS = True
ROW_CHAIN_MIN_BYTES = 1 << 20


def winograd_weights(weight: np.ndarray) -> np.ndarray:
    """G g G^T of each [oc, c] 3x3 kernel (in double, then float32): [16, oc, c]."""
    g = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
    u = np.einsum("ij,ocjk,lk->iloc", g, weight.astype(np.float64), g)  # [4, 4, oc, c]
    return np.ascontiguousarray(u.reshape(16, *weight.shape[:2]), dtype=np.float32)


def expanded_weight(node: "torch.fx.Node") -> Any:
    """The constant matrix an expand repeats over a batch (or a same-shape
    reshape of such an expand) if every use, past same-shape reshapes, is as
    bmm's second operand: bmm(x, w.expand(b, k, n)) is a linear layer over
    x's b * m rows (how a linear layer of a non-contiguous input
    decomposes). Else None."""
    if node.op != "call_function":
        return None
    name = op_name(node.target)
    if name in _VIEWS and tuple(node.meta["val"].shape) == tuple(node.args[0].meta["val"].shape):
        w = expanded_weight(node.args[0])
    elif name == "aten::expand":
        w = node.args[0]
        shape = tuple(int(d) for d in w.meta["val"].shape) if getattr(w, "op", None) == "get_attr" else ()
        if len(shape) not in (2, 3) or (len(shape) == 3 and shape[0] != 1):
            return None
    else:
        return None
    return w if w is not None and _only_as_bmm_weight(node) else None


def _only_as_bmm_weight(node: "torch.fx.Node") -> bool:
    def ok(u: Any) -> bool:
        if u.op != "call_function":
            return False
        name = op_name(u.target)
        if name == "aten::bmm":
            return u.args[1] is node and u.args[0] is not node
        return name in _VIEWS and tuple(u.meta["val"].shape) == tuple(node.meta["val"].shape) and _only_as_bmm_weight(u)

    return bool(node.users) and all(ok(u) for u in node.users)


def activation_of(node: "torch.fx.Node") -> tuple[str, float, float] | None:
    """The activation a call node computes, or None (hardtanh and scalar
    clamp are clamps)."""
    if node.op != "call_function":
        return None
    name = op_name(node.target)
    if name == "aten::hardtanh":
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
        return ("Clamp", float(lo), float(hi))
    if name == "aten::clamp":
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
        return ("Clamp", -INF if lo is None else float(lo), INF if hi is None else float(hi))
    if name == "aten::gelu" and (node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none") != "none"):
        return None
    return _ACTIVATIONS.get(name)


@dataclass
class Attention:
    """An aten::scaled_dot_product_attention node the backend runs (attention_of)."""
    q: Any
    k: Any
    v: Any
    mask: Any  # None, or a node: a float32 tensor, or a constant bool one
    causal: bool
    scale: float
    batch: int
    heads: int
    kv_heads: int


_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def attention_of(node: "torch.fx.Node") -> Attention | None:
    """What the cpu backend's Attention op needs of an SDPA node, or None if
    it cannot run it: float32 q, k, v of rank 3 or 4 with the same leading
    dims (heads may be fewer in k and v than in q when grouped), no dropout, a
    mask that is a float32 tensor or a constant bool one broadcasting to the
    scores, or causal, not both."""
    import torch

    if node.op != "call_function" or op_name(node.target) != "aten::scaled_dot_product_attention":
        return None
    a = dict(zip(_SDPA_ARGS, node.args))
    a.update(node.kwargs)
    q, k, v, mask = a["query"], a["key"], a["value"], a.get("attn_mask")
    dropout, causal, scale = a.get("dropout_p", 0.0), bool(a.get("is_causal", False)), a.get("scale")
    vals = [getattr(t, "meta", {}).get("val") for t in (q, k, v)] + [node.meta.get("val")]
    if any(not isinstance(t, torch.Tensor) or t.dtype != torch.float32 for t in vals) or dropout:
        return None
    qs, ks, vs = (tuple(int(d) for d in t.shape) for t in vals[:3])
    if len(qs) not in (3, 4) or not len(qs) == len(ks) == len(vs) or qs[:-3] != ks[:-3] or ks[:-3] != vs[:-3]:
        return None
    lead = qs[:-3] if len(qs) == 4 else ()
    heads, kv_heads = qs[-3], ks[-3]
    if len(qs) == 3:  # [batch, l, e]: one head
        lead, heads, kv_heads = (qs[0],), 1, 1
        if ks[0] != qs[0] or vs[0] != qs[0]:
            return None
    if ks[-1] != qs[-1] or vs[-2] != ks[-2] or vs[-3] != ks[-3] or heads % kv_heads or (
            kv_heads != heads and not a.get("enable_gqa", False)):
        return None
    if min(qs + ks + vs) < 1:
        return None
    if mask is not None:
        m = getattr(mask, "meta", {}).get("val")
        if causal or not isinstance(m, torch.Tensor) or m.dim() > 4:
            return None
        if m.dtype == torch.bool and getattr(mask, "op", None) != "get_attr":
            return None  # a bool mask computed at run time: the portable kernel takes it
        if m.dtype not in (torch.float32, torch.bool):
            return None
        full = (lead[0] if lead else 1, heads, qs[-2], ks[-2])
        ms = (1,) * (4 - m.dim()) + tuple(int(d) for d in m.shape)
        if any(d not in (1, f) for d, f in zip(ms, full)):
            return None
    e = qs[-1]
    return Attention(q, k, v, mask, causal, float(scale) if scale is not None else 1.0 / math.sqrt(e),
                     lead[0] if lead else 1, heads, kv_heads)


@dataclass
class Value:
    sizes: tuple[int, ...]
    storage: str  # "Input", "Output", "Workspace" or "Weights"
    index: int = 0  # Input / Output
    buffer: int = -1  # Workspace: the buffer (aliases share one)
    data: np.ndarray | None = None  # Weights
    offset: int = 0  # set by finish()
    within: int = 0  # Workspace: bytes into its buffer (a part of a larger value)
    dtype: str = "Float32"  # cpu.fbs DType: "Float32" or "Int8"

    @property
    def nbytes(self) -> int:
        return _ELEMENT_BYTES[self.dtype] * math.prod(self.sizes)


_ELEMENT_BYTES = {"Float32": 4, "Int8": 1}


def _dtype_of(node: Any) -> str:
    import torch

    return "Int8" if node.meta["val"].dtype == torch.int8 else "Float32"


@dataclass
class Op:
    kind: str  # a member of cpu.fbs's OpKind
    fields: dict[str, Any]
    nodes: str
    reads: list[int]
    writes: list[int]


@dataclass
class Program:
    values: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    num_inputs: int = 0
    num_outputs: int = 0
    workspace_bytes: int = 0
    weights: bytes = b""


def compile_subgraph(gm: "torch.fx.GraphModule") -> Program:
    """The program of a claimed subgraph (see tern.backend for its form)."""
    return _Compiler(gm).run()


def _shape(node: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in node.meta["val"].shape)


class _Compiler:
    def __init__(self, gm: "torch.fx.GraphModule") -> None:
        self.gm = gm
        self.p = Program()
        self.buffers: list[int] = []  # bytes of each workspace buffer
        self.env: dict[Any, tuple[int, str]] = {}  # node -> (value, layout)
        self.nhwc_of: dict[int, int] = {}  # plain value -> its NHWC copy
        self.done: set[Any] = set()  # nodes an earlier op fused
        self.weight_values: dict[bytes, int] = {}  # sha256 of packed weights -> their value
        # dequantize nodes: (int8 node, scale, zero point), materialized as a
        # Dequantize op only when a float op reads them (_get)
        self.lazy_dq: dict[Any, tuple[Any, float, int]] = {}
        # dynamic dequantize nodes -> (their DynamicQuantize's int8 value, its qparams value)
        self.dynamic: dict[Any, tuple[int, int]] = {}

    def run(self) -> Program:
        from tern.backends.cpu.quantized import qconv_of, qlinear_dynamic_of

        for node in self.gm.graph.nodes:  # quantized operators cover reshapes before them, run with them
            pattern = (qconv_of(node) or qlinear_dynamic_of(node)) if node.op == "call_function" else None
            if pattern is not None:
                self.done.update(n for n in pattern.covered if op_name(getattr(n, "target", None)) in _VIEWS
                                 and n.graph is node.graph and _before(n, node))
        for node in self.gm.graph.nodes:
            if node in self.done or node.op == "get_attr":
                continue
            if node.op == "placeholder":
                self.env[node] = (self._value(Value(_shape(node), "Input", self.p.num_inputs, dtype=_dtype_of(node))),
                                  PLAIN)
                self.p.num_inputs += 1
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
                for out in outs:
                    self._output(out)
        self._mark_row_chains()
        self._plan()
        return self.p

    # values

    def _value(self, v: Value) -> int:
        self.p.values.append(v)
        return len(self.p.values) - 1

    def _workspace(self, sizes: tuple[int, ...], dtype: str = "Float32") -> int:
        self.buffers.append(_ELEMENT_BYTES[dtype] * math.prod(sizes))
        return self._value(Value(tuple(sizes), "Workspace", buffer=len(self.buffers) - 1, dtype=dtype))

    def _alias(self, v: int, sizes: tuple[int, ...]) -> int:
        """Another view of value v's bytes (same element count)."""
        src = self.p.values[v]
        if math.prod(sizes) != math.prod(src.sizes):
            raise ExportError(f"cpu backend: a view of {list(src.sizes)} as {list(sizes)} changes the element count")
        return self._value(Value(tuple(sizes), src.storage, src.index, src.buffer, src.data, dtype=src.dtype))

    def _part(self, v: int, start: int, sizes: tuple[int, ...]) -> int:
        """Elements [start, start + prod(sizes)) of workspace value v, as a value."""
        src = self.p.values[v]
        if src.storage != "Workspace" or start + math.prod(sizes) > math.prod(src.sizes):
            raise ExportError(f"cpu backend: elements [{start}, +{math.prod(sizes)}) outside the workspace value "
                              f"{list(src.sizes)}")
        return self._value(Value(tuple(sizes), "Workspace", buffer=src.buffer,
                                 within=src.within + _ELEMENT_BYTES[src.dtype] * start, dtype=src.dtype))

    def _weights(self, data: np.ndarray) -> int:
        """A weights value; equal contents share one (an unrolled RNN packs
        the same recurrent weight at every step)."""
        data = np.ascontiguousarray(data, np.float32)
        key = hashlib.sha256(data.tobytes()).digest()
        if key not in self.weight_values:
            self.weight_values[key] = self._value(Value((int(data.size),), "Weights", data=data))
        return self.weight_values[key]

    def _weights_int8(self, data: np.ndarray) -> int:
        """An int8 weights value (packed int8 weights), shared like _weights'."""
        data = np.ascontiguousarray(data, np.int8)
        key = b"i8" + hashlib.sha256(data.tobytes()).digest()
        if key not in self.weight_values:
            self.weight_values[key] = self._value(Value((int(data.size),), "Weights", data=data, dtype="Int8"))
        return self.weight_values[key]

    def _const(self, node: Any) -> np.ndarray:
        return getattr(self.gm, node.target).detach().float().contiguous().numpy()

    def _op(self, kind: str, fields: dict[str, Any], nodes: list[Any], reads: list[int], writes: list[int]) -> None:
        self.p.ops.append(Op(kind, fields, "+".join(n.name for n in nodes), reads, writes))

    # layouts

    def _get(self, node: Any) -> tuple[int, str]:
        """(value, layout) of a node; a constant becomes a Weights value, a
        dequantize a Dequantize op's output."""
        if node not in self.env and node in self.lazy_dq:
            src, scale, zero_point = self.lazy_dq[node]
            xv, layout = self._get(src)
            y = self._workspace(self.p.values[xv].sizes)
            self._op("Dequantize", {"x": xv, "y": y, "scale": scale, "zero_point": zero_point}, [node], [xv], [y])
            self.env[node] = (y, layout)
        if node not in self.env and getattr(node, "op", None) == "get_attr":
            self.env[node] = (self._alias(self._weights(self._const(node).reshape(-1)), _shape(node)), PLAIN)
        return self.env[node]

    def _nhwc(self, node: Any) -> int:
        """node's value as NHWC (4-d), transposing a plain one once."""
        v, layout = self._get(node)
        if layout == NHWC:
            return v
        if v not in self.nhwc_of:
            n, c, h, w = self.p.values[v].sizes
            if h * w == 1 or c == 1:
                self.nhwc_of[v] = self._alias(v, (n, h, w, c))
            else:
                y = self._workspace((n, h, w, c), self.p.values[v].dtype)
                self._op("Transpose", {"x": v, "y": y, "perm": TO_NHWC}, [], [v], [y])
                self.nhwc_of[v] = y
        return self.nhwc_of[v]

    def _plain(self, node: Any) -> int:
        """node's value in the graph's own layout (NCHW for 4-d)."""
        v, layout = self._get(node)
        if layout == PLAIN:
            return v
        n, h, w, c = self.p.values[v].sizes
        if h * w == 1 or c == 1:
            return self._alias(v, (n, c, h, w))
        y = self._workspace((n, c, h, w), self.p.values[v].dtype)
        self._op("Transpose", {"x": v, "y": y, "perm": TO_NCHW}, [], [v], [y])
        return y

    def _only_user(self, node: Any) -> Any:
        users = list(node.users)
        return users[0] if len(users) == 1 and users[0].op == "call_function" else None

    def _past_views(self, node: Any, views: bool) -> tuple[Any, list[Any]]:
        """node's only user and, with `views`, past a chain of reshapes each
        used once (an elementwise op after them may be fused all the same, in
        the plain layout): (that user or None, the reshapes passed)."""
        u, passed = self._only_user(node), []
        while views and u is not None and _is_view(u) and self._only_user(u) is not None:
            passed.append(u)
            u = self._only_user(u)
        return u, passed

    def _fuse_activation(self, last: Any, fused: list[Any], views: bool = False) -> tuple[Any, tuple[str, float, float]]:
        u, passed = self._past_views(last, views)
        act = activation_of(u) if u is not None else None
        if act is None:
            return last, ("None", -INF, INF)
        fused.extend(passed + [u])
        return u, act

    # ops

    def _call(self, node: Any) -> None:
        from tern.backends.cpu.quantized import (
            CHOOSE,
            DQ,
            INT4,
            Q,
            qbinary_of,
            qconv_of,
            qlinear_dynamic_of,
            qpool_of,
            qparams,
            wlinear_of,
        )

        name = op_name(node.target)
        pattern = qconv_of(node) if name in ("aten::convolution", "aten::addmm", "aten::mm") else None
        qbinary = qbinary_of(node) if name in ("aten::add.Tensor", "aten::mul.Tensor") else None
        qpool = qpool_of(node) if name in POOLS else None
        qlinear = qlinear_dynamic_of(node) if name in ("aten::addmm", "aten::mm") and pattern is None else None
        wlinear = wlinear_of(node) if name in ("aten::addmm", "aten::mm") and not (pattern or qlinear) else None
        if pattern is not None:
            self._qconv(pattern)
        elif qlinear is not None:
            self._qlinear(qlinear)
        elif wlinear is not None:
            self._wlinear(wlinear)
        elif name == CHOOSE:
            self._dynamic_quantize(node)
        elif qbinary is not None:
            self._qbinary(qbinary)
        elif qpool is not None:
            self._qpool(qpool)
        elif name == DQ:
            p = qparams(node)
            self.lazy_dq[node] = (node.args[0], p.scale, p.zero_point)
        elif name == Q:
            self._quantize(node, qparams(node))
        elif name in ("quantized_decomposed::dequantize_per_channel", INT4) or (
                name == "aten::permute" and op_name(getattr(node.args[0], "target", None))
                in ("quantized_decomposed::dequantize_per_channel", INT4)):
            pass  # the weights of a QConv, QLinear or WLinear, which reads the constants
        elif node.target is operator.getitem and split_of(node.args[0]) is not None:
            self._slice(node)
        elif node.target is operator.getitem:
            self.env[node] = self.env[node.args[0]]
        elif split_of(node) is not None:
            pass  # its getitems are slices
        elif name == "aten::convolution":
            self._conv(node)
        elif name in ("aten::addmm", "aten::mm"):
            self._linear(node)
        elif name in ("aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor"):
            self._binary(node)
        elif activation_of(node) is not None or name in _AFFINE:
            self._unary(node)
        elif name in POOLS:
            self._pool(node)
        elif name in ("aten::expand",) + _VIEWS and expanded_weight(node) is not None:
            pass  # bmm reads the constant itself (_matmul)
        elif name in ("aten::view", "aten::_unsafe_view", "aten::reshape", "aten::clone", "aten::alias", "aten::expand",
                      "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim", "aten::squeeze.dims"):
            self.env[node] = (self._alias(self._plain(node.args[0]), _shape(node)), PLAIN)  # expand: only identities
        elif name == "aten::permute":
            self._permute(node)
        elif name in ("aten::select.int", "aten::slice.Tensor"):
            self._slice(node)
        elif name == "aten::native_layer_norm":
            self._layer_norm(node)
        elif name == "aten::_softmax":
            x = self._plain(node.args[0])
            y = self._workspace(_shape(node))
            self._op("Softmax", {"x": x, "y": y, "inner": _shape(node)[-1]}, [node], [x], [y])
            self.env[node] = (y, PLAIN)
        elif name == "aten::bmm":
            self._matmul(node)
        elif name == "aten::scaled_dot_product_attention":
            self._attention(node)
        elif name == "aten::cat":
            self._concat(node)
        else:
            raise ExportError(f"cpu backend: node {node.name} ({name}) was claimed but has no lowering")

    def _quantize(self, node: Any, p: Any) -> None:
        xv, layout = self._get(node.args[0])
        y = self._workspace(self.p.values[xv].sizes, "Int8")
        fields = {"x": xv, "y": y, "inv_scale": float(np.float32(1.0 / p.scale)), "zero_point": p.zero_point,
                  "qmin": p.qmin, "qmax": p.qmax}
        self._op("Quantize", fields, [node], [xv], [y])
        self.env[node] = (y, layout)

    def _qconv(self, pat: Any) -> None:
        """An int8 convolution or linear layer (quantized.py), one QConv."""
        node = pat.node
        weight = getattr(self.gm, pat.weight.target).detach().numpy()
        w_scales = self._const(pat.w_scales).reshape(-1)
        bias = self._const(pat.bias).reshape(-1) if pat.bias is not None else None
        fields: dict[str, Any] = {"stride": (1, 1), "padding": (0, 0), "dilation": (1, 1), "depthwise": False}
        if pat.kind == "conv":
            _, _, b, stride, padding, dilation, _, _, groups = node.args
            n, oc, oh, ow = _shape(node)
            depthwise = groups > 1
            xv = self._nhwc(pat.x_q)
            y = self._workspace((n, oh, ow, oc), "Int8")
            packed = pack.pack_qs8_depthwise(weight) if depthwise else pack.pack_qs8_conv(weight)
            fields.update({"stride": pair(stride), "padding": pair(padding), "dilation": pair(dilation),
                           "depthwise": depthwise, "kernel": tuple(weight.shape[2:])})
            out = (y, NHWC)
        else:
            m, k = _shape(node.args[1] if op_name(node.target) == "aten::addmm" else node.args[0])
            n_out = weight.shape[0]
            xv = self._alias(self._plain(pat.x_q), (m, 1, 1, k))
            y = self._workspace((m, 1, 1, n_out), "Int8")
            packed = pack.pack_qs8_conv(weight.reshape(n_out, k, 1, 1))
            fields["kernel"] = (1, 1)
            out = (self._alias(y, _shape(pat.q)), PLAIN)
        wv = self._weights_int8(packed)
        sv = self._weights(w_scales)
        bv = self._weights(bias) if bias is not None else -1
        fields.update({"x": xv, "weights": wv, "w_scales": sv, "bias": bv, "y": y,
                       "x_scale": pat.x.scale, "x_zero_point": pat.x.zero_point,
                       "y_scale": pat.y.scale, "y_zero_point": pat.y.zero_point, "qmin": pat.y.qmin,
                       "qmax": pat.y.qmax})
        covered = [node] + [n for n in pat.covered if n.op == "call_function"]
        self._op("QConv", fields, covered, [xv, wv, sv] + ([bv] if bv >= 0 else []), [y])
        self.done.update(covered)
        self.env[pat.q] = out

    def _dynamic_quantize(self, choose: Any) -> None:
        """choose_qparams -> quantize -> dequantize (the dequantize read only by
        QLinears, quantized.py): one DynamicQuantize."""
        from tern.backends.cpu.quantized import dynamic_of

        dq = next(u for item in choose.users for u in item.users if dynamic_of(u) is not None)
        dyn = dynamic_of(dq)
        xv = self._plain(dyn.x)
        y = self._workspace(self.p.values[xv].sizes, "Int8")
        qp = self._workspace((2,))
        fields = {"x": xv, "y": y, "qparams": qp, "qmin": dyn.qmin, "qmax": dyn.qmax, "eps": dyn.eps}
        covered = [choose, *dyn.items, dyn.q, dyn.dq]
        self._op("DynamicQuantize", fields, covered, [xv], [y, qp])
        self.done.update(covered)
        self.dynamic[dq] = (y, qp)

    def _qlinear(self, pat: Any) -> None:
        """A dynamically quantized linear layer (quantized.py), one QLinear."""
        node = pat.node
        y8, qp = self.dynamic[pat.dyn.dq]
        m, k = _shape(node.args[1] if op_name(node.target) == "aten::addmm" else node.args[0])
        weight = getattr(self.gm, pat.weight.target).detach().numpy()
        n = weight.shape[0]
        xv = self._alias(y8, (m, k))
        wv = self._weights_int8(pack.pack_qs8_conv(weight.reshape(n, k, 1, 1)))
        sv = self._weights(self._const(pat.w_scales).reshape(-1))
        bv = self._weights(self._const(pat.bias).reshape(-1)) if pat.bias is not None else -1
        y = self._workspace((m, n))
        params = self._workspace((2 * ((n + 15) // 16 * 16),))
        fields = {"x": xv, "x_qparams": qp, "weights": wv, "w_scales": sv, "bias": bv, "y": y, "params": params}
        covered = [node] + [c for c in pat.covered if c.op == "call_function"]
        self._op("QLinear", fields, covered, [xv, qp, wv, sv] + ([bv] if bv >= 0 else []), [y, params])
        self.done.update(covered)
        self.env[node] = (y, PLAIN)

    def _wlinear(self, pat: Any) -> None:
        """A weight-only quantized linear layer (quantized.py), one WLinear."""
        node = pat.node
        x = node.args[1] if op_name(node.target) == "aten::addmm" else node.args[0]
        m, k = _shape(x)
        q = getattr(self.gm, pat.weight.target).detach().contiguous().numpy()
        n = q.shape[0]
        wv = self._alias(self._weights_int8(q.view(np.int8).reshape(-1)), tuple(q.shape))
        sv = self._weights(self._const(pat.scales).reshape(-1))
        zv = self._weights(self._const(pat.zero_points).reshape(-1)) if pat.zero_points is not None else -1
        bv = self._weights(self._const(pat.bias).reshape(-1)) if pat.bias is not None else -1
        xv = self._plain(x)
        y = self._workspace((m, n))
        fields = {"x": xv, "y": y, "weights": wv, "scales": sv, "zero_points": zv, "bias": bv, "bits": pat.bits,
                  "group": pat.group, "qmin": pat.qmin}
        covered = [node] + [c for c in pat.covered if c.op == "call_function"]
        self._op("WLinear", fields, covered, [xv, wv, sv] + [v for v in (zv, bv) if v >= 0], [y])
        self.done.update(covered)
        self.env[node] = (y, PLAIN)

    def _qbinary(self, pat: Any) -> None:
        """An int8 add or mul (quantized.py), one QBinary, in a's layout."""
        av, layout = self._get(pat.a_q)
        bv = self._nhwc(pat.b_q) if layout == NHWC else self._plain(pat.b_q)
        y = self._workspace(self.p.values[av].sizes, "Int8")
        fields = {"a": av, "b": bv, "y": y, "kind": pat.kind, "a_scale": pat.a.scale, "a_zero_point": pat.a.zero_point,
                  "b_scale": pat.b.scale, "b_zero_point": pat.b.zero_point,
                  "y_inv_scale": float(np.float32(1.0 / pat.y.scale)), "y_zero_point": pat.y.zero_point,
                  "qmin": pat.y.qmin, "qmax": pat.y.qmax}
        covered = [pat.node] + pat.covered
        self._op("QBinary", fields, covered, [av, bv], [y])
        self.done.update(covered)
        self.env[pat.q] = (y, layout)

    def _epilogue(self, act: tuple[str, float, float]) -> dict[str, Any]:
        return {"activation": act[0], "min": act[1], "max": act[2]}

    def _residual(self, node: Any, fused: list[Any], views: bool = False) -> tuple[Any, Any]:
        """(the node whose value becomes the residual, the new last node) if
        node's only user (past reshapes, with `views`) adds it to a value
        already computed."""
        u, passed = self._past_views(node, views)
        if u is None or op_name(u.target) != "aten::add.Tensor" or u.kwargs.get("alpha", 1) != 1 or len(u.args) != 2:
            return None, node
        mine = passed[-1] if passed else node
        other = u.args[1] if u.args[0] is mine else u.args[0]
        known = other in self.env or getattr(other, "op", None) == "get_attr"
        if other is mine or not known or _shape(other) != _shape(mine):
            return None, node
        fused.extend(passed + [u])
        return other, u

    def _conv(self, node: Any) -> None:
        x, w, b, stride, padding, dilation, transposed, _, groups = node.args
        if transposed:
            return self._conv_transpose(node)
        weight = self._const(w)
        bias = self._const(b) if b is not None else None
        n, oc, oh, ow = _shape(node)
        c = _shape(x)[1]
        depthwise = groups > 1 and groups == c == oc
        xv = self._nhwc(x)
        fused = [node]
        res, last = self._residual(node, fused) if groups == 1 or depthwise else (None, node)
        last, act = self._fuse_activation(last, fused)
        y = self._workspace((n, oh, ow, oc))
        rv = self._nhwc(res) if res is not None else -1
        common = {"x": xv, "residual": rv, "y": y, "kernel": tuple(weight.shape[2:]), "stride": tuple(stride),
                  "padding": tuple(padding), "dilation": tuple(dilation), "depthwise": depthwise,
                  **self._epilogue(act)}
        if groups == 1 and winograd_fits(weight.shape, tuple(stride), tuple(dilation), oh, ow):
            self._winograd(xv, weight, bias, tuple(padding), rv, y, act, fused)
        elif groups == 1 or depthwise:
            wv = self._weights(pack.pack_depthwise(weight, bias) if depthwise else pack.pack_conv(weight, bias))
            self._op("Conv", {**common, "weights": wv}, fused, [xv, wv] + ([rv] if rv >= 0 else []), [y])
        else:  # one Conv per group, over its channel slices of x and y
            cg, og = c // groups, oc // groups
            for gi in range(groups):
                part = slice(gi * og, (gi + 1) * og)
                wv = self._weights(pack.pack_conv(weight[part], bias[part] if bias is not None else None))
                fields = {**common, "weights": wv, "x_offset": gi * cg, "in_channels": cg, "y_offset": gi * og,
                          "out_channels": og}
                self._op("Conv", fields, fused, [xv, wv], [y])
        self.done.update(fused)
        self.env[last] = (y, NHWC)

    def _winograd(self, xv: int, weight: np.ndarray, bias: np.ndarray | None, padding: tuple[int, int], rv: int,
                  y: int, act: tuple[str, float, float], fused: list[Any]) -> None:
        """A 3x3 stride-1 convolution as Winograd F(2x2, 3x3) (cpu.fbs):
        WinogradInput, 16 1x1 Convs with weights G g G^T, WinogradOutput."""
        n, oh, ow, oc = self.p.values[y].sizes
        c = weight.shape[1]
        tiles = n * ((oh + 1) // 2) * ((ow + 1) // 2)
        vb, mb = tiles * c + 16, tiles * oc + 16  # blocks 64 bytes more than their rows (cpu.fbs)
        v = self._workspace((16, vb))
        m = self._workspace((16, mb))
        self._op("WinogradInput", {"x": xv, "v": v, "padding": padding, "oh": oh, "ow": ow}, fused, [xv], [v])
        u = winograd_weights(weight)  # [16, oc, c]
        for t in range(16):
            vt = self._part(v, t * vb, (tiles, 1, 1, c))
            mt = self._part(m, t * mb, (tiles, 1, 1, oc))
            wv = self._weights(pack.pack_conv(u[t].reshape(oc, c, 1, 1), None))
            fields = {"x": vt, "weights": wv, "residual": -1, "y": mt, "kernel": (1, 1), "stride": (1, 1),
                      "padding": (0, 0), "dilation": (1, 1), "depthwise": False, "activation": "None",
                      "min": -INF, "max": INF}
            self._op("Conv", fields, fused, [vt, wv], [mt])
        bv = self._weights(bias.reshape(-1)) if bias is not None else -1
        fields = {"m": m, "y": y, "bias": bv, "residual": rv, **self._epilogue(act)}
        self._op("WinogradOutput", fields, fused, [m] + [x for x in (bv, rv) if x >= 0], [y])

    def _conv_transpose(self, node: Any) -> None:
        """A transposed convolution as stride x stride ordinary convolutions of
        stride 1, one per output phase (py, px), each over the taps that land
        on that phase, then an Interleave. Output row oy = py + sh * t takes
        tap ky from input row t + (py + ph - ky * dh) / sh where that divides;
        listed by descending ky those offsets rise by dh / gcd(sh, dh): a
        convolution with that dilation and padding -(first offset)."""
        x, w, b, stride, padding, dilation = node.args[:6]
        weight = self._const(w)  # [c, oc, kh, kw]
        bias = self._const(b) if b is not None else None
        n, oc, oh, ow = _shape(node)
        c, _, kh, kw = weight.shape
        xv = self._nhwc(x)
        fused = [node]
        last, act = self._fuse_activation(node, fused)

        def taps(p: int, k: int, s: int, pad: int, d: int) -> tuple[list[int], int, int]:
            ks = [kk for kk in reversed(range(k)) if (p + pad - kk * d) % s == 0]
            if not ks:
                return [], 0, 1
            return ks, -((p + pad - ks[0] * d) // s), d // math.gcd(s, d)

        sh, sw = stride
        phases = []
        for py in range(sh):
            rows, pad_h, dil_h = taps(py, kh, sh, padding[0], dilation[0])
            for px in range(sw):
                cols, pad_w, dil_w = taps(px, kw, sw, padding[1], dilation[1])
                y = self._workspace((n, -(-(oh - py) // sh), -(-(ow - px) // sw), oc))
                if rows and cols:
                    wp = weight[:, :, rows][:, :, :, cols].transpose(1, 0, 2, 3)  # [oc, c, taps_h, taps_w]
                    kernel, pad, dil = (len(rows), len(cols)), (pad_h, pad_w), (dil_h, dil_w)
                else:  # no tap lands here: the bias alone
                    wp = np.zeros((oc, c, 1, 1), np.float32)
                    kernel, pad, dil = (1, 1), (0, 0), (1, 1)
                wv = self._weights(pack.pack_conv(np.ascontiguousarray(wp), bias))
                fields = {"x": xv, "weights": wv, "residual": -1, "y": y, "kernel": kernel, "stride": (1, 1),
                          "padding": pad, "dilation": dil, "depthwise": False, **self._epilogue(act)}
                self._op("Conv", fields, fused, [xv, wv], [y])
                phases.append(y)
        if len(phases) == 1:  # stride 1: the one phase is the output
            y = phases[0]
        else:
            y = self._workspace((n, oh, ow, oc))
            self._op("Interleave", {"xs": phases, "y": y, "stride": (sh, sw)}, fused, phases, [y])
        self.done.update(fused)
        self.env[last] = (y, NHWC)

    def _concat(self, node: Any) -> None:
        """A Concat op; a channel concat runs in NHWC, and an input that only a
        convolution wrote and only this concat reads is written by that
        convolution straight into its slice (no copy)."""
        xs, dim = node.args[0], (node.args[1] if len(node.args) > 1 else 0) % len(_shape(node))
        shape = _shape(node)
        nhwc = len(shape) == 4 and dim == 1
        if nhwc:
            n, c, h, w = shape
            y = self._workspace((n, h, w, c))
            outer = n * h * w
        else:
            y = self._workspace(shape)
            outer = math.prod(shape[:dim])
        parts, offsets, reads, at = [], [], [], 0
        for x in xs:
            v = self._nhwc(x) if nhwc else self._plain(x)
            inner = math.prod(self.p.values[v].sizes) // outer
            writers = self._sole_conv_writers(x, v) if nhwc and xs.count(x) == 1 else []
            for op in writers:  # each writes its channels of v at y_offset: now of y, shifted by at
                op.fields.setdefault("out_channels", inner)
                op.fields.update(y=y, y_offset=at + op.fields.get("y_offset", 0))
                op.writes = [y if wv == v else wv for wv in op.writes]
            if not writers:
                parts.append(v)
                offsets.append(at)
                reads.append(v)
            at += inner
        if parts:
            self._op("Concat", {"xs": parts, "offsets": offsets, "y": y, "outer": outer}, [node], reads, [y])
        self.env[node] = (y, NHWC if nhwc else PLAIN)

    def _sole_conv_writers(self, x: Any, v: int) -> list[Op]:
        """The Conv ops that wrote value v (one, or one per group), if v is
        x's value, x is used by this concat alone, nothing has read v and
        they are non-depthwise Convs without a residual; else []."""
        if len(x.users) != 1 or any(v in op.reads for op in self.p.ops):
            return []
        writers = [op for op in self.p.ops if v in op.writes]
        if any(op.kind != "Conv" or op.fields["depthwise"] or op.fields["residual"] >= 0 for op in writers):
            return []
        return writers

    def _linear(self, node: Any) -> None:
        if op_name(node.target) == "aten::addmm":
            b, x, w = node.args[:3]
            bias = self._const(b)
        else:
            (x, w), bias = node.args[:2], None
        m, k = _shape(x)
        self._gemm(node, x, self._const(w), bias, m)

    def _gemm(self, node: Any, x: Any, w_kn: np.ndarray, bias: np.ndarray | None, m: int) -> None:
        """y [m, n] = x [m, k] . w_kn + bias as a 1x1 Conv, with what follows
        fused (plain layout, so past reshapes): a constant bias over the last
        dim, a residual add, an activation."""
        k, n = w_kn.shape
        xv = self._alias(self._plain(x), (m, 1, 1, k))
        fused = [node]
        last, extra = self._bias_add(node, fused, n)
        if extra is not None:
            bias = extra if bias is None else bias + extra
        res, last = self._residual(last, fused, views=True)
        last, act = self._fuse_activation(last, fused, views=True)
        y = self._workspace((m, 1, 1, n))
        rv = self._alias(self._plain(res), (m, 1, 1, n)) if res is not None else -1
        wv = self._weights(pack.pack_linear(w_kn, bias))
        fields = {"x": xv, "weights": wv, "residual": rv, "y": y, "kernel": (1, 1), "stride": (1, 1),
                  "padding": (0, 0), "dilation": (1, 1), "depthwise": False, **self._epilogue(act)}
        self._op("Conv", fields, fused, [xv, wv] + ([rv] if rv >= 0 else []), [y])
        self.done.update(fused)
        self.env[last] = (self._alias(y, _shape(last)), PLAIN)

    def _bias_add(self, node: Any, fused: list[Any], n: int) -> tuple[Any, np.ndarray | None]:
        """(new last node, bias [n]) if node's only user, past reshapes, adds a
        constant of n values over the last dim; else (node, None)."""
        u, passed = self._past_views(node, True)
        if u is None or op_name(u.target) != "aten::add.Tensor" or u.kwargs.get("alpha", 1) != 1 or len(u.args) != 2:
            return node, None
        mine = passed[-1] if passed else node
        other = u.args[1] if u.args[0] is mine else u.args[0]
        if getattr(other, "op", None) != "get_attr" or _shape(u) != _shape(mine):
            return node, None
        shape = _shape(other)
        if shape[-1:] != (n,) or math.prod(shape) != n:
            return node, None
        fused.extend(passed + [u])
        return u, self._const(other).reshape(n)

    def _binary(self, node: Any) -> None:
        a, b = node.args[:2]
        out = _shape(node)
        kind = {"aten::add.Tensor": "Add", "aten::sub.Tensor": "Sub", "aten::mul.Tensor": "Mul"}[op_name(node.target)]
        if _shape(a) != out:  # the full-size operand first (add and mul commute; supports() checked sub)
            a, b = b, a
        nhwc = len(out) == 4 and (self._get(a)[1] == NHWC or self._get(b)[1] == NHWC
                                  or broadcast_of(out, _shape(b), False) is None)  # a per-channel gate: NHWC
        inner, block = broadcast_of(out, _shape(b), nhwc) or (0, 0)
        av = self._nhwc(a) if nhwc else self._plain(a)
        bv = (self._nhwc(b) if len(_shape(b)) == 4 else self._plain(b)) if nhwc else self._plain(b)
        fused = [node]
        last, act = self._fuse_activation(node, fused)
        y = self._workspace(self.p.values[av].sizes)
        fields = {"a": av, "b": bv, "y": y, "kind": kind, **self._epilogue(act), "b_inner": inner, "b_block": block}
        self._op("Binary", fields, fused, [av, bv], [y])
        self.done.update(fused)
        self.env[last] = (y, NHWC if nhwc else PLAIN)

    def _unary(self, node: Any) -> None:
        """An activation, or x * scale + shift and the activation after it."""
        xv, layout = self._get(node.args[0])
        y = self._workspace(self.p.values[xv].sizes)
        affine = affine_of(node)
        fused = [node]
        if affine is None:
            last, act = node, activation_of(node)
            if act is None:
                raise ExportError(f"cpu backend: node {node.name} is neither an affine op nor an activation")
        else:
            last, act = self._fuse_activation(node, fused)
        scale, shift = affine or (1.0, 0.0)
        self._op("Unary", {"x": xv, "y": y, **self._epilogue(act), "scale": scale, "shift": shift}, fused, [xv], [y])
        self.done.update(fused)
        self.env[last] = (y, layout)

    def _pool(self, node: Any) -> None:
        fields, keep, y_shape = _pool_window(node)
        xv = self._nhwc(node.args[0])
        y = self._workspace(y_shape)
        self._op("Pool", {"x": xv, "y": y, **fields}, [node], [xv], [y])
        self.env[node] = (y, NHWC) if keep else (self._alias(y, y_shape[::3]), PLAIN)

    def _qpool(self, pat: Any) -> None:
        """An int8 pool (quantized.py), one QPool."""
        fields, keep, y_shape = _pool_window(pat.node)
        xv = self._nhwc(pat.x_q)
        y = self._workspace(y_shape, "Int8")
        fields.update(x_scale=pat.x.scale, x_zero_point=pat.x.zero_point,
                      y_inv_scale=float(np.float32(1.0 / pat.y.scale)), y_zero_point=pat.y.zero_point,
                      qmin=pat.y.qmin, qmax=pat.y.qmax)
        covered = [pat.node] + pat.covered
        self._op("QPool", {"x": xv, "y": y, **fields}, covered, [xv], [y])
        self.done.update(covered)
        self.env[pat.q] = (y, NHWC) if keep else (self._alias(y, y_shape[::3]), PLAIN)

    def _permute(self, node: Any) -> None:
        x = self._plain(node.args[0])
        sizes, perm = simplify_permute(_shape(node.args[0]), node.args[1])
        if not perm:  # the elements stay in order: a view
            self.env[node] = (self._alias(x, _shape(node)), PLAIN)
            return
        y = self._workspace(tuple(sizes[d] for d in perm))
        self._op("Transpose", {"x": self._alias(x, sizes), "y": y, "perm": perm}, [node], [x], [y])
        self.env[node] = (self._alias(y, _shape(node)), PLAIN)

    def _slice(self, node: Any) -> None:
        outer, offset, inner = slice_of(node)
        x = self._plain(node.args[0].args[0] if node.target is operator.getitem else node.args[0])
        y = self._workspace(_shape(node))
        self._op("Slice", {"x": x, "y": y, "outer": outer, "offset": offset}, [node], [x], [y])
        self.env[node] = (y, PLAIN)

    def _layer_norm(self, node: Any) -> None:
        x, shape, w, b, eps = node.args[:5]
        xv = self._plain(x)
        inner = math.prod(shape)
        wv = self._weights(self._const(w).reshape(-1)) if w is not None else -1
        bv = self._weights(self._const(b).reshape(-1)) if b is not None else -1
        y = self._workspace(_shape(x))
        fields = {"x": xv, "y": y, "weight": wv, "bias": bv, "inner": inner, "eps": float(eps)}
        self._op("LayerNorm", fields, [node], [v for v in (xv, wv, bv) if v >= 0], [y])
        self.env[node] = (y, PLAIN)  # its getitem 0 (the only use) reads it

    def _matmul(self, node: Any) -> None:
        a, b = node.args[:2]
        batch, m, k = _shape(a)
        w = expanded_weight(b) if b.op == "call_function" else None
        if w is not None:  # the same matrix for every batch: one linear layer over batch * m rows
            self._gemm(node, a, self._const(w).reshape(k, -1), None, batch * m)
            return
        n = _shape(b)[2]
        av, bv = self._plain(a), self._plain(b)
        packed = self._workspace((batch * ((n + 15) // 16) * 16 * (1 + k),))
        y = self._workspace((batch, m, n))
        fields = {"a": av, "b": bv, "y": y, "packed": packed, "batch": batch, "m": m, "k": k, "n": n}
        self._op("MatMul", fields, [node], [av, bv, packed], [y, packed])
        self.env[node] = (y, PLAIN)

    def _attention(self, node: Any) -> None:
        at = attention_of(node)
        if at is None:
            raise ExportError(f"cpu backend: node {node.name} is not an attention pattern")
        qv, kv, vv = self._plain(at.q), self._plain(at.k), self._plain(at.v)
        l, e = _shape(at.q)[-2:]
        s, ev = _shape(at.v)[-2:]
        reads = [qv, kv, vv]
        mv = -1
        if at.mask is not None:
            if not at.mask.meta["val"].is_floating_point():  # bool (attention_of allows float32 and bool)
                allowed = self._const_bool(at.mask)
                mv = self._alias(self._weights(np.where(allowed, 0.0, -np.inf).astype(np.float32).reshape(-1)),
                                 tuple(allowed.shape) or (1,))
            else:
                mv = self._plain(at.mask)
            reads.append(mv)
        kpanels, vpanels = (s + 15) // 16, (ev + 15) // 16
        packed = self._workspace((at.batch * at.kv_heads * (kpanels * 16 * (1 + e) + vpanels * 16 * (1 + s)),))
        y = self._workspace(_shape(node))
        fields = {"q": qv, "k": kv, "v": vv, "y": y, "mask": mv, "packed": packed, "causal": at.causal,
                  "scale": at.scale, "batch": at.batch, "heads": at.heads, "kv_heads": at.kv_heads,
                  "l": l, "s": s, "e": e, "ev": ev}
        self._op("Attention", fields, [node], reads + [packed], [y, packed])
        self.env[node] = (y, PLAIN)

    def _const_bool(self, node: Any) -> np.ndarray:
        return getattr(self.gm, node.target).detach().cpu().numpy().astype(bool)

    def _output(self, node: Any) -> None:
        j = self.p.num_outputs
        self.p.num_outputs += 1
        out = self._value(Value(_shape(node), "Output", j, dtype=_dtype_of(node)))
        v, layout = self._get(node)
        sizes = self.p.values[v].sizes
        if layout == NHWC and sizes[1] * sizes[2] != 1 and sizes[3] != 1:
            self._op("Transpose", {"x": v, "y": out, "perm": TO_NCHW}, [], [v], [out])
        else:
            src = self._plain(node)
            self._op("Copy", {"x": src, "y": out}, [], [src], [out])

    def _mark_row_chains(self) -> None:
        """Sets fuse_next on each pointwise Conv whose output only the next op,
        a depthwise Conv, reads, and on that depthwise Conv where only the
        op after it, another pointwise Conv, reads its output (ROW_CHAINS). A
        Conv already a stage of one chain never heads another: in pw > dw > pw
        > dw > pw (MobileNetV1) the second pw ends the first chain and the
        third pw heads the next."""
        if not ROW_CHAINS:
            return
        values, ops = self.p.values, self.p.ops
        readers: dict[int, int] = {}  # workspace buffer -> ops that read it
        for op in ops:
            for b in {values[v].buffer for v in op.reads if values[v].storage == "Workspace"}:
                readers[b] = readers.get(b, 0) + 1

        def pointwise(op: Op) -> bool:
            f = op.fields
            return (op.kind == "Conv" and not f["depthwise"] and f["kernel"] == (1, 1) and f["stride"] == (1, 1)
                    and f["padding"] == (0, 0) and f["dilation"] == (1, 1) and not f.get("in_channels")
                    and not f.get("out_channels"))

        def feeds(a: Op, b: Op) -> bool:  # b reads a's output, and nothing else does
            y = values[a.fields["y"]]
            return (b.fields["x"] == a.fields["y"] and y.storage == "Workspace" and readers.get(y.buffer) == 1)

        staged: set[int] = set()  # ops already a stage of a chain: never the head of another
        for i, (a, b, c) in enumerate(zip(ops, ops[1:], ops[2:] + [None])):
            if not (i not in staged and pointwise(a) and a.fields["residual"] < 0 and b.kind == "Conv"
                    and b.fields["depthwise"] and feeds(a, b) and values[a.fields["y"]].nbytes >= ROW_CHAIN_MIN_BYTES):
                continue
            # the chain reads x while it writes its output: x lives until the end
            a.fields["fuse_next"] = True
            b.reads.append(a.fields["x"])
            staged.add(i + 1)
            if c is not None and pointwise(c) and feeds(b, c):
                b.fields["fuse_next"] = True
                c.reads.append(a.fields["x"])
                staged.add(i + 2)

    # memory

    def _plan(self) -> None:
        """Workspace offsets (shared where lifetimes allow) and the weights blob."""
        steps = [[self.p.values[v].buffer for v in op.reads + op.writes if self.p.values[v].storage == "Workspace"]
                 for op in self.p.ops]
        mem = plan(lifetimes(dict(enumerate(self.buffers)), steps, [], []))
        blob = bytearray()
        placed: dict[int, int] = {}  # id of a weights array -> its offset: a value and its views (_alias) share it
        for v in self.p.values:
            if v.storage == "Workspace":
                v.offset = mem.offsets.get(v.buffer, 0) + v.within
            elif v.storage == "Weights" and v.data is not None:
                if id(v.data) not in placed:
                    blob.extend(b"\0" * (align(len(blob)) - len(blob)))
                    placed[id(v.data)] = len(blob)
                    blob.extend(v.data.tobytes())
                v.offset = placed[id(v.data)]
        self.p.workspace_bytes = mem.planned_bytes
        self.p.weights = bytes(blob)


def _before(a: Any, b: Any) -> bool:
    """Node a comes before node b in their graph."""
    n = a
    while n is not None and n.op != "root":
        if n is b:
            return True
        n = n.next
    return False


def _is_view(node: Any) -> bool:
    """A reshape, or a permute that keeps the elements in order (of size-1 dims)."""
    name = op_name(node.target)
    if name == "aten::permute":
        return simplify_permute(_shape(node.args[0]), node.args[1]) == ((), ())
    return name in _VIEWS



def _pool_window(node: Any) -> tuple[dict[str, Any], bool, tuple[int, int, int, int]]:
    """A pool node's Pool / QPool window fields, whether its output keeps the
    4-d shape (else a mean over [n, c]), and the NHWC output sizes."""
    name = op_name(node.target)
    x = node.args[0]
    n, c, h, w = _shape(x)
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

def pair(v: Any) -> tuple[int, int]:
    v = tuple(int(x) for x in v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])
