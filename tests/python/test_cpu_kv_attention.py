"""The cpu backend's Attention over keys and values laid out as a KV cache
holds them ([batch, s, kv_heads, d], or the first s rows of [batch,
kv_heads, rows, d]: tern.llm.decoder's cache): read in place, without
transposes or slices, on every ISA; few query rows (a generated
token's step) through the attn_dots / attn_wsum microkernels, more through
the packed path. Oracle: eager PyTorch on the same inputs."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import tern
from compare import assert_close
from conftest import built_tool
from test_cpu_backend import ISAS, load_on_isa


class CacheAttention(nn.Module):
    """Attention over keys and values laid out [batch, s, kv_heads, d], as a
    KV cache holds them (the Attention op reads them in place: kv_seq_major),
    grouped-query (6 heads over 2), with an additive mask."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2),
                                                                attn_mask=mask, enable_gqa=True)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("rows", [1, 3, 9], ids=["1-row", "3-rows", "9-rows"])  # 9 x 3 heads a kv head: packed
def test_attention_over_a_kv_cache_layout(isa: str, rows: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    s = 37  # keys: not a multiple of 16
    q, k, v = torch.randn(1, 6, rows, 20), torch.randn(1, s, 2, 20), torch.randn(1, s, 2, 24)
    mask = torch.where(torch.rand(rows, s) < 0.2, float("-inf"), 0.0)
    mask[:, 0] = 0.0  # every row sees a key
    path = tmp_path / "m.tern"
    program = tern.export(CacheAttention(), (q, k, v, mask))
    assert "aten::scaled_dot_product_attention" not in dict(program.op_counts)
    program.save(path)
    m = load_on_isa(path, isa, monkeypatch)
    with torch.no_grad():
        assert_close(m(q, k, v, mask)[0], CacheAttention()(q, k, v, mask), what=f"TERN_CPU_ISA={isa}")
    inputs = []
    for i, t in enumerate((q, k, v, mask)):
        np.save(tmp_path / f"{i}.npy", t.numpy())
        inputs += ["--input", str(tmp_path / f"{i}.npy")]
    profile = subprocess.run([built_tool("tern-run"), str(path), *inputs, "--profile", "--iterations", "1"], capture_output=True,
                             text=True, check=True).stdout
    assert "cpu Attention" in profile and "Transpose" not in profile, profile  # k and v read in place


class CacheRowsAttention(nn.Module):
    """Attention over the first s positions of caches laid [batch,
    kv_heads, rows, d] (tern.llm.decoder's): the Attention op reads the
    slices in place (kv_rows), grouped-query (6 heads over 2)."""

    def __init__(self, s: int) -> None:
        super().__init__()
        self.s = s

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k[:, :, :self.s], v[:, :, :self.s],
                                                                attn_mask=mask, enable_gqa=True)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("rows", [1, 3, 9], ids=["1-row", "3-rows", "9-rows"])  # 9 x 3 heads a kv head: packed
def test_attention_over_the_first_positions_of_a_cache(isa: str, rows: int, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(1)
    s, cache = 37, 45  # keys read: not a multiple of 16; the rows past them must not be read
    q = torch.randn(1, 6, rows, 20)
    k, v = torch.randn(1, 2, cache, 20), torch.randn(1, 2, cache, 24)
    k[:, :, s:], v[:, :, s:] = 1e4, -1e4  # a read past s would show
    mask = torch.where(torch.rand(rows, s) < 0.2, float("-inf"), 0.0)
    mask[:, 0] = 0.0
    model = CacheRowsAttention(s)
    path = tmp_path / "m.tern"
    program = tern.export(model, (q, k, v, mask))
    assert "aten::scaled_dot_product_attention" not in dict(program.op_counts)
    program.save(path)
    m = load_on_isa(path, isa, monkeypatch)
    with torch.no_grad():
        assert_close(m(q, k, v, mask)[0], model(q, k, v, mask), what=f"TERN_CPU_ISA={isa}")
    inputs = []
    for i, t in enumerate((q, k, v, mask)):
        np.save(tmp_path / f"{i}.npy", t.numpy())
        inputs += ["--input", str(tmp_path / f"{i}.npy")]
    profile = subprocess.run([built_tool("tern-run"), str(path), *inputs, "--profile", "--iterations", "1"],
                             capture_output=True, text=True, check=True).stdout
    assert "cpu Attention" in profile and "Slice" not in profile and "slice" not in profile, profile  # in place
