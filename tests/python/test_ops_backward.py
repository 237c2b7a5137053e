"""The core ATen ops that are gradients (of pooling, embedding, layer and
group norm, convolution), called directly in a model, against the same calls
in eager PyTorch; and against autograd, which computes the same gradients by
its own route.

The three-result gradients take an output_mask; a result it leaves out is
None, and its out in the file an empty placeholder (python/tern/emit.py).
Each of their tests exports one model calling the op once per mask (all
eight), so every combination runs in one file."""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from op_testing import Fn

aten = torch.ops.aten


def _run(fn: Callable[..., Any], args: tuple[torch.Tensor, ...], op: str, tmp_path: Path) -> np.ndarray:
    program = tern.export(Fn(fn), args, partitioners=())
    assert op in dict(program.op_counts), program.op_counts
    program.save(tmp_path / "m.tern")
    (out,) = tern.load(str(tmp_path / "m.tern"))(*args)
    with torch.no_grad():
        ref = fn(*args)
    assert_close(out, ref, rtol=1e-5)
    return out


@pytest.mark.parametrize("ceil_mode,count_include_pad,divisor", [(False, True, None), (True, False, None), (False, True, 3)])
def test_avg_pool2d_backward(ceil_mode: bool, count_include_pad: bool, divisor: int | None, tmp_path: Path) -> None:
    x = torch.randn(2, 3, 9, 8, requires_grad=True)
    y = nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode, count_include_pad, divisor)
    gy = torch.randn_like(y)
    out = _run(lambda g, s: aten.avg_pool2d_backward(g, s, [3, 3], [2, 2], [1, 1], ceil_mode, count_include_pad, divisor),
               (gy, x.detach()), "aten::avg_pool2d_backward", tmp_path)
    (gx,) = torch.autograd.grad(y, x, gy)
    assert_close(out, gx, rtol=1e-5, what="against autograd")


def test_max_pool2d_with_indices_backward(tmp_path: Path) -> None:
    x = torch.randn(2, 3, 10, 9, requires_grad=True)
    y, idx = nn.functional.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True, return_indices=True)
    gy = torch.randn_like(y)
    out = _run(lambda g, s, i: aten.max_pool2d_with_indices_backward(g, s, [3, 3], [2, 2], [1, 1], [1, 1], True, i),
               (gy, x.detach(), idx), "aten::max_pool2d_with_indices_backward", tmp_path)
    (gx,) = torch.autograd.grad(y, x, gy)
    assert_close(out, gx, rtol=1e-5, what="against autograd")


@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 5)])
def test_adaptive_avg_pool2d_backward(size: tuple[int, int], tmp_path: Path) -> None:
    x = torch.randn(2, 3, 7, 10, requires_grad=True)
    y = nn.functional.adaptive_avg_pool2d(x, size)
    gy = torch.randn_like(y)
    out = _run(lambda g, s: aten._adaptive_avg_pool2d_backward(g, s), (gy, x.detach()),
               "aten::_adaptive_avg_pool2d_backward", tmp_path)
    (gx,) = torch.autograd.grad(y, x, gy)
    assert_close(out, gx, rtol=1e-5, what="against autograd")


@pytest.mark.parametrize("padding_idx,scale", [(-1, False), (2, False), (-1, True)])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=["int64", "int32"])
def test_embedding_dense_backward(padding_idx: int, scale: bool, dtype: torch.dtype, tmp_path: Path) -> None:
    idx = torch.tensor([[0, 2, 2, 5], [5, 5, 1, 0]], dtype=dtype)
    gy = torch.randn(2, 4, 3)
    out = _run(lambda g, i: aten.embedding_dense_backward(g, i, 7, padding_idx, scale), (gy, idx),
               "aten::embedding_dense_backward", tmp_path)
    w = torch.randn(7, 3, requires_grad=True)
    y = nn.functional.embedding(idx.long(), w, padding_idx=None if padding_idx < 0 else padding_idx,
                                scale_grad_by_freq=scale)
    (gw,) = torch.autograd.grad(y, w, gy)
    assert_close(out, gw, rtol=1e-5, what="against autograd")


# The three-result gradients.

MASKS = [list(m) for m in itertools.product([False, True], repeat=3)]
# relative to each result's own largest magnitude (compare.py); the 16-bit types as test_half_precision.py
TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.float16: 8 * 2.0**-10, torch.bfloat16: 8 * 2.0**-7}
FLOATS = [torch.float32, torch.float64]


def _id(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def _each_mask(call: Callable[..., Any], present: tuple[bool, bool, bool] = (True, True, True)) -> tuple[
        Callable[..., tuple[torch.Tensor, ...]], Callable[..., tuple[torch.Tensor, ...]], list[int]]:
    """For `call(mask, *inputs)`: the model's function (the op once per output
    mask, the tensor results in order), the eager reference (the same with
    each mask limited to the results that exist: eager refuses a layer-norm
    grad_weight without weight, where the export's meta gives None), and which
    gradient (0 input, 1 weight, 2 bias) each result is."""
    def model(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(o for m in MASKS for o in call(m, *inputs) if o is not None)

    def eager(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outs = []
        for m in MASKS:
            m = [a and b for a, b in zip(m, present)]
            # by the mask, not by None: for a float32 1-d convolution, eager also returns a
            # [oc, c, 1, k] grad_weight it was not asked for when only grad_bias is
            outs += [o for o, wanted in zip(call(m, *inputs), m) if wanted]
        return tuple(outs)

    labels = [i for m in MASKS for i in range(3) if m[i] and present[i]]
    return model, eager, labels


def _run_masks(call: Callable[..., Any], inputs: tuple[torch.Tensor, ...], op: str, tmp_path: Path,
               present: tuple[bool, bool, bool] = (True, True, True)) -> tuple[list[np.ndarray], list[int]]:
    """Exports and runs the op under every mask; checks each result against
    eager (same dtype) and returns the results and their labels."""
    model, eager, labels = _each_mask(call, present)
    program = tern.export(Fn(model), inputs, partitioners=())
    assert op in dict(program.op_counts), program.op_counts
    program.save(tmp_path / "m.tern")
    outs = tern.load(str(tmp_path / "m.tern"))(*inputs)
    with torch.no_grad():
        refs = eager(*inputs)
    assert len(outs) == len(refs) == len(labels)
    assert len(refs) == len(labels)
    assert_outputs_close(outs, refs, rtol=TOL[inputs[0].dtype])
    return outs, labels


def _against_autograd(outs: list[np.ndarray], labels: list[int], grads: list[torch.Tensor | None]) -> None:
    dtype = next(g for g in grads if g is not None).dtype
    for got, i in zip(outs, labels):
        if grads[i] is not None:
            assert_close(got, grads[i], rtol=TOL[dtype], what=f"gradient {i} against autograd")


def _layer_norm_case(sizes: tuple[int, ...], nd: int, weight: bool, bias: bool, dtype: torch.dtype) -> tuple[Any, ...]:
    torch.manual_seed(0)
    x = torch.randn(*sizes, dtype=dtype) * 2 + 0.5
    shape = list(sizes[-nd:])
    w = torch.randn(shape, dtype=dtype) if weight else None
    b = torch.randn(shape, dtype=dtype) if bias else None
    _, mean, rstd = aten.native_layer_norm(x, shape, w, b, 1e-5)
    gy = torch.randn(*sizes, dtype=dtype)
    return x, shape, w, b, mean, rstd, gy


def _layer_norm_call(shape: list[int], weight: bool, bias: bool) -> Callable[..., Any]:
    def call(mask: list[bool], gy: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
             *wb: torch.Tensor) -> Any:
        w = wb[0] if weight else None
        b = wb[-1] if bias else None
        return aten.native_layer_norm_backward(gy, x, shape, mean, rstd, w, b, mask)
    return call


@pytest.mark.parametrize("dtype", FLOATS, ids=_id)
@pytest.mark.parametrize("weight,bias", [(True, True), (False, False), (True, False), (False, True)])
@pytest.mark.parametrize("sizes,nd", [((2, 3, 8), 1), ((3, 4, 5), 2), ((5, 7), 1)])
def test_native_layer_norm_backward(sizes: tuple[int, ...], nd: int, weight: bool, bias: bool, dtype: torch.dtype,
                                    tmp_path: Path) -> None:
    x, shape, w, b, mean, rstd, gy = _layer_norm_case(sizes, nd, weight, bias, dtype)
    inputs = (gy, x, mean, rstd, *[t for t in (w, b) if t is not None])
    outs, labels = _run_masks(_layer_norm_call(shape, weight, bias), inputs, "aten::native_layer_norm_backward",
                              tmp_path, (True, weight, bias))
    leaves = [t.clone().requires_grad_() if t is not None else None for t in (x, w, b)]
    y = nn.functional.layer_norm(leaves[0], shape, leaves[1], leaves[2], 1e-5)
    want = [t for t in leaves if t is not None]
    grads = iter(torch.autograd.grad(y, want, gy))
    _against_autograd(outs, labels, [next(grads) if t is not None else None for t in leaves])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
def test_native_layer_norm_backward_half(dtype: torch.dtype, tmp_path: Path) -> None:
    x, shape, w, b, mean, rstd, gy = _layer_norm_case((3, 4, 16), 1, True, True, dtype)
    _run_masks(_layer_norm_call(shape, True, True), (gy, x, mean, rstd, w, b), "aten::native_layer_norm_backward",
               tmp_path)


def _group_norm_case(sizes: tuple[int, ...], groups: int, weight: bool, dtype: torch.dtype) -> tuple[Any, ...]:
    torch.manual_seed(0)
    n, c = sizes[0], sizes[1]
    hxw = int(np.prod(sizes[2:]))
    x = torch.randn(*sizes, dtype=dtype) * 2 - 0.5
    w = torch.randn(c, dtype=dtype) if weight else None
    _, mean, rstd = aten.native_group_norm(x, w, None, n, c, hxw, groups, 1e-5)
    gy = torch.randn(*sizes, dtype=dtype)

    def call(mask: list[bool], gy: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
             *w: torch.Tensor) -> Any:
        return aten.native_group_norm_backward(gy, x, mean, rstd, w[0] if w else None, n, c, hxw, groups, mask)
    return call, (gy, x, mean, rstd, *([w] if weight else [])), w


@pytest.mark.parametrize("dtype", FLOATS, ids=_id)
@pytest.mark.parametrize("weight", [True, False], ids=["weight", "no_weight"])
@pytest.mark.parametrize("sizes,groups", [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4, 3, 2, 2), 4), ((1, 6, 7), 1),
                                          ((2, 6, 4), 6)])
def test_native_group_norm_backward(sizes: tuple[int, ...], groups: int, weight: bool, dtype: torch.dtype,
                                    tmp_path: Path) -> None:
    call, inputs, w = _group_norm_case(sizes, groups, weight, dtype)
    outs, labels = _run_masks(call, inputs, "aten::native_group_norm_backward", tmp_path)
    gy, x = inputs[0], inputs[1]
    # autograd through the forward, with a bias so that its gradient exists;
    # without a weight, grad_weight (which the op still returns) has no autograd twin
    leaves = [x.clone().requires_grad_(), w.clone().requires_grad_() if weight else None,
              torch.randn(sizes[1], dtype=dtype, requires_grad=True)]
    y = nn.functional.group_norm(leaves[0], groups, leaves[1], leaves[2], 1e-5)
    want = [t for t in leaves if t is not None]
    grads = iter(torch.autograd.grad(y, want, gy))
    _against_autograd(outs, labels, [next(grads) if t is not None else None for t in leaves])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
def test_native_group_norm_backward_half(dtype: torch.dtype, tmp_path: Path) -> None:
    call, inputs, _ = _group_norm_case((2, 6, 4, 3), 3, True, dtype)
    _run_masks(call, inputs, "aten::native_group_norm_backward", tmp_path)


# (input sizes, weight sizes, stride, padding, dilation, transposed, output_padding, groups)
CONV_CASES = {
    "1d_stride_pad_groups": ((2, 4, 9), (6, 2, 3), [2], [1], [1], False, [0], 2),
    "1d_dilation": ((2, 3, 11), (5, 3, 3), [1], [0], [2], False, [0], 1),
    "2d_mixed": ((2, 3, 8, 7), (4, 3, 3, 2), [2, 1], [1, 0], [1, 2], False, [0, 0], 1),
    "2d_depthwise": ((1, 4, 6, 6), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 4),
    "2d_stride_beyond_kernel": ((2, 2, 9, 9), (3, 2, 2, 2), [3, 3], [0, 1], [1, 1], False, [0, 0], 1),
    "3d_groups": ((2, 4, 5, 6, 4), (6, 2, 2, 3, 2), [1, 2, 1], [1, 1, 0], [2, 1, 1], False, [0, 0, 0], 2),
    "1d_transposed": ((2, 4, 5), (4, 3, 3), [2], [1], [1], True, [1], 1),
    "2d_transposed_groups": ((2, 4, 4, 5), (4, 2, 3, 2), [2, 3], [1, 0], [1, 1], True, [1, 2], 2),
    "3d_transposed": ((1, 2, 3, 4, 3), (2, 3, 2, 2, 3), [2, 2, 1], [0, 1, 1], [1, 2, 1], True, [1, 0, 0], 1),
}


def _conv_case(case: tuple[Any, ...], dtype: torch.dtype) -> tuple[Any, ...]:
    xs, ws, stride, padding, dilation, transposed, output_padding, groups = case
    torch.manual_seed(0)
    x = torch.randn(*xs, dtype=dtype)
    w = torch.randn(*ws, dtype=dtype)
    oc = ws[1] * groups if transposed else ws[0]
    b = torch.randn(oc, dtype=dtype)
    y = aten.convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    gy = torch.randn_like(y)

    def call(mask: list[bool], gy: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> Any:
        return aten.convolution_backward(gy, x, w, [oc], stride, padding, dilation, transposed, output_padding,
                                         groups, mask)
    return call, (gy, x, w), b


@pytest.mark.parametrize("dtype", FLOATS, ids=_id)
@pytest.mark.parametrize("name", list(CONV_CASES))
def test_convolution_backward(name: str, dtype: torch.dtype, tmp_path: Path) -> None:
    call, inputs, b = _conv_case(CONV_CASES[name], dtype)
    outs, labels = _run_masks(call, inputs, "aten::convolution_backward", tmp_path)
    _, _, stride, padding, dilation, transposed, output_padding, groups = CONV_CASES[name]
    gy, x, w = inputs
    leaves = [t.clone().requires_grad_() for t in (x, w, b)]
    nd = x.dim() - 2
    if transposed:
        conv = getattr(nn.functional, f"conv_transpose{nd}d")
        y = conv(*leaves, stride, padding, output_padding, groups, dilation)
    else:
        y = getattr(nn.functional, f"conv{nd}d")(*leaves, stride, padding, dilation, groups)
    _against_autograd(outs, labels, list(torch.autograd.grad(y, leaves, gy)))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("name", ["2d_mixed", "2d_transposed_groups"])
def test_convolution_backward_half(name: str, dtype: torch.dtype, tmp_path: Path) -> None:
    call, inputs, _ = _conv_case(CONV_CASES[name], dtype)
    _run_masks(call, inputs, "aten::convolution_backward", tmp_path)


def test_convolution_backward_without_bias_sizes(tmp_path: Path) -> None:
    """bias_sizes None (a convolution without bias): input and weight gradients only."""
    x, w = torch.randn(2, 3, 7, 6), torch.randn(4, 3, 3, 3)
    gy = torch.randn(2, 4, 4, 2)
    fn = lambda g, x, w: aten.convolution_backward(g, x, w, None, [2, 2], [1, 0], [1, 1], False, [0, 0], 1,
                                                   [True, True, False])[:2]
    program = tern.export(Fn(fn), (gy, x, w), partitioners=())
    program.save(tmp_path / "m.tern")
    outs = tern.load(str(tmp_path / "m.tern"))(gy, x, w)
    assert_outputs_close(outs, fn(gy, x, w))


def test_convolution_backward_grad_output_of_other_size_refused_at_export() -> None:
    """The kernel's prepare checks that grad_output has the forward's output size."""
    x, w = torch.randn(2, 3, 7, 6), torch.randn(4, 3, 3, 3)
    gy = torch.randn(2, 4, 4, 3)  # the forward gives [2, 4, 4, 2]
    fn = lambda g, x, w: aten.convolution_backward(g, x, w, None, [2, 2], [1, 0], [1, 1], False, [0, 0], 1,
                                                   [True, True, False])[:2]
    with pytest.raises(tern.ExportError, match="spatial dim 1: grad_output has 3 positions, the convolution of "
                                               "input 6 gives 2"):
        tern.export(Fn(fn), (gy, x, w), partitioners=())
