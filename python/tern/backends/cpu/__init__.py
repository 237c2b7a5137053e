"""The cpu backend's exporter side: which nodes it claims, and their payload.

    import tern
    from tern.backends.cpu import CpuPartitioner
    program = tern.export(model, (x,), partitioners=[CpuPartitioner()])

tern.export uses it by default. It claims float32 convolutions (2-d,
general, grouped, depthwise or transposed), linear layers, residual adds, the activations it can
fuse or run (relu, relu6/hardtanh/clamp, hardswish, sigmoid, tanh, gelu,
silu), add/sub/mul of tensors (same shape, a scalar, a per-channel gate, a
bias over the last dims), add/sub/mul/div by a number, select, slice
(step 1) and split, layer norm and
softmax over the last dim, batched matmul, scaled dot-product attention (one
op: float or constant bool mask, causal, grouped-query; no dropout), concat
(a convolution whose output is only concatenated writes into its slice), permutes,
pooling (max, average, global average) and the reshapes between them; and
of quantized models (tern.quantize), int8 convolutions and linear layers
with what they fuse, quantize and dequantize (quantized.py). compile.py turns each claimed
subgraph into the backend's program (NHWC inside, fused, weights packed,
workspace planned). What it does not claim runs on the portable kernels.
The runtime side is backends/cpu/ (tern::register_cpu_backend()).
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Sequence

from tern.backend import Lowered, Partitioner

if TYPE_CHECKING:
    import torch.fx

_ELEMENTWISE = ("aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor")
_RESHAPES = ("aten::view", "aten::_unsafe_view", "aten::reshape", "aten::clone", "aten::alias", "aten::unsqueeze",
             "aten::squeeze", "aten::squeeze.dim", "aten::squeeze.dims")
_SHAPE_ONLY = _RESHAPES + ("aten::expand", "aten::permute", "aten::select.int", "aten::slice.Tensor",
                            "aten::split.Tensor", "aten::split_with_sizes")


class CpuPartitioner(Partitioner):
    backend = "cpu"

    def supports(self, node: "torch.fx.Node") -> bool:
        from tern.backends.cpu.compile import activation_of
        from tern.backends.cpu.quantized import claims
        from tern.ops import op_name

        quantized = claims(node)  # int8 convolutions, linear layers, add, mul; quantize, dequantize
        if quantized is not None:
            return quantized
        if node.target is operator.getitem:
            from tern.backends.cpu.compile import split_of

            # float32 only, like every node it claims (a float16 max pool's item stays portable)
            return _all_float32(node) and (
                _is_first_of(node, ("aten::max_pool2d_with_indices", "aten::native_layer_norm"))
                or split_of(node.args[0]) is not None)
        if op_name(node.target) == "aten::scaled_dot_product_attention":
            from tern.backends.cpu.compile import attention_of

            return attention_of(node) is not None
        if not _all_float32(node):
            return False
        name = op_name(node.target)
        if name == "aten::convolution":
            return _conv_ok(node)
        if name in ("aten::addmm", "aten::mm"):
            return _linear_ok(node)
        if name in _ELEMENTWISE:
            return _binary_ok(node)
        if name in ("aten::add.Scalar", "aten::sub.Scalar", "aten::mul.Scalar", "aten::div.Scalar"):
            from tern.backends.cpu.compile import affine_of

            return affine_of(node) is not None
        if name in _RESHAPES:
            return True
        if name == "aten::expand":
            from tern.backends.cpu.compile import expanded_weight

            # a no-op, or a constant matrix repeated over a batch for bmm (a linear layer)
            return tuple(_val(node).shape) == tuple(_val(node.args[0]).shape) or expanded_weight(node) is not None
        if name == "aten::permute":
            from tern.backends.cpu.compile import simplify_permute

            sizes, _ = simplify_permute(tuple(_val(node.args[0]).shape), node.args[1])
            return len(sizes) <= 4
        if name in ("aten::split.Tensor", "aten::split_with_sizes"):
            from tern.backends.cpu.compile import split_of

            return split_of(node) is not None
        if name in ("aten::select.int", "aten::slice.Tensor"):
            from tern.backends.cpu.compile import slice_of

            return slice_of(node) is not None
        if name == "aten::native_layer_norm":
            x, shape, w, b = node.args[:4]
            return (_only_values_used(node) and all(a is None or _is_const(a) for a in (w, b))
                    and tuple(_val(x).shape[-len(shape):]) == tuple(shape))
        if name == "aten::_softmax":
            dim, half = node.args[1], node.args[2] if len(node.args) > 2 else False
            return not half and dim % _rank(node) == _rank(node) - 1
        if name == "aten::cat":
            return len(node.args[0]) >= 1 and all(hasattr(t, "meta") for t in node.args[0]) and 1 <= _rank(node) <= 8
        if name == "aten::bmm":
            return _rank(node.args[0]) == 3 and _rank(node.args[1]) == 3
        if name in POOLS:
            return pool_supported(node)
        return activation_of(node) is not None

    def keep(self, nodes: Sequence["torch.fx.Node"]) -> bool:
        """Not a group of reshapes and getitems alone."""
        from tern.ops import op_name

        return any(n.target is not operator.getitem and op_name(n.target) not in _SHAPE_ONLY for n in nodes)

    def preprocess(self, subgraph: "torch.fx.GraphModule") -> Lowered:
        from tern.backends.cpu.compile import compile_subgraph
        from tern.backends.cpu.payload import serialize

        program = compile_subgraph(subgraph)
        return Lowered(serialize(program), program.workspace_bytes)


def _val(node: Any) -> Any:
    return node.meta.get("val") if hasattr(node, "meta") else None


def _rank(node: Any) -> int:
    v = _val(node)
    return v.dim() if v is not None and hasattr(v, "dim") else -1


def _all_float32(node: Any) -> bool:
    """Every tensor it reads and writes is float32."""
    import torch

    vals = [_val(a) for a in node.all_input_nodes] + [_val(node)]
    tensors = []
    for v in vals:
        tensors += list(v) if isinstance(v, (tuple, list)) else [v]
    tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
    # max_pool's indices are int64: they are allowed, just never used
    return bool(tensors) and all(t.dtype in (torch.float32, torch.int64) for t in tensors) and any(
        t.dtype == torch.float32 for t in tensors)


def _is_const(node: Any) -> bool:
    return getattr(node, "op", None) == "get_attr"


def _conv_ok(node: Any) -> bool:
    x, w, b, stride, padding, dilation, transposed, _, groups = node.args
    if _rank(x) != 4 or not _is_const(w) or (b is not None and not _is_const(b)):
        return False
    if transposed:  # stride x stride phases (compile.py), each at least one pixel
        oh, ow = _val(node).shape[2:]
        return groups == 1 and oh >= stride[0] and ow >= stride[1]
    return True  # groups == 1, depthwise, or one Conv per group (compile.py)


def _linear_ok(node: Any) -> bool:
    from tern.ops import op_name

    if op_name(node.target) == "aten::mm":
        x, w = node.args[:2]
        return _rank(x) == 2 and _is_const(w)
    b, x, w = node.args[:3]
    beta = node.kwargs.get("beta", node.args[3] if len(node.args) > 3 else 1)
    alpha = node.kwargs.get("alpha", node.args[4] if len(node.args) > 4 else 1)
    return _rank(x) == 2 and _is_const(w) and _is_const(b) and _rank(b) == 1 and beta == 1 and alpha == 1


def _binary_ok(node: Any) -> bool:
    """Both operands tensors; one of the output's shape, the other the same
    or broadcast in a way the backend runs (compile.broadcast_of) in either
    layout it may pick; sub only with the full-size operand first."""
    from tern.backends.cpu.compile import broadcast_of
    from tern.ops import op_name

    if len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1 or not all(hasattr(t, "meta") for t in node.args):
        return False
    out = tuple(_val(node).shape)
    a, b = (tuple(_val(t).shape) for t in node.args)
    if a != out:
        if op_name(node.target) == "aten::sub.Tensor" or b != out:
            return False
        a, b = b, a
    # a 4-d op may run in either layout, but always can in NHWC (compile.py
    # picks NHWC when the graph's layout cannot broadcast b)
    return broadcast_of(out, b, True) is not None if len(out) == 4 else broadcast_of(out, b, False) is not None


POOLS = ("aten::mean.dim", "aten::adaptive_avg_pool2d", "aten::avg_pool2d", "aten::max_pool2d_with_indices")


def pool_supported(node: Any) -> bool:
    """Whether a pool node (one of POOLS) fits the backend's Pool / QPool
    window: NHWC, no ceil mode, no dilation, no divisor override, padding at
    most half the window; a mean or adaptive pool over the whole image."""
    from tern.ops import op_name

    name = op_name(node.target)
    if _rank(node.args[0]) != 4:
        return False
    if name == "aten::mean.dim":
        return sorted(d % 4 for d in node.args[1]) == [2, 3]
    if name == "aten::adaptive_avg_pool2d":
        return tuple(node.args[1]) in ((1, 1), (1,))
    if name == "aten::avg_pool2d":
        return _pool_ok(node, divisor_at=6)
    return _pool_ok(node, dilation_at=4) and _only_values_used(node)


def _pool_ok(node: Any, dilation_at: int | None = None, divisor_at: int | None = None) -> bool:
    args = list(node.args) + [None] * 8
    kernel = tuple(args[1])
    padding = tuple(args[3]) if args[3] else (0,)
    pads = padding * (2 // len(padding))
    kern = kernel * (2 // len(kernel))
    ceil_mode = args[5] if dilation_at is not None else args[4]
    if ceil_mode or any(2 * p > k for p, k in zip(pads, kern)):
        return False
    if dilation_at is not None and args[dilation_at] and any(d != 1 for d in args[dilation_at]):
        return False
    return divisor_at is None or args[divisor_at] is None


def _only_values_used(node: Any) -> bool:
    return all(u.target is operator.getitem and u.args[1] == 0 for u in node.users)


def _is_first_of(node: Any, ops: tuple[str, ...]) -> bool:
    """A getitem of the first result of one of `ops` (max pool's values,
    layer norm's output: their other results go unused)."""
    from tern.ops import op_name

    src = node.args[0]
    return getattr(src, "op", None) == "call_function" and op_name(src.target) in ops and node.args[1] == 0
