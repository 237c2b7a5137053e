"""Lowers real-to-complex FFTs (torch.stft, torch.fft.rfft) to real-valued ops.

The file format has no complex dtype. aten._fft_r2c(x, dim=[last], norm,
onesided) over N points is a DFT: with k the output frequencies (N//2 + 1
onesided, else N),

    re[..., k] =  sum_n x[..., n] cos(2 pi k n / N) * s
    im[..., k] = -sum_n x[..., n] sin(2 pi k n / N) * s

s = 1, 1/sqrt(N) or 1/N for norm 0, 1, 2. Both are one aten.mm of x viewed
as (rows, N) with a constant (N, 2K) matrix [cos | -sin] (computed in
float64, stored in x's dtype), then a slice for each half.

The complex result is then carried as the pair (re, im) through the shape
ops that read it (view, reshape, permute, transpose, unsqueeze, squeeze,
slice, select, clone: applied to both halves) to the ops that make it real
again:

    abs(z)          -> sqrt(re * re + im * im)
    view_as_real(z) -> stack([re, im], -1)  (unsqueeze + cat)
    real(z), imag(z) -> re, im

An FFT is rewritten only when every use of its complex result is one of
these and its input's shape is static; any other is left as it is, so export
names the op that has no kernel. Error: the DFT by matmul sums N products in
float32, as pocketfft's result is rounded from its own float32 butterflies;
both are within a few ulp of max |x| * sqrt(N) (tests/python/test_lower_fft.py).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tern.graph import add_constant, call_function
from tern.ops import op_name

if TYPE_CHECKING:
    import torch
    import torch.fx

# Shape ops applied to each half of a complex value as they are.
_SHAPE_OPS = frozenset({
    "aten::view", "aten::reshape", "aten::_unsafe_view", "aten::permute", "aten::transpose.int",
    "aten::unsqueeze", "aten::squeeze.dim", "aten::squeeze.dims", "aten::slice.Tensor", "aten::select.int",
    "aten::clone", "aten::alias",
})
# Ops that turn a complex value into a real one.
_SINKS = frozenset({"aten::abs", "aten::view_as_real", "aten::real", "aten::imag"})


def lower_fft(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Rewrites each eligible aten._fft_r2c node and the complex ops after it."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and op_name(node.target) == "aten::_fft_r2c" and _eligible(node):
            _lower(gm, node)
    return gm


def _eligible(fft: "torch.fx.Node") -> bool:
    import torch

    x, dims, norm, onesided = fft.args
    val = x.meta.get("val") if hasattr(x, "meta") else None
    if not (isinstance(val, torch.Tensor) and val.dtype in (torch.float32, torch.float64) and val.dim() >= 1
            and all(isinstance(s, int) for s in val.shape) and norm in (0, 1, 2)):
        return False
    if [d % val.dim() for d in dims] != [val.dim() - 1]:
        return False  # a multi-dim or non-last-dim FFT: not lowered
    stack, seen = [fft], set()
    while stack:  # every transitive use of the complex value is a shape op or a sink
        n = stack.pop()
        for user in n.users:
            name = op_name(user.target) if user.op == "call_function" else ""
            if name in _SHAPE_OPS and user.args[0] is n and user not in seen:
                seen.add(user)
                stack.append(user)
            elif name not in _SINKS:
                return False
    return True


def _lower(gm: "torch.fx.GraphModule", fft: "torch.fx.Node") -> None:
    import torch

    aten = torch.ops.aten
    x, _, norm, onesided = fft.args
    val = x.meta["val"]
    n = int(val.shape[-1])
    k = n // 2 + 1 if onesided else n
    rows = math.prod(int(s) for s in val.shape[:-1])
    # exact integer phase first: (k * n) mod N keeps cos/sin accurate for large N
    phase = torch.outer(torch.arange(n, dtype=torch.int64), torch.arange(k, dtype=torch.int64)) % n
    angle = 2 * math.pi * phase.to(torch.float64) / n
    scale = (1.0, 1.0 / math.sqrt(n), 1.0 / n)[norm]
    basis = (torch.cat([torch.cos(angle), -torch.sin(angle)], dim=1) * scale).to(val.dtype)
    out_shape = [int(s) for s in val.shape[:-1]] + [k]
    g = gm.graph
    with g.inserting_before(fft):
        w = add_constant(gm, f"{fft.name}_dft_basis", basis.contiguous())
        flat = call_function(g, aten.view.default, (x, [rows, n]))
        both = call_function(g, aten.mm.default, (flat, w))
        halves = []
        for start in (0, k):
            part = call_function(g, aten.slice.Tensor, (both, 1, start, start + k))
            halves.append(call_function(g, aten.view.default, (part, out_shape)))
    _replace(gm, fft, (halves[0], halves[1]))


def _replace(gm: "torch.fx.GraphModule", node: "torch.fx.Node", pair: tuple["torch.fx.Node", "torch.fx.Node"]) -> None:
    """Replaces the uses of complex `node` by ops on its halves `pair`, then erases it."""
    import torch

    aten = torch.ops.aten
    g = gm.graph
    for user in list(node.users):
        name = op_name(user.target)
        re, im = pair
        with g.inserting_before(user):
            if name in _SHAPE_OPS:
                rest = tuple(user.args[1:])
                new_pair = (call_function(g, user.target, (re, *rest), dict(user.kwargs)),
                            call_function(g, user.target, (im, *rest), dict(user.kwargs)))
                _replace(gm, user, new_pair)
                continue
            if name == "aten::abs":
                re2, im2 = call_function(g, aten.mul.Tensor, (re, re)), call_function(g, aten.mul.Tensor, (im, im))
                new = call_function(g, aten.sqrt.default, (call_function(g, aten.add.Tensor, (re2, im2)),))
            elif name == "aten::view_as_real":
                new = call_function(g, aten.cat.default, ([call_function(g, aten.unsqueeze.default, (re, -1)),
                                                    call_function(g, aten.unsqueeze.default, (im, -1))], -1))
            else:  # real, imag
                new = re if name == "aten::real" else im
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in user.meta:
                new.meta.setdefault(key, user.meta[key])
        user.replace_all_uses_with(new)
        g.erase_node(user)
    g.erase_node(node)


__all__ = ["lower_fft"]
