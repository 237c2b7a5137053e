"""The cpu backend with dynamic shapes (issue 26, item 2): a method exported
with a torch.export.Dim keeps its text-model layers on the backend (linear
layers, matrix products, attention, elementwise ops, norms, softmax, views,
permutes, slices, concats), their sizes expressions the payload stores and
the runtime evaluates at each call's input sizes (payload version 5,
Backend::reshape). The oracle is eager PyTorch on the same inputs, at sizes
across the Dim's range, in an order that grows and shrinks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.export import Dim

import tern
from compare import assert_close
from tern.backends.cpu import CpuPartitioner
from tern.inspect import read_program

pytest.importorskip("transformers", reason="transformers not installed (requirements.txt)")
from hf_models import MODELS  # noqa: E402

LENGTHS = (32, 5, 17, 3, 32, 9, 9, 26)  # the upper bound first, then down, up, the same twice


def _methods(program: tern.Program) -> dict:
    return read_program(program.data)["methods"][0]


def _export(model: nn.Module, args: tuple, dynamic: dict, path: Path) -> tuple[tern.Program, CpuPartitioner]:
    cpu = CpuPartitioner()
    program = tern.export(model, args, dynamic_shapes=dynamic, partitioners=[cpu])
    program.save(path)
    return program, cpu


class Block(nn.Module):
    """One of each op the backend takes with dynamic sizes, along and across
    the dynamic dim: linear layers with their epilogues, a bias of the
    dynamic length broadcast over the batch, batched products of two
    activations (q k^T, then with v), softmax over the dynamic last dim,
    permutes, a negative select and a slice to the end of the dynamic dim,
    a split and concats along a static dim, and a concat along the dynamic
    dim after a static part."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n, s, _ = x.shape
        q, k, v = self.qkv(x).split(16, dim=-1)
        scores = torch.bmm(q, k.transpose(1, 2)) * 0.25 + pos  # pos [s, s]: over the batch
        mixed = torch.bmm(torch.softmax(scores, dim=-1), v)
        y = self.norm(torch.relu(self.out(mixed)) + x)
        halves = torch.cat([y[..., 8:], y[..., :8] * 2.0], dim=-1)
        last = halves[:, -1:, :]  # the last position: an offset that follows s
        tail = halves[:, 1:, :]  # from the second to the end
        return torch.cat([last, tail], dim=1), halves.permute(0, 2, 1)[:, :, -1]


def test_every_op_of_a_dynamic_block_runs_on_the_backend_at_every_size(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Block().eval()
    s = Dim("s", min=3, max=32)  # the tail [1:] has s - 1 rows: 2 at least (1 would specialize)
    args = (torch.randn(3, 12, 16), torch.randn(12, 12))
    program, cpu = _export(model, args, {"x": {1: s}, "pos": {0: s, 1: s}}, tmp_path / "block.tern")
    method = _methods(program)
    assert method["operators"] == [], cpu.report()  # nothing portable
    assert len(method["delegates"]) == 1, cpu.report()
    module = tern.load(str(tmp_path / "block.tern"))
    for length in LENGTHS:
        x, pos = torch.randn(3, length, 16), torch.randn(length, length)
        with torch.no_grad():
            want = model(x, pos)
        got = module(x, pos)
        for g, w in zip(got, want):
            assert_close(g, w, rtol=1e-4, what=f"length {length}")


@pytest.mark.parametrize("name", sorted(set(MODELS) - {"whisper_encoder"}))
def test_a_text_model_exported_with_a_dynamic_length_runs_on_the_backend_as_the_static_one(
        name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, (ids, mask) = MODELS[name]()
    model.eval()
    seq = Dim("seq", min=2, max=32)
    program, cpu = _export(model, (ids, mask), {"args": ({1: seq}, {1: seq})}, tmp_path / f"{name}.tern")
    # nothing left portable for its dynamic sizes: the embeddings, the mask's making and (Llama, Qwen2)
    # the rotary tables stay portable as in a static export (which folds some of them to constants)
    assert not [r for r in cpu.refused if "dynamic" in r[2]], cpu.report()
    portable = set(_methods(program)["operators"])
    assert not portable & {"aten::scaled_dot_product_attention", "aten::addmm", "aten::mm", "aten::bmm",
                           "aten::native_layer_norm", "aten::_softmax"}, cpu.report()
    module = tern.load(str(tmp_path / f"{name}.tern"))
    gen = torch.Generator().manual_seed(2)
    for length in LENGTHS:
        ids = torch.randint(0, 300, (2, length), generator=gen)
        mask = torch.ones(2, length, dtype=torch.long)
        mask[1, length - length // 3:] = 0  # padding
        with torch.no_grad():
            want = model(ids, mask)
        assert_close(module(ids, mask)[0], want, rtol=1e-4, what=f"length {length}")


def test_a_convolution_of_dynamic_sizes_stays_portable_and_says_why(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
    cpu = CpuPartitioner()
    tern.export(model, (torch.randn(1, 3, 16, 16),), dynamic_shapes=({3: Dim("w", min=4, max=32)},),
                partitioners=[cpu])
    assert "dynamic sizes in aten::convolution" in cpu.report()


def test_the_size_fields_the_exporter_writes_are_each_tables_long_fields_in_order() -> None:
    """payload.SIZE_FIELDS gives the order of an op's `exprs`, which the
    runtime reads slot by slot as the table's scalar long fields
    (backends/cpu/ops/): the two agree for every table that has `exprs`."""
    import re

    from tern.backends.cpu.payload import SIZE_FIELDS

    schema = (Path(__file__).resolve().parents[2] / "backends" / "cpu" / "schema" / "cpu.fbs").read_text()
    tables = dict(re.findall(r"\ntable (\w+) \{\n(.*?)\n\}", schema, flags=re.DOTALL))
    with_exprs = {name: body for name, body in tables.items() if re.search(r"^\s*exprs: \[int\];", body, re.M)}
    assert set(with_exprs) == set(SIZE_FIELDS)
    for name, body in with_exprs.items():
        longs = tuple(re.findall(r"^\s*(\w+): long\b", body, flags=re.M))
        assert SIZE_FIELDS[name] == longs, name


def test_an_index_computed_from_sizes_stays_portable_and_matches_eager(tmp_path: Path) -> None:
    class Last(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x[:, x.shape[1] - 1]) * 2.0  # select at s - 1: its index is no constant

    model = Last().eval()
    program, cpu = _export(model, (torch.randn(2, 7, 8),), {"x": {1: Dim("s", min=2, max=16)}}, tmp_path / "last.tern")
    assert "aten::select.int" in _methods(program)["operators"], cpu.report()
    assert "index computed from sizes" in cpu.report()
    module = tern.load(str(tmp_path / "last.tern"))
    for length in (16, 3, 9):
        x = torch.randn(2, length, 8)
        assert_close(module(x)[0], model(x), what=f"length {length}")
