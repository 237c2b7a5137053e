"""The core ATen ops that are gradients (of pooling and embedding), called
directly in a model, against the same calls in eager PyTorch; and against
autograd, which computes the same gradients by its own route."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
from torch import nn

import tern

aten = torch.ops.aten


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


def _run(fn: Callable[..., Any], args: tuple[torch.Tensor, ...], op: str, tmp_path: Path) -> np.ndarray:
    program = tern.export(Fn(fn), args, partitioners=())
    assert op in dict(program.op_counts), program.op_counts
    program.save(tmp_path / "m.tern")
    (out,) = tern.load(str(tmp_path / "m.tern"))(*args)
    with torch.no_grad():
        ref = fn(*args).numpy()
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    return out


@pytest.mark.parametrize("ceil_mode,count_include_pad,divisor", [(False, True, None), (True, False, None), (False, True, 3)])
def test_avg_pool2d_backward(ceil_mode: bool, count_include_pad: bool, divisor: int | None, tmp_path: Path) -> None:
    x = torch.randn(2, 3, 9, 8, requires_grad=True)
    y = nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode, count_include_pad, divisor)
    gy = torch.randn_like(y)
    out = _run(lambda g, s: aten.avg_pool2d_backward(g, s, [3, 3], [2, 2], [1, 1], ceil_mode, count_include_pad, divisor),
               (gy, x.detach()), "aten::avg_pool2d_backward", tmp_path)
    (gx,) = torch.autograd.grad(y, x, gy)
    np.testing.assert_allclose(out, gx.numpy(), rtol=1e-5, atol=1e-6)


def test_max_pool2d_with_indices_backward(tmp_path: Path) -> None:
    x = torch.randn(2, 3, 10, 9, requires_grad=True)
    y, idx = nn.functional.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True, return_indices=True)
    gy = torch.randn_like(y)
    out = _run(lambda g, s, i: aten.max_pool2d_with_indices_backward(g, s, [3, 3], [2, 2], [1, 1], [1, 1], True, i),
               (gy, x.detach(), idx), "aten::max_pool2d_with_indices_backward", tmp_path)
    (gx,) = torch.autograd.grad(y, x, gy)
    np.testing.assert_allclose(out, gx.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 5)])
def test_adaptive_avg_pool2d_backward(size: tuple[int, int], tmp_path: Path) -> None:
    x = torch.randn(2, 3, 7, 10, requires_grad=True)
    y = nn.functional.adaptive_avg_pool2d(x, size)
    gy = torch.randn_like(y)
    out = _run(lambda g, s: aten._adaptive_avg_pool2d_backward(g, s), (gy, x.detach()),
               "aten::_adaptive_avg_pool2d_backward", tmp_path)
    (gx,) = torch.autograd.grad(y, x, gy)
    np.testing.assert_allclose(out, gx.numpy(), rtol=1e-5, atol=1e-6)


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
    np.testing.assert_allclose(out, gw.numpy(), rtol=1e-5, atol=1e-6)
