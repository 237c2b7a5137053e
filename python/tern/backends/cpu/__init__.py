"""The cpu backend's exporter side: which nodes it claims, and their payload.

    import tern
    from tern.backends.cpu import CpuOptions, CpuPartitioner
    cpu = CpuPartitioner()                        # or CpuPartitioner(options=CpuOptions(winograd=False))
    program = tern.export(model, (x,), partitioners=[cpu])
    print(cpu.report())                           # what stayed on the portable kernels, and why

tern.export uses CpuPartitioner() by default. It claims, one module per op
family (FAMILIES: each with supports(node) -> None, or why not; its
lowering; and EMITS, the cpu.fbs ops that lowering emits):
  convolution.py   float32 convolutions: 2-d, general, grouped, depthwise or
                   transposed; Winograd for wide 3x3 ones; a zero pad before
                   one taken into its padding
  linear.py        linear layers (addmm, mm of a constant weight), batched matmul;
                   linear layers of GGUF weights (tern::gguf_dequantize of Q4_0,
                   Q4_1 or Q8_0 rows) as BlockLinear (CpuOptions.block_linear)
  attention.py     scaled dot-product attention as one op (float or constant
                   bool mask, causal, grouped-query; no dropout)
  elementwise.py   add/sub/mul of tensors (same shape, a number, a per-channel
                   gate, a bias over the last dims), activations (relu,
                   relu6/hardtanh/clamp, hardswish, sigmoid, tanh, gelu, silu)
                   and x op number (activations.py), layer norm, RMSNorm
                   and softmax over the last dims
  pooling.py       max, average and global average pools
  layout.py        reshapes, expand, permute, select, slice (step 1), split, concat
  quantized_ops.py of quantized models (tern.quantize): int8 convolutions and
                   linear layers with what they fuse, add, mul, pools,
                   quantize and dequantize (patterns: quantized.py)
The op kinds the runtime has come from backends/cpu/ops.def, read once
through the bindings (tern._runtime.cpu_op_kinds(); runtime_op_kinds): a
node whose family emits a kind the runtime lacks is refused, saying which.
compile.py turns each claimed subgraph into the backend's program (NHWC
inside, fused by the passes of fusion.py, which record their decisions on
the nodes before the families lower them, weights packed, workspace
planned); options.py holds what it decides by measurement. What it does not
claim runs on the portable kernels; report() says which nodes and why.
With dynamic shapes (torch.export.Dim), it claims the float ops of
DYNAMIC_OPS at dynamic sizes too: shapes are ir.SymDim (an int, the upper
bound, that carries its expression), and payload.py stores each dynamic
size as an expression of the delegate's input sizes (payload version 5).
The runtime side is backends/cpu/ (tern::register_cpu_backend()).
"""
from __future__ import annotations

import collections
import functools
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Sequence

import tern.backends.cpu.attention as attention
import tern.backends.cpu.convolution as convolution
import tern.backends.cpu.elementwise as elementwise
import tern.backends.cpu.layout as layout
import tern.backends.cpu.linear as linear
import tern.backends.cpu.pooling as pooling
import tern.backends.cpu.quantized_ops as quantized_ops
from tern.backend import Lowered, Partitioner
from tern.backends.cpu.activations import ACTIVATIONS, AFFINE
from tern.backends.cpu.compile import EMITS as COMPILER_EMITS
from tern.backends.cpu.compile import compile_subgraph
from tern.backends.cpu.ir import SymDim, UnboundedSize, dims, name_of, not_float32, shape, val
from tern.backends.cpu.options import CpuOptions
from tern.backends.cpu.payload import serialize
from tern.shapes import has_dynamic_shape

if TYPE_CHECKING:
    import torch.fx

__all__ = ["CpuOptions", "CpuPartitioner", "FAMILIES", "SUPPORTS", "family_of", "runtime_op_kinds"]

# The op families: each has supports functions (SUPPORTS), a lowering
# (compile.LOWER) and EMITS.
FAMILIES: tuple[ModuleType, ...] = (convolution, linear, attention, elementwise, pooling, layout, quantized_ops)

# op name -> the family's supports(node): None if the backend runs it, else why not
SUPPORTS: dict[str, Callable[[Any], str | None]] = {
    "aten::convolution": convolution.supports,
    "aten::constant_pad_nd": convolution.supports_pad,
    "aten::addmm": linear.supports_linear,
    "aten::mm": linear.supports_linear,
    "aten::bmm": linear.supports_bmm,
    "aten::scaled_dot_product_attention": attention.supports,
    **{name: elementwise.supports_binary for name in elementwise.BINARY},
    **{name: elementwise.supports_affine for name in AFFINE},
    **{name: elementwise.supports_activation for name in ACTIVATIONS},
    "aten::native_layer_norm": elementwise.supports_layer_norm,
    "aten::_softmax": elementwise.supports_softmax,
    **{name: pooling.supports for name in pooling.POOLS},
    **{name: layout.supports_reshape for name in layout.RESHAPES},
    "aten::expand": layout.supports_expand,
    "aten::permute": layout.supports_permute,
    **{name: layout.supports_slice for name in layout.SLICES},
    **{name: layout.supports_split for name in layout.SPLITS},
    "aten::cat": layout.supports_cat,
    "getitem": layout.supports_getitem,
}
# checks their own dtypes (attention's mask may be bool)
_ANY_DTYPE = ("aten::scaled_dot_product_attention",)

# What the backend takes with dynamic sizes (a method exported with
# torch.export.Dim): the layers of text models (linear layers, matrix
# products, attention, elementwise ops, norms, softmax, views, permutes,
# slices and concats), each size an expression the payload stores and the
# runtime evaluates at each call's input sizes (payload.py, loader.h).
# Convolutions, pools and int8 operators of dynamic sizes stay portable.
DYNAMIC_OPS = frozenset(
    ("aten::addmm", "aten::mm", "aten::bmm", "aten::scaled_dot_product_attention", "aten::native_layer_norm",
     "aten::_softmax", "aten::expand", "aten::permute", "aten::cat", "getitem")
    + tuple(elementwise.BINARY) + AFFINE + ACTIVATIONS + layout.RESHAPES + layout.SLICES + layout.SPLITS)

# backends/cpu/ops.def in a repository checkout (python/tern/backends/cpu/__init__.py -> repo root)
OPS_DEF = Path(__file__).resolve().parents[4] / "backends" / "cpu" / "ops.def"
_CPU_OP = re.compile(r"^CPU_OP\((\w+),\s*(\w+)\)", re.MULTILINE)


@functools.lru_cache(maxsize=None)
def runtime_op_kinds() -> dict[str, str]:
    """Op kind -> family file (backends/cpu/ops/<family>.cpp) of every op the
    runtime's cpu backend has: its ops.def, read once through the bindings
    (tern._runtime.cpu_op_kinds), or from the checkout's ops.def when the
    bindings are not built."""
    try:
        import tern._runtime as _runtime
    except ImportError:
        if OPS_DEF.is_file():
            return dict(_CPU_OP.findall(OPS_DEF.read_text()))
        raise RuntimeError(f"tern: the compiled runtime is not importable and {OPS_DEF} does not exist") from None
    return dict(_runtime.cpu_op_kinds())


def family_of(node: "torch.fx.Node") -> ModuleType | None:
    """The family that would lower node: quantized_ops for a node of an int8
    operator, elementwise for a node of an RMSNorm, else the module of its
    SUPPORTS entry; None if it has none."""
    if quantized_ops.supports(node) is not False:
        return quantized_ops
    if elementwise.rms_norm_containing(node) is not None:
        return elementwise
    supports = SUPPORTS.get(name_of(node))
    return sys.modules[supports.__module__] if supports is not None else None


def _lacking(family: ModuleType) -> str | None:
    """Why a family's nodes cannot run: an op its lowering emits (or the
    compiler's, for any family) that the runtime lacks; else None."""
    kinds = runtime_op_kinds()
    missing = [k for k in family.EMITS + COMPILER_EMITS if k not in kinds]
    return f"the runtime's cpu backend has no {missing[0]} op (backends/cpu/ops.def)" if missing else None


def _dynamic_refusal(node: "torch.fx.Node") -> str | None:
    """Why a node of dynamic sizes stays portable, or None (DYNAMIC_OPS).
    Raises UnboundedSize for a size without an upper bound."""
    import torch

    table = getattr(node.graph.owning_module, "meta", {}).get("tern_symbols")  # the Dims' ranges (tern.export)
    for t in [node, *node.all_input_nodes]:
        v = val(t)
        sizes = dims(v) if isinstance(v, torch.Tensor) else ()
        for s in sizes:
            if isinstance(s, SymDim) and (table.lower_bound(s.expr) if table else s.env.bound_sympy(s.expr).lower) < 1:
                return "a dynamic size that may be 0 (the backend takes sizes of 1 and more: give the Dim min=1)"
    name = name_of(node)
    if quantized_ops.supports(node) is not False:
        return "an int8 operator of dynamic sizes (the backend takes float ones)"
    if elementwise.rms_norm_containing(node) is not None or attention.repeat_claimed(node):
        return None
    if name not in DYNAMIC_OPS:
        return (f"dynamic sizes in {name} (the backend takes them in linear layers, matrix products, attention, "
                "elementwise ops, norms, softmax and layout ops)")
    split = layout.split_of(node) if name in layout.SPLITS else None
    if split is not None and isinstance(shape(node.args[0])[split[0]], SymDim):
        return "a split along a dynamic dim"
    if name == "aten::cat":  # each input's place in the output: the sizes of those before it
        size = shape(node)
        dim = (node.args[1] if len(node.args) > 1 else 0) % len(size)
        if any(len(shape(x)) == len(size) and isinstance(shape(x)[dim], SymDim) for x in node.args[0][:-1]):
            return "a concat along a dynamic dim after an input of dynamic size there"
    return None


class CpuPartitioner(Partitioner):
    backend = "cpu"
    dynamic_shapes = True

    def __init__(self, options: CpuOptions | None = None) -> None:
        self.options = options or CpuOptions()
        # (node name, op, why) of each node refused, across the exports it took part in
        self.refused: list[tuple[str, str, str]] = []

    def refusal(self, node: "torch.fx.Node") -> str | None:
        """None if the backend runs this call_function node, else why not."""
        try:
            why = self._refusal(node)
            if why is None and has_dynamic_shape(node):
                why = _dynamic_refusal(node)
        except UnboundedSize as e:
            return str(e)
        return why

    def _refusal(self, node: "torch.fx.Node") -> str | None:
        """refusal() at any fixed sizes."""
        int8 = quantized_ops.supports(node)  # int8 convolutions, linear layers, add, mul, pools; (de)quantize
        if int8 is not False:
            return int8 if int8 is not None else _lacking(quantized_ops)
        if elementwise.rms_norm_containing(node) is not None:  # its nodes lowered as one RmsNorm
            return _lacking(elementwise) or not_float32(node)
        if attention.repeat_claimed(node) and _lacking(attention) is None:  # the Attention reads past them
            return None  # (k and v repeated per head, or a KV cache's layout); without one: ops of their own
        block = linear.block_linear_refusal(node, self.options)  # a GGUF weight's dequantize and its linear layer
        if block is not False:
            return block if block is not None else _lacking(linear)
        name = name_of(node)
        supports = SUPPORTS.get(name)
        if supports is None:
            return "no cpu backend op for it"
        lacking = _lacking(sys.modules[supports.__module__])
        if lacking is not None:
            return lacking
        if name not in _ANY_DTYPE:
            wrong = not_float32(node)
            if wrong is not None:
                return wrong
        return supports(node)

    def supports(self, node: "torch.fx.Node") -> bool:
        why = self.refusal(node)
        if why is not None:
            self.refused.append((node.name, name_of(node), why))
        return why is None

    def report(self) -> str:
        """What stayed on the portable kernels and why, one line per op and
        reason, with the nodes."""
        groups: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
        for node, op, why in dict.fromkeys(self.refused):  # a node asked twice is listed once
            groups[(op, why)].append(node)
        if not groups:
            return "cpu backend: every node was claimed"
        lines = ["cpu backend: left on the portable kernels"]
        for (op, why), nodes in sorted(groups.items()):
            shown = ", ".join(nodes[:4]) + (f", ... ({len(nodes)})" if len(nodes) > 4 else "")
            lines.append(f"  {op}: {why} [{shown}]")
        return "\n".join(lines)

    def shares_constant(self, placeholder: "torch.fx.Node") -> bool:
        """GGUF rows that BlockLinears alone read in the subgraph and the
        rest of the method reads too (a tied embedding): a delegate input,
        so the file holds them once."""
        return linear.shares_rows(placeholder, self.options)

    def keep(self, nodes: Sequence["torch.fx.Node"]) -> bool:
        """Not a group of reshapes and getitems alone."""
        return any(name_of(n) not in layout.SHAPE_ONLY + ("getitem",) for n in nodes)

    def preprocess(self, subgraph: "torch.fx.GraphModule") -> Lowered:
        program = compile_subgraph(subgraph, self.options)
        return Lowered(serialize(program), program.workspace_bytes)
