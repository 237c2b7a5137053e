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

import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tern.backends.cpu import pack
from tern.errors import ExportError
from tern.memory_plan import align, lifetimes, plan
from tern.ops import op_name

if TYPE_CHECKING:
    import torch.fx

NHWC, PLAIN = "nhwc", "plain"
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)
INF = float("inf")

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
class Value:
    sizes: tuple[int, ...]
    storage: str  # "Input", "Output", "Workspace" or "Weights"
    index: int = 0  # Input / Output
    buffer: int = -1  # Workspace: the buffer (aliases share one)
    data: np.ndarray | None = None  # Weights
    offset: int = 0  # set by finish()

    @property
    def nbytes(self) -> int:
        return 4 * math.prod(self.sizes)


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

    def run(self) -> Program:
        for node in self.gm.graph.nodes:
            if node in self.done or node.op == "get_attr":
                continue
            if node.op == "placeholder":
                self.env[node] = (self._value(Value(_shape(node), "Input", self.p.num_inputs)), PLAIN)
                self.p.num_inputs += 1
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
                for out in outs:
                    self._output(out)
        self._plan()
        return self.p

    # values

    def _value(self, v: Value) -> int:
        self.p.values.append(v)
        return len(self.p.values) - 1

    def _workspace(self, sizes: tuple[int, ...]) -> int:
        self.buffers.append(4 * math.prod(sizes))
        return self._value(Value(tuple(sizes), "Workspace", buffer=len(self.buffers) - 1))

    def _alias(self, v: int, sizes: tuple[int, ...]) -> int:
        """Another view of value v's bytes (same element count)."""
        src = self.p.values[v]
        assert math.prod(sizes) == math.prod(src.sizes)
        return self._value(Value(tuple(sizes), src.storage, src.index, src.buffer, src.data))

    def _weights(self, data: np.ndarray) -> int:
        return self._value(Value((int(data.size),), "Weights", data=np.ascontiguousarray(data, np.float32)))

    def _const(self, node: Any) -> np.ndarray:
        return getattr(self.gm, node.target).detach().float().contiguous().numpy()

    def _op(self, kind: str, fields: dict[str, Any], nodes: list[Any], reads: list[int], writes: list[int]) -> None:
        self.p.ops.append(Op(kind, fields, "+".join(n.name for n in nodes), reads, writes))

    # layouts

    def _get(self, node: Any) -> tuple[int, str]:
        """(value, layout) of a node; a constant becomes a Weights value."""
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
                y = self._workspace((n, h, w, c))
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
        y = self._workspace((n, c, h, w))
        self._op("Transpose", {"x": v, "y": y, "perm": TO_NCHW}, [], [v], [y])
        return y

    def _only_user(self, node: Any) -> Any:
        users = list(node.users)
        return users[0] if len(users) == 1 and users[0].op == "call_function" else None

    def _fuse_activation(self, last: Any, fused: list[Any]) -> tuple[Any, tuple[str, float, float]]:
        u = self._only_user(last)
        act = activation_of(u) if u is not None else None
        if act is None:
            return last, ("None", -INF, INF)
        fused.append(u)
        return u, act

    # ops

    def _call(self, node: Any) -> None:
        name = op_name(node.target)
        if node.target is operator.getitem:
            self.env[node] = self.env[node.args[0]]
        elif name == "aten::convolution":
            self._conv(node)
        elif name in ("aten::addmm", "aten::mm"):
            self._linear(node)
        elif name in ("aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor"):
            self._binary(node)
        elif activation_of(node) is not None or name in _AFFINE:
            self._unary(node)
        elif name in ("aten::mean.dim", "aten::adaptive_avg_pool2d", "aten::avg_pool2d", "aten::max_pool2d_with_indices"):
            self._pool(node)
        elif name in ("aten::view", "aten::_unsafe_view", "aten::reshape", "aten::clone", "aten::alias", "aten::expand"):
            self.env[node] = (self._alias(self._plain(node.args[0]), _shape(node)), PLAIN)  # expand: only identities
        elif name == "aten::permute":
            self._permute(node)
        elif name == "aten::native_layer_norm":
            self._layer_norm(node)
        elif name == "aten::_softmax":
            x = self._plain(node.args[0])
            y = self._workspace(_shape(node))
            self._op("Softmax", {"x": x, "y": y, "inner": _shape(node)[-1]}, [node], [x], [y])
            self.env[node] = (y, PLAIN)
        elif name == "aten::bmm":
            self._matmul(node)
        else:
            raise ExportError(f"cpu backend: node {node.name} ({name}) was claimed but has no lowering")

    def _epilogue(self, act: tuple[str, float, float]) -> dict[str, Any]:
        return {"activation": act[0], "min": act[1], "max": act[2]}

    def _residual(self, node: Any, fused: list[Any]) -> tuple[Any, Any]:
        """(the node whose value becomes the residual, the new last node) if
        node's only user adds it to a value already computed."""
        u = self._only_user(node)
        if u is None or op_name(u.target) != "aten::add.Tensor" or u.kwargs.get("alpha", 1) != 1 or len(u.args) != 2:
            return None, node
        other = u.args[1] if u.args[0] is node else u.args[0]
        known = other in self.env or getattr(other, "op", None) == "get_attr"
        if other is node or not known or _shape(other) != _shape(node):
            return None, node
        fused.append(u)
        return other, u

    def _conv(self, node: Any) -> None:
        x, w, b, stride, padding, dilation, _, _, groups = node.args
        weight = self._const(w)
        bias = self._const(b) if b is not None else None
        depthwise = groups > 1
        packed = pack.pack_depthwise(weight, bias) if depthwise else pack.pack_conv(weight, bias)
        xv = self._nhwc(x)
        fused = [node]
        res, last = self._residual(node, fused)
        last, act = self._fuse_activation(last, fused)
        n, oc, oh, ow = _shape(node)
        y = self._workspace((n, oh, ow, oc))
        rv = self._nhwc(res) if res is not None else -1
        wv = self._weights(packed)
        fields = {"x": xv, "weights": wv, "residual": rv, "y": y, "kernel": tuple(weight.shape[2:]),
                  "stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation),
                  "depthwise": depthwise, **self._epilogue(act)}
        self._op("Conv", fields, fused, [xv, wv] + ([rv] if rv >= 0 else []), [y])
        self.done.update(fused)
        self.env[last] = (y, NHWC)

    def _linear(self, node: Any) -> None:
        if op_name(node.target) == "aten::addmm":
            b, x, w = node.args[:3]
            bias = self._const(b)
        else:
            (x, w), bias = node.args[:2], None
        packed = pack.pack_linear(self._const(w), bias)
        m, k = _shape(x)
        n = _shape(node)[1]
        xv = self._alias(self._plain(x), (m, 1, 1, k))
        fused = [node]
        res, last = self._residual(node, fused)
        last, act = self._fuse_activation(last, fused)
        y = self._workspace((m, 1, 1, n))
        rv = self._alias(self._plain(res), (m, 1, 1, n)) if res is not None else -1
        wv = self._weights(packed)
        fields = {"x": xv, "weights": wv, "residual": rv, "y": y, "kernel": (1, 1), "stride": (1, 1),
                  "padding": (0, 0), "dilation": (1, 1), "depthwise": False, **self._epilogue(act)}
        self._op("Conv", fields, fused, [xv, wv] + ([rv] if rv >= 0 else []), [y])
        self.done.update(fused)
        self.env[last] = (self._alias(y, (m, n)), PLAIN)

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
            assert act is not None
        else:
            last, act = self._fuse_activation(node, fused)
        scale, shift = affine or (1.0, 0.0)
        self._op("Unary", {"x": xv, "y": y, **self._epilogue(act), "scale": scale, "shift": shift}, fused, [xv], [y])
        self.done.update(fused)
        self.env[last] = (y, layout)

    def _pool(self, node: Any) -> None:
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
            fields.update(kernel=_pair(kernel), stride=_pair(stride), padding=_pair(padding))
            if name == "aten::max_pool2d_with_indices":
                fields["kind"] = "Max"
            else:
                fields["count_padding"] = bool(args[5]) if args[5] is not None else True
            keep = True
        xv = self._nhwc(x)
        val = node.meta["val"]
        out_shape = tuple(int(s) for s in (val[0] if isinstance(val, (tuple, list)) else val).shape)
        oh, ow = (1, 1) if fields["kernel"] == (h, w) and fields["padding"] == (0, 0) else out_shape[2:4]
        y = self._workspace((n, oh, ow, c))
        self._op("Pool", {"x": xv, "y": y, **fields}, [node], [xv], [y])
        self.env[node] = (y, NHWC) if keep else (self._alias(y, (n, c)), PLAIN)

    def _permute(self, node: Any) -> None:
        x = self._plain(node.args[0])
        perm = tuple(int(d) % len(_shape(node)) for d in node.args[1])
        y = self._workspace(_shape(node))
        self._op("Transpose", {"x": x, "y": y, "perm": perm}, [node], [x], [y])
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
        n = _shape(b)[2]
        av, bv = self._plain(a), self._plain(b)
        packed = self._workspace((batch * ((n + 15) // 16) * 16 * (1 + k),))
        y = self._workspace((batch, m, n))
        fields = {"a": av, "b": bv, "y": y, "packed": packed, "batch": batch, "m": m, "k": k, "n": n}
        self._op("MatMul", fields, [node], [av, bv, packed], [y, packed])
        self.env[node] = (y, PLAIN)

    def _output(self, node: Any) -> None:
        j = self.p.num_outputs
        self.p.num_outputs += 1
        out = self._value(Value(_shape(node), "Output", j))
        v, layout = self._get(node)
        sizes = self.p.values[v].sizes
        if layout == NHWC and sizes[1] * sizes[2] != 1 and sizes[3] != 1:
            self._op("Transpose", {"x": v, "y": out, "perm": TO_NCHW}, [], [v], [out])
        else:
            src = self._plain(node)
            self._op("Copy", {"x": src, "y": out}, [], [src], [out])

    # memory

    def _plan(self) -> None:
        """Workspace offsets (shared where lifetimes allow) and the weights blob."""
        steps = [[self.p.values[v].buffer for v in op.reads + op.writes if self.p.values[v].storage == "Workspace"]
                 for op in self.p.ops]
        mem = plan(lifetimes(dict(enumerate(self.buffers)), steps, [], []))
        blob = bytearray()
        for v in self.p.values:
            if v.storage == "Workspace":
                v.offset = mem.offsets.get(v.buffer, 0)
            elif v.storage == "Weights" and v.data is not None:
                blob.extend(b"\0" * (align(len(blob)) - len(blob)))
                v.offset = len(blob)
                blob.extend(v.data.tobytes())
        self.p.workspace_bytes = mem.planned_bytes
        self.p.weights = bytes(blob)


def _pair(v: Any) -> tuple[int, int]:
    v = tuple(int(x) for x in v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])
