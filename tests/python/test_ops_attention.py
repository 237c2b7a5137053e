"""Parity with PyTorch eager for aten::scaled_dot_product_attention: the
exporter keeps F.scaled_dot_product_attention (and what nn.MultiheadAttention
and nn.TransformerEncoderLayer call) as one op, because the portable library
has a kernel for it (kernels/portable/op_scaled_dot_product_attention.cpp),
instead of decomposing it into matmuls and a softmax.

Each case is exported on the kernels alone (partitioners=()), checked to hold
exactly one aten::scaled_dot_product_attention, saved, loaded and run with 1,
2 and 3 threads (bit-identical), and compared with eager.

Tolerance (tests/python/compare.py): within 1e-4 of the output's own largest
magnitude plus 1e-4 of each element; NaN and infinities in the same places.

Run: .venv/bin/python -m pytest -q tests/python/test_ops_attention.py
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tern
from compare import assert_close
from op_testing import Fn

SDPA = "aten::scaled_dot_product_attention"


def _export_and_compare(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path) -> dict[str, int]:
    """Exports `model` on the kernels alone, runs it with 1, 2 and 3 threads,
    compares with eager; returns the file's op counts."""
    model.eval()
    with torch.no_grad():
        want = model(*args)
    program = tern.export(model, args, partitioners=())
    ops = dict(program.op_counts)
    assert ops.get(SDPA) == 1, f"expected one {SDPA}, got {ops}"
    assert "aten::_softmax" not in ops, f"attention was decomposed: {ops}"
    path = tmp_path / "model.tern"
    program.save(path)
    (got,) = tern.load(str(path), threads=1)(*args)
    for threads in (2, 3):
        (other,) = tern.load(str(path), threads=threads)(*args)
        np.testing.assert_array_equal(other, got, err_msg=f"{threads} threads differ from 1")
    assert_close(got, want)
    return ops


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def _qkv(q: tuple[int, ...], k: tuple[int, ...], ev: int) -> tuple[torch.Tensor, ...]:
    return torch.randn(*q), torch.randn(*k), torch.randn(*k[:-1], ev)


def _bool_mask(l: int, s: int) -> torch.Tensor:
    m = torch.rand(l, s) > 0.3
    m[1] = False  # a query that sees no key
    return m


# name -> (function of the inputs, inputs)
CASES: dict[str, Callable[[], tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]]] = {
    "no_mask": lambda: (F.scaled_dot_product_attention, _qkv((2, 4, 5, 8), (2, 4, 7, 8), 6)),
    "rank3_odd_sizes": lambda: (F.scaled_dot_product_attention, _qkv((3, 17, 33), (3, 15, 33), 5)),
    "float_mask_over_heads": lambda: (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        (*_qkv((2, 4, 5, 8), (2, 4, 7, 8), 6), torch.randn(2, 1, 5, 7)),
    ),
    "float_mask_2d": lambda: (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        (*_qkv((2, 4, 5, 8), (2, 4, 7, 8), 6), torch.randn(5, 7)),
    ),
    "bool_mask_with_fully_masked_row": lambda: (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        (*_qkv((2, 4, 5, 8), (2, 4, 7, 8), 6), _bool_mask(5, 7)),
    ),
    "causal_fewer_queries": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        _qkv((1, 2, 4, 16), (1, 2, 9, 16), 16),
    ),
    "causal_more_queries": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        _qkv((1, 2, 20, 16), (1, 2, 9, 16), 16),
    ),
    "scale": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
        _qkv((2, 4, 5, 8), (2, 4, 7, 8), 8),
    ),
    "gqa": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        _qkv((2, 8, 5, 8), (2, 2, 7, 8), 8),
    ),
    "gqa_causal": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        _qkv((1, 6, 9, 8), (1, 3, 9, 8), 4),
    ),
    "key_value_batch_broadcast": lambda: (F.scaled_dot_product_attention, _qkv((2, 4, 5, 8), (1, 4, 7, 8), 6)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sdpa_exports_as_one_op_and_matches_eager(name: str, tmp_path: Path) -> None:
    fn, args = CASES[name]()
    ops = _export_and_compare(Fn(fn), args, tmp_path)
    assert ops == {SDPA: 1}  # the function's inputs go straight to the one op


def test_sdpa_fully_masked_row_is_zero_as_in_eager(tmp_path: Path) -> None:
    q, k, v = _qkv((1, 2, 3, 4), (1, 2, 5, 4), 4)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    model = Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
    eager = model(q, k, v, mask)
    assert torch.equal(eager[:, :, 1], torch.zeros(1, 2, 4))  # torch's answer, not NaN
    path = tmp_path / "model.tern"
    tern.export(model, (q, k, v, mask), partitioners=()).save(path)
    (got,) = tern.load(str(path))(q, k, v, mask)
    assert_close(got[:, :, 1], np.zeros((1, 2, 4), np.float32), rtol=0.0, atol=0.0)
    assert_close(got, eager)


def test_sdpa_with_dropout_is_refused_at_export_naming_the_op() -> None:
    model = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1))
    args = _qkv((1, 2, 3, 4), (1, 2, 5, 4), 4)
    with pytest.raises(tern.ExportError, match=rf"{SDPA}.*dropout_p=0.1 is not supported: expected 0"):
        tern.export(model, args, partitioners=())


class SelfAttention(nn.Module):
    """nn.MultiheadAttention without the averaged weights (need_weights=False
    is what takes torch's SDPA path; the default need_weights=True computes
    the weights with bmm + softmax instead)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.attn(x, x, x, need_weights=False, attn_mask=mask)[0]


def test_multihead_attention_exports_one_sdpa_and_matches_eager(tmp_path: Path) -> None:
    _export_and_compare(SelfAttention(), (torch.randn(2, 5, 16),), tmp_path)


def test_multihead_attention_with_causal_float_mask_matches_eager(tmp_path: Path) -> None:
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    _export_and_compare(SelfAttention(), (torch.randn(2, 5, 16), mask), tmp_path)


class CausalEncoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.layer(x, src_mask=mask, is_causal=True)


@pytest.mark.parametrize("causal", [False, True])
def test_transformer_encoder_layer_exports_one_sdpa_and_matches_eager(causal: bool, tmp_path: Path) -> None:
    layer: nn.Module = (
        CausalEncoderLayer()
        if causal
        else nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    )
    _export_and_compare(layer, (torch.randn(2, 7, 32),), tmp_path)


def test_exporter_keeps_sdpa_because_the_runtime_registers_it() -> None:
    """export.py keeps an op out of the decomposition table when the runtime
    has a kernel for it: without the op in supported_ops, SDPA decomposes."""
    from tern.export import lower_to_graph
    from tern.ops import op_name, supported_ops

    assert SDPA in supported_ops()
    model = Fn(F.scaled_dot_product_attention)
    args: Any = _qkv((1, 2, 3, 4), (1, 2, 5, 4), 4)
    kept = {op_name(n.target) for n in lower_to_graph(model, args, supported_ops()).graph.nodes if n.op == "call_function"}
    assert SDPA in kept
    without = supported_ops() - {SDPA}
    gone = {op_name(n.target) for n in lower_to_graph(model, args, without).graph.nodes if n.op == "call_function"}
    assert SDPA not in gone and "aten::_softmax" in gone
