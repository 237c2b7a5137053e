"""The cpu backend's BlockLinear (backends/cpu/ops/blocklinear.cpp): linear
layers over GGUF weights, F.linear(x, tern::gguf_dequantize(rows, fmt, k))
as tern.llm writes them, claimed as one op that reads the rows in place
and quantizes x to int8 blocks of 32 at each call (CpuOptions.block_linear,
on by default); with the option off, the weight is dequantized by the
portable kernel and the float linear layer runs as before.

Oracle: eager PyTorch. With BlockLinear the outputs differ from eager by x's
quantization: each activation moves by at most half a step of its block,
1/254 of the block's largest magnitude (0.4 %), and these errors, of either
sign, add up over k inputs like a random walk: about 1 % of the output's
scale after two layers. The tests allow 3 %, relative to each output's
largest magnitude (compare.py's default atol), which a broken kernel (a
nibble order swapped, a scale missed) passes far beyond.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

import tern
from compare import assert_close
from tern.backends.cpu import CpuOptions, CpuPartitioner
from tern.inspect import read_program
from tern.llm.blocks import FORMATS, gguf_dequantize_op, row_bytes
from test_cpu_backend import _payload_ops, _payloads, load_on_isa

BLOCK_RTOL = 0.03  # the error of x's quantization to int8 blocks (module docstring)


def gguf_rows(fmt: str, n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """n random rows of k elements in `fmt`, as a GGUF file holds them:
    scales about what a trained layer's are, some blocks all zero."""
    f = FORMATS[fmt]
    rows = torch.randint(0, 256, (n, row_bytes(f, k)), dtype=torch.uint8, generator=gen)
    blocks = rows.view(n, k // 32, f.bytes)
    d = (torch.rand(n, k // 32, generator=gen) * 0.02 + 0.002) * torch.where(
        torch.rand(n, k // 32, generator=gen) < 0.5, -1.0, 1.0)
    d[0, 0] = 0.0  # a zero block
    blocks[..., 0:2] = d.half().view(torch.uint8).view(n, k // 32, 2)
    if fmt == "Q4_1":
        m = -torch.rand(n, k // 32, generator=gen) * 0.15
        blocks[..., 2:4] = m.half().view(torch.uint8).view(n, k // 32, 2)
    return rows


class GGUFMlp(nn.Module):
    """Two linear layers over GGUF weights as tern.llm's Llama has them: the
    first without bias, an activation between, the second with a bias and a
    residual add after it; k of 64 and 96 (2 and 3 blocks a row)."""

    def __init__(self, fmt: str, seed: int = 0, act: bool = True) -> None:
        super().__init__()
        self.act = act
        gen = torch.Generator().manual_seed(seed)
        self.code = FORMATS[fmt].code
        self.register_buffer("up", gguf_rows(fmt, 96, 64, gen))
        self.register_buffer("down", gguf_rows(fmt, 64, 96, gen))
        self.bias = nn.Parameter(torch.randn(64, generator=gen) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, gguf_dequantize_op()(self.up, self.code, 64))
        h = F.silu(h) if self.act else h
        return x + F.linear(h, gguf_dequantize_op()(self.down, self.code, 96), self.bias)


def _export(model: nn.Module, args: tuple, path: Path, options: CpuOptions | None = None,
            dynamic: Any = None) -> CpuPartitioner:
    cpu = CpuPartitioner(options=options)
    tern.export(model, args, dynamic_shapes=dynamic, partitioners=[cpu]).save(path)
    return cpu


def _portable(path: Path) -> list[str]:
    return read_program(path.read_bytes())["methods"][0]["operators"]


@pytest.mark.parametrize("fmt", ["Q4_0", "Q4_1", "Q8_0"])
@pytest.mark.parametrize("batch", [1, 3], ids=["7-rows", "21-rows"])  # 21: tiles of 16 rows where the ISA has them
def test_gguf_linear_layers_run_as_block_linear_ops_near_eager(fmt: str, batch: int, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, x = GGUFMlp(fmt).eval(), torch.randn(batch, 7, 64)
    path = tmp_path / "mlp.tern"
    cpu = _export(model, (x,), path)
    assert _portable(path) == [], cpu.report()
    (ops,) = _payload_ops(path)
    blocks = [nodes for kind, nodes in ops if kind == "BlockLinear"]
    assert len(blocks) == 2 and all("gguf_dequantize" in n for n in blocks), ops
    assert [version for version, _ in _payloads(path)] == [6]  # BlockLinear came with payload version 6
    with torch.no_grad():
        want = model(x)
    outs = [tern.load(str(path), threads=t)(x)[0] for t in (1, 2, 3)]
    assert_close(outs[0], want, rtol=BLOCK_RTOL, what=f"{fmt} BlockLinear against eager")
    for t, out in zip((2, 3), outs[1:]):  # each output's bits do not depend on the threads
        assert_close(out, outs[0], rtol=0.0, atol=0.0, what=f"{t} threads against 1")


@pytest.mark.parametrize("fmt", ["Q4_0", "Q4_1", "Q8_0"])
def test_block_linear_off_keeps_the_portable_dequantize_and_eagers_results(fmt: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, x = GGUFMlp(fmt).eval(), torch.randn(1, 7, 64)
    path = tmp_path / "mlp.tern"
    cpu = _export(model, (x,), path, CpuOptions(block_linear=False))
    assert "tern::gguf_dequantize" in _portable(path)
    assert any("block_linear=False" in why for _, _, why in cpu.refused), cpu.report()
    assert not any(kind == "BlockLinear" for ops in _payload_ops(path) for kind, _ in ops)
    with torch.no_grad():
        want = model(x)
    assert_close(tern.load(str(path))(x)[0], want, rtol=1e-5, what=f"{fmt} dequantized weights against eager")


@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512", "neon"])
def test_every_isa_gives_the_same_bits(isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels of every ISA follow one definition (ukernels/qb.h): the
    same bits as the scalar ones, for a decode step (m = 1) and a prompt
    (no activation between the layers: the float kernels of silu differ
    in the last bit from ISA to ISA)."""
    torch.manual_seed(0)
    model = GGUFMlp("Q4_1", act=False).eval()
    for m in (1, 9):
        x = torch.randn(1, m, 64)
        path = tmp_path / f"m{m}.tern"
        _export(model, (x,), path)
        got = load_on_isa(path, isa, monkeypatch)(x)[0]
        want = load_on_isa(path, "scalar", monkeypatch)(x)[0]
        assert_close(got, want, rtol=0.0, atol=0.0, what=f"TERN_CPU_ISA={isa} against scalar, m = {m}")


def test_a_dynamic_sequence_length_runs_on_block_linear(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = GGUFMlp("Q4_0").eval()
    path = tmp_path / "dyn.tern"
    cpu = _export(model, (torch.randn(1, 8, 64),), path, dynamic={"x": {1: Dim("seq", min=2, max=40)}})
    assert _portable(path) == [], cpu.report()
    module = tern.load(str(path), threads=2)
    for length in (40, 2, 17, 5, 40):
        x = torch.randn(1, length, 64)
        with torch.no_grad():
            want = model(x)
        assert_close(module(x)[0], want, rtol=BLOCK_RTOL, what=f"length {length}")


def test_a_corrupted_weight_size_is_refused_at_load(tmp_path: Path) -> None:
    """The weights value's sizes [n, row_bytes] changed in the payload (a
    file damaged or crafted): the load names the op and the failed check."""
    torch.manual_seed(0)
    model, x = GGUFMlp("Q8_0").eval(), torch.randn(1, 3, 64)
    path = tmp_path / "mlp.tern"
    _export(model, (x,), path)
    data = path.read_bytes()
    sizes = struct.pack("<qq", 96, row_bytes(FORMATS["Q8_0"], 64))  # the first layer's rows, [96, 68]
    assert data.count(sizes) == 1
    bad = tmp_path / "bad.tern"
    bad.write_bytes(data.replace(sizes, struct.pack("<qq", 96, 66)))
    with pytest.raises(ValueError, match=r"block-quantized linear \[3, 64\] -> 96 \(format 8\): its weights "
                                         r"\[96, 66\] or bias do not fit \(needs w->sizes\[1\] == row_bytes\)"):
        tern.load(str(bad))


def test_another_format_or_use_of_a_gguf_weight_stays_portable_and_says_why(tmp_path: Path) -> None:
    class Other(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            gen = torch.Generator().manual_seed(1)
            self.register_buffer("f16", torch.randn(32, 64, generator=gen).half().view(torch.uint8))
            self.register_buffer("q8", gguf_rows("Q8_0", 32, 64, gen))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            w = gguf_dequantize_op()(self.q8, 8, 64)
            return F.linear(x, gguf_dequantize_op()(self.f16, 1, 64)) + F.linear(x, w) * w.sum()

    model, x = Other().eval(), torch.randn(3, 64)
    cpu = _export(model, (x,), tmp_path / "other.tern")
    whys = {why for _, op, why in cpu.refused if op == "tern::gguf_dequantize"}
    assert whys == {"a GGUF weight of format 1 (BlockLinear reads Q4_0 (2), Q4_1 (3), Q8_0 (8))",
                    "a dequantized GGUF weight used other than as the weight of one linear layer"}, cpu.report()
    with torch.no_grad():
        assert_close(tern.load(str(tmp_path / "other.tern"))(x)[0], model(x), rtol=1e-5)


@pytest.mark.parametrize("fmt", ["Q4_0", "Q4_1", "Q8_0"])
def test_a_tiny_llama_from_a_gguf_file_runs_its_linear_layers_as_block_linear(fmt: str, tmp_path: Path) -> None:
    """tern.llm's module of a GGUF file (test_llm_gguf's tiny Llama: 2
    layers, d 64, tied embeddings but in Q4_0): its 15 linear layers become
    BlockLinear ops (the embedding's gather of rows stays portable, saying
    why); the file holds the embedding's rows once; the logits are eager's
    within the quantization's error, and with block_linear=False within
    float32 rounding, as before."""
    pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    from test_llm_gguf import _hf_llama, _write_gguf
    from tern.llm import from_gguf, read_gguf

    tied = fmt != "Q4_0"  # the output layer reads the embedding's rows
    _write_gguf(_hf_llama(tied), tmp_path / "tiny.gguf", fmt)
    model = from_gguf(tmp_path / "tiny.gguf").eval()
    ids = torch.tensor([[5, 17, 99, 3, 64, 1, 127, 40, 8, 33, 21]])
    with torch.no_grad():
        want = model(ids)
    path = tmp_path / "tiny.tern"
    cpu = _export(model, (ids,), path)
    kinds = [kind for ops in _payload_ops(path) for kind, _ in ops]
    assert kinds.count("BlockLinear") == 15, cpu.report()
    # the file holds each weight's rows once: tied, the output layer's BlockLinear reads the embedding's
    # rows as a delegate input (CpuPartitioner.shares_constant), not a copy in its payload
    embedding = read_gguf(tmp_path / "tiny.gguf").tensors["token_embd.weight"].rows.tobytes()
    assert path.read_bytes().count(embedding) == 1
    assert _portable(path).count("tern::gguf_dequantize") == 1  # the embedding's rows, gathered
    assert ("tern::gguf_dequantize", "GGUF rows that are not a constant [n, row_bytes]") in {
        (op, why) for _, op, why in cpu.refused}
    assert_close(tern.load(str(path))(ids)[0], want, rtol=BLOCK_RTOL, what=f"{fmt} logits, BlockLinear")
    plain = tmp_path / "plain.tern"
    _export(model, (ids,), plain, CpuOptions(block_linear=False))
    assert_close(tern.load(str(plain))(ids)[0], want, what=f"{fmt} logits, block_linear=False")
