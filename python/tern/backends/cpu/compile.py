"""Compiles a subgraph the cpu backend claimed into its program: the ops of
backends/cpu/schema/cpu.fbs over values in the delegate's inputs, outputs,
workspace and packed weights.

Decided here, ahead of time:
  - layout: 4-d activations are NHWC between the backend's ops; the
    delegate's inputs and outputs keep the graph's NCHW, converted by
    Transpose ops at the edges (none where the two orders coincide, e.g. a
    [n, c, 1, 1] tensor);
  - fusion: the passes of fusion.py, in its order: the zero pads a
    convolution's padding takes in, Winograd and the epilogues (what each head op takes in: bias, residual, activation; the
    int8 operators) chosen before lowering and recorded on the nodes, row
    chains marked on the ops after;
  - lowering: each node by its op family's `lower` (LOWER below; int8
    operators first, quantized_ops.py), which reads those decisions;
  - weights: packed for the microkernels (pack.py), bias included;
  - memory: the workspace's buffers get offsets from the exporter's own
    planner (tern.memory_plan), so they share bytes when their lifetimes allow.
"""
from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

import tern.backends.cpu.attention as attention
import tern.backends.cpu.convolution as convolution
import tern.backends.cpu.elementwise as elementwise
import tern.backends.cpu.layout as layout
import tern.backends.cpu.linear as linear
import tern.backends.cpu.pooling as pooling
import tern.backends.cpu.quantized_ops as quantized_ops
from tern.backends.cpu.activations import ACTIVATIONS, AFFINE
from tern.backends.cpu.fusion import (choose_block_linears, choose_epilogues, choose_pads, choose_winograd,
                                      mark_row_chains)
from tern.backends.cpu.ir import (ELEMENT_BYTES, NHWC, PLAIN, TO_NCHW, TO_NHWC, Op, Program, Value, before,
                                  dtype_of, name_of, shape)
from tern.backends.cpu.options import CpuOptions
from tern.errors import ExportError
from tern.memory_plan import align, lifetimes, plan

if TYPE_CHECKING:
    import torch.fx

# The cpu.fbs ops the compiler itself emits, for any family: layout changes
# at the edges of NHWC ops and the copies to the delegate's outputs (each
# family lists its own: EMITS).
EMITS = ("Transpose", "Copy")

# op name -> the function that lowers one such node (int8 operators, which
# quantized_ops.lower takes first, aside)
LOWER: dict[str, Callable[["Compiler", Any], None]] = {
    "aten::convolution": convolution.lower,
    "aten::addmm": linear.lower_linear,
    "aten::mm": linear.lower_linear,
    "aten::bmm": linear.lower_bmm,
    "aten::scaled_dot_product_attention": attention.lower,
    **{name: elementwise.lower_binary for name in elementwise.BINARY},
    **{name: elementwise.lower_unary for name in ACTIVATIONS + AFFINE},
    "aten::native_layer_norm": elementwise.lower_layer_norm,
    "aten::pow.Tensor_Scalar": elementwise.lower_rms_norm,  # the first node of an RMSNorm (the partitioner claims no other pow)
    "aten::_softmax": elementwise.lower_softmax,
    **{name: pooling.lower for name in pooling.POOLS},
    **{name: layout.lower_reshape for name in layout.RESHAPES + ("aten::expand",)},
    "aten::permute": layout.lower_permute,
    **{name: layout.lower_slice for name in layout.SLICES},
    **{name: layout.lower_split for name in layout.SPLITS},
    "getitem": layout.lower_getitem,
    "aten::cat": layout.lower_cat,
}


def compile_subgraph(gm: "torch.fx.GraphModule", options: CpuOptions | None = None) -> Program:
    """The program of a claimed subgraph (see tern.backend for its form)."""
    setattr(gm, linear.SUBGRAPH, True)  # its placeholders are delegate inputs (linear.block_weight)
    return Compiler(gm, options or CpuOptions()).run()


class Compiler:
    """The program being built and what lowering functions ask of it:
    values (workspace, weights, views of either), a node's value in the
    layout an op wants, and the nodes already covered."""

    def __init__(self, gm: "torch.fx.GraphModule", options: CpuOptions) -> None:
        self.gm = gm
        self.options = options
        self.p = Program()
        self.buffers: list[int] = []  # bytes of each workspace buffer
        self.env: dict[Any, tuple[int, str]] = {}  # node -> (value, layout)
        self.nhwc_of: dict[int, int] = {}  # plain value -> its NHWC copy
        self.done: set[Any] = set()  # nodes an earlier op fused
        self.weight_values: dict[bytes, int] = {}  # sha256 of packed weights -> their value
        # dequantize nodes: (int8 node, scale, zero point), materialized as a
        # Dequantize op only when a float op reads them (get)
        self.lazy_dq: dict[Any, tuple[Any, float, int]] = {}
        # dynamic dequantize nodes -> (their DynamicQuantize's int8 value, its qparams value)
        self.dynamic: dict[Any, tuple[int, int]] = {}

    def run(self) -> Program:
        self.done.update(choose_pads(self.gm))  # lowered with their convolutions
        rms = [n for head in self.gm.graph.nodes if (norm := elementwise.rms_norm_at(head)) for n in norm.nodes[1:]]
        self.done.update(n for sdpa in self.gm.graph.nodes if name_of(sdpa) == "aten::scaled_dot_product_attention"
                         and not isinstance(at := attention.attention_of(sdpa), str) for n in at.read_past)
        choose_winograd(self.gm, self.options)
        block_heads, block_covered = choose_block_linears(self.gm, self.options)
        self.done.update(block_covered)  # a GGUF weight's dequantize and transpose: read by its BlockLinear
        choose_epilogues(self.gm, skip=set(rms) | set(block_heads))  # an RMSNorm's own mul and add are no heads
        for node in self.gm.graph.nodes:  # quantized operators cover reshapes before them, run with them
            if node.op == "call_function":
                self.done.update(n for n in quantized_ops.covered_views(node)
                                 if n.graph is node.graph and before(n, node))
        for node in self.gm.graph.nodes:
            if node in self.done or node.op == "get_attr":
                continue
            if node.op == "placeholder":
                self.env[node] = (self.value(Value(shape(node), "Input", self.p.num_inputs, dtype=dtype_of(node))),
                                  PLAIN)
                self.p.num_inputs += 1
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
                for out in outs:
                    self._output(out)
        self._mark_outs()
        mark_row_chains(self.p, self.options)
        self._plan()
        return self.p

    def _mark_outs(self) -> None:
        """Op.out, for debuggers (tern-run --dump-values): on the last op that
        names a node last, that node's value, if the op writes it (or a view
        of its buffer); earlier ops naming it may hold a part of it only."""
        seen = set()
        for op in reversed(self.p.ops):
            if op.last is None or op.last in seen or op.last not in self.env:
                continue
            seen.add(op.last)
            v, layout_ = self.env[op.last]
            val = self.p.values[v]
            written = {(self.p.values[w].storage, self.p.values[w].buffer, self.p.values[w].index) for w in op.writes}
            if v in op.writes or (val.storage, val.buffer, val.index) in written:
                op.out, op.out_nhwc = v, layout_ == NHWC and len(val.sizes) == 4

    def _call(self, node: Any) -> None:
        if quantized_ops.lower(self, node):
            return
        name = name_of(node)
        lower = LOWER.get(name)
        if lower is None:
            raise ExportError(f"cpu backend: node {node.name} ({name}) was claimed but has no lowering")
        lower(self, node)

    # values

    def value(self, v: Value) -> int:
        self.p.values.append(v)
        return len(self.p.values) - 1

    def workspace(self, sizes: tuple[int, ...], dtype: str = "Float32") -> int:
        self.buffers.append(ELEMENT_BYTES[dtype] * math.prod(sizes))
        return self.value(Value(tuple(sizes), "Workspace", buffer=len(self.buffers) - 1, dtype=dtype))

    def alias(self, v: int, sizes: tuple[int, ...]) -> int:
        """Another view of value v's bytes (same element count)."""
        src = self.p.values[v]
        if math.prod(sizes) != math.prod(src.sizes):
            raise ExportError(f"cpu backend: a view of {list(src.sizes)} as {list(sizes)} changes the element count")
        return self.value(Value(tuple(sizes), src.storage, src.index, src.buffer, src.data, dtype=src.dtype))

    def part(self, v: int, start: int, sizes: tuple[int, ...]) -> int:
        """Elements [start, start + prod(sizes)) of workspace value v, as a value."""
        src = self.p.values[v]
        if src.storage != "Workspace" or start + math.prod(sizes) > math.prod(src.sizes):
            raise ExportError(f"cpu backend: elements [{start}, +{math.prod(sizes)}) outside the workspace value "
                              f"{list(src.sizes)}")
        return self.value(Value(tuple(sizes), "Workspace", buffer=src.buffer,
                                within=src.within + ELEMENT_BYTES[src.dtype] * start, dtype=src.dtype))

    def weights(self, data: np.ndarray) -> int:
        """A weights value; equal contents share one (an unrolled RNN packs
        the same recurrent weight at every step)."""
        return self._shared_weights(np.ascontiguousarray(data, np.float32), b"", "Float32")

    def weights_int8(self, data: np.ndarray) -> int:
        """An int8 weights value (packed int8 weights), shared like weights'."""
        return self._shared_weights(np.ascontiguousarray(data, np.int8), b"i8", "Int8")

    def _shared_weights(self, data: np.ndarray, prefix: bytes, dtype: str) -> int:
        key = prefix + hashlib.sha256(data.tobytes()).digest()
        if key not in self.weight_values:
            self.weight_values[key] = self.value(Value((int(data.size),), "Weights", data=data, dtype=dtype))
        return self.weight_values[key]

    def const(self, node: Any) -> np.ndarray:
        return getattr(self.gm, node.target).detach().float().contiguous().numpy()

    def const_bool(self, node: Any) -> np.ndarray:
        return getattr(self.gm, node.target).detach().cpu().numpy().astype(bool)

    def op(self, kind: str, fields: dict[str, Any], nodes: list[Any], reads: list[int], writes: list[int],
           decisions: dict[str, Any] | None = None) -> None:
        self.p.ops.append(Op(kind, fields, "+".join(n.name for n in nodes), reads, writes, dict(decisions or {}),
                             last=nodes[-1] if nodes else None))

    # layouts

    def get(self, node: Any) -> tuple[int, str]:
        """(value, layout) of a node; a constant becomes a Weights value, a
        dequantize a Dequantize op's output."""
        if node not in self.env and node in self.lazy_dq:
            src, scale, zero_point = self.lazy_dq[node]
            xv, layout_ = self.get(src)
            y = self.workspace(self.p.values[xv].sizes)
            self.op("Dequantize", {"x": xv, "y": y, "scale": scale, "zero_point": zero_point}, [node], [xv], [y])
            self.env[node] = (y, layout_)
        if node not in self.env and getattr(node, "op", None) == "get_attr":
            self.env[node] = (self.alias(self.weights(self.const(node).reshape(-1)), shape(node)), PLAIN)
        return self.env[node]

    def nhwc(self, node: Any) -> int:
        """node's value as NHWC (4-d), transposing a plain one once."""
        v, layout_ = self.get(node)
        if layout_ == NHWC:
            return v
        if v not in self.nhwc_of:
            n, c, h, w = self.p.values[v].sizes
            if h * w == 1 or c == 1:
                self.nhwc_of[v] = self.alias(v, (n, h, w, c))
            else:
                y = self.workspace((n, h, w, c), self.p.values[v].dtype)
                self.op("Transpose", {"x": v, "y": y, "perm": TO_NHWC}, [], [v], [y])
                self.nhwc_of[v] = y
        return self.nhwc_of[v]

    def plain(self, node: Any) -> int:
        """node's value in the graph's own layout (NCHW for 4-d)."""
        v, layout_ = self.get(node)
        if layout_ == PLAIN:
            return v
        n, h, w, c = self.p.values[v].sizes
        if h * w == 1 or c == 1:
            return self.alias(v, (n, c, h, w))
        y = self.workspace((n, c, h, w), self.p.values[v].dtype)
        self.op("Transpose", {"x": v, "y": y, "perm": TO_NCHW}, [], [v], [y])
        return y

    def _output(self, node: Any) -> None:
        j = self.p.num_outputs
        self.p.num_outputs += 1
        out = self.value(Value(shape(node), "Output", j, dtype=dtype_of(node)))
        v, layout_ = self.get(node)
        sizes = self.p.values[v].sizes
        if layout_ == NHWC and sizes[1] * sizes[2] != 1 and sizes[3] != 1:
            self.op("Transpose", {"x": v, "y": out, "perm": TO_NCHW}, [], [v], [out])
        else:
            src = self.plain(node)
            self.op("Copy", {"x": src, "y": out}, [], [src], [out])

    # memory

    def _plan(self) -> None:
        """Workspace offsets (shared where lifetimes allow) and the weights blob."""
        steps = [[self.p.values[v].buffer for v in op.reads + op.writes if self.p.values[v].storage == "Workspace"]
                 for op in self.p.ops]
        # dynamic sizes: the plan holds each buffer at its upper bound
        mem = plan(lifetimes({i: int(b) for i, b in enumerate(self.buffers)}, steps, [], []))
        blob = bytearray()
        placed: dict[int, int] = {}  # id of a weights array -> its offset: a value and its views (alias) share it
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
