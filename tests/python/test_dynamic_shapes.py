"""Dynamic shapes (format 1.3): input dims exported with a torch.export.Dim
take any size within its bounds; one loaded method runs them all.

The oracle is the same module in eager PyTorch on the same inputs. Each test
runs several shapes through one loaded method, in an order that goes up and
down (sizes computed for one call must not leak into the next).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.export import Dim

import tern
from compare import assert_close, assert_outputs_close
from tern.inspect import read_program


def _export_load(tmp_path: Path, model: nn.Module, args: tuple[Any, ...], dynamic_shapes: Any,
                 **kw: Any) -> tuple[tern.Program, tern.Module]:
    program = tern.export(model, args, dynamic_shapes=dynamic_shapes, **kw)
    path = tmp_path / "model.tern"
    program.save(path)
    return program, tern.load(str(path))


def _check(module: tern.Module, model: nn.Module, inputs: tuple[torch.Tensor, ...], rtol: float = 1e-5) -> None:
    """Runs both on `inputs`: each output within `rtol` of its own scale (compare.py)."""
    with torch.no_grad():
        ref = model(*inputs)
    assert_outputs_close(module(*inputs), ref, rtol=rtol, what=f"input shapes {[tuple(x.shape) for x in inputs]}: ")


class SmallCNN(nn.Module):
    """Conv, batch norm, pools, a residual and a classifier: a CNN whose batch is dynamic."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.BatchNorm2d(16), nn.Hardswish(),
                                   nn.Conv2d(16, 16, 1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = x + self.block(x)
        x = nn.functional.max_pool2d(x, 2)
        return self.fc(torch.flatten(self.pool(x), 1))


def _with_stats(model: nn.Module, *shape: int) -> nn.Module:
    """Batch-norm statistics measured on random inputs, so outputs have a real scale."""
    torch.manual_seed(0)
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(*shape))
    return model.eval()


def test_a_cnn_runs_every_batch_size_in_its_range(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = _with_stats(SmallCNN(), 4, 3, 32, 32)
    batch = Dim("batch", min=1, max=16)
    program, module = _export_load(tmp_path, model, (torch.randn(2, 3, 32, 32),), {"x": {0: batch}})
    spec = program.input_specs[0]
    assert spec.shape == (16, 3, 32, 32) and spec.dims[0] == ("batch", 1, 16) and spec.dims[1:] == (None,) * 3
    # The plan holds the largest batch: 16 images of activations, not 2.
    static = tern.export(model, (torch.randn(2, 3, 32, 32),), partitioners=())
    assert program.planned_bytes >= 7 * static.planned_bytes
    for b in (2, 1, 16, 5, 16, 3):
        _check(module, model, (torch.randn(b, 3, 32, 32),))


def test_the_file_says_which_dims_are_dynamic(tmp_path: Path) -> None:
    program, module = _export_load(tmp_path, SmallCNN().eval(), (torch.randn(2, 3, 16, 16),),
                                   {"x": {0: Dim("n", max=4)}})
    assert read_program(program.data)["header"]["version_minor"] == 3
    (spec,) = module.input_specs()
    assert spec.shape == (4, 3, 16, 16) and spec.dims == (("n", 0, 4), None, None, None)
    assert "n:0..4" in str(spec)
    # A file without dynamic dims keeps the oldest version that runs it.
    static = tern.export(SmallCNN().eval(), (torch.randn(2, 3, 16, 16),))
    assert read_program(static.data)["header"]["version_minor"] == 1


class Encoder(nn.Module):
    """A BERT-style encoder: token and position embeddings, layers of masked
    multi-head self-attention and a feed-forward block, and a pooler. The
    sequence length is dynamic; the attention mask is an input."""

    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 4, layers: int = 2, max_len: int = 64) -> None:
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList(nn.ModuleDict({
            "qkv": nn.Linear(dim, 3 * dim), "out": nn.Linear(dim, dim), "n1": nn.LayerNorm(dim),
            "ff": nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)), "n2": nn.LayerNorm(dim),
        }) for _ in range(layers))
        self.pool = nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, t = ids.shape
        positions = torch.arange(t, device=ids.device)
        h = self.norm(self.tok(ids) + self.pos(positions))
        bias = (1.0 - mask[:, None, None, :].to(h.dtype)) * -1e4
        for layer in self.layers:
            q, k, v = layer["qkv"](h).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            a = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            h = layer["n1"](h + layer["out"](a.transpose(1, 2).reshape(b, t, -1)))
            h = layer["n2"](h + layer["ff"](h))
        return h, torch.tanh(self.pool(h[:, 0]))


def test_a_bert_style_encoder_runs_several_sequence_lengths_in_one_method(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Encoder().eval()
    seq = Dim("seq", min=2, max=64)
    ids, mask = torch.randint(0, 100, (2, 8)), torch.ones(2, 8, dtype=torch.int64)
    program, module = _export_load(tmp_path, model, (ids, mask), {"ids": {1: seq}, "mask": {1: seq}})
    assert [s.dims[1] for s in program.input_specs] == [("seq", 2, 64)] * 2
    for t in (8, 2, 64, 13, 5, 64, 31):
        ids = torch.randint(0, 100, (2, t))
        mask = torch.ones(2, t, dtype=torch.int64)
        mask[1, t // 2:] = 0  # the second sequence is padded
        _check(module, model, (ids, mask), rtol=1e-4)


def test_a_size_beyond_its_bound_is_an_error_naming_the_input_and_the_bound(tmp_path: Path) -> None:
    model = Encoder().eval()
    seq = Dim("seq", min=2, max=16)
    _, module = _export_load(tmp_path, model, (torch.randint(0, 100, (1, 8)), torch.ones(1, 8, dtype=torch.int64)),
                             {"ids": {1: seq}, "mask": {1: seq}})
    with pytest.raises(ValueError, match=r"input 0 dim 1 is 17, outside 2\.\.16, the range of Dim 'seq'"):
        module(torch.randint(0, 100, (1, 17)), torch.ones(1, 17, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"input 1 dim 0 must be 1, got 2"):
        module(torch.randint(0, 100, (1, 8)), torch.ones(2, 8, dtype=torch.int64))
    # The method still runs after refusing.
    _check(module, model, (torch.randint(0, 100, (1, 9)), torch.ones(1, 9, dtype=torch.int64)), rtol=1e-4)


def test_inputs_that_disagree_on_a_shared_dim_are_refused_by_the_runtime(tmp_path: Path) -> None:
    model = Encoder().eval()
    seq = Dim("seq", min=2, max=16)
    _, module = _export_load(tmp_path, model, (torch.randint(0, 100, (1, 8)), torch.ones(1, 8, dtype=torch.int64)),
                             {"ids": {1: seq}, "mask": {1: seq}})
    with pytest.raises(ValueError, match=r"input 1 dim 1 is 7, but the other input sizes make it 9"):
        module(torch.randint(0, 100, (1, 9)), torch.ones(1, 7, dtype=torch.int64))
    _check(module, model, (torch.randint(0, 100, (1, 7)), torch.ones(1, 7, dtype=torch.int64)), rtol=1e-4)


def test_a_dim_without_an_upper_bound_is_refused_at_export() -> None:
    with pytest.raises(tern.ExportError, match=r"dynamic dim batch has no upper bound.*max=N"):
        tern.export(SmallCNN().eval(), (torch.randn(2, 3, 16, 16),), dynamic_shapes={"x": {0: Dim("batch")}})


def test_a_derived_dim_is_refused_at_export_naming_the_input() -> None:
    # torch.export asks for one (frames = 2 * pos) where a model reshapes by 2;
    # the runtime binds symbols to input dim sizes only.
    class Pairs(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.reshape(x.shape[0], -1, 2).sum(-1)

    pos = Dim("pos", min=2, max=16)
    with pytest.raises(tern.ExportError, match=r"input 'x' dim 1 is 2\*pos, a derived Dim whose Dim is no input dim"):
        tern.export(Pairs(), (torch.randn(3, 8),), dynamic_shapes={"x": {1: 2 * pos}})


def test_a_derived_dim_beside_its_dim_runs(tmp_path: Path) -> None:
    class Interleave(nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return b.reshape(b.shape[0], -1, 2).sum(-1) * a

    n = Dim("n", min=2, max=16)
    a, b = torch.randn(3, 16), torch.randn(3, 32)
    _, module = _export_load(tmp_path, Interleave(), (torch.randn(3, 4), torch.randn(3, 8)),
                             {"a": {1: n}, "b": {1: 2 * n}})
    for k in (16, 2, 7):
        _check(module, Interleave(), (a[:, :k].contiguous(), b[:, : 2 * k].contiguous()))


class Shapes(nn.Module):
    """Sizes computed from sizes: views of products, a slice, a concatenation,
    floor division, arange, and a reduction over a dynamic dim."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, t, c = x.shape
        y = torch.cat([x, x[:, 1:]], dim=1)  # 2t - 1
        z = x.reshape(b * t, c).sum(0)
        w = x.transpose(1, 2).reshape(b, c * t)[:, 1:]
        return y * 2, z, w, torch.arange(t // 2 + 1) * t, x.mean(1, keepdim=True).expand(b, t, c) - x


def test_sizes_computed_from_sizes_follow_the_inputs(tmp_path: Path) -> None:
    model = Shapes()
    _, module = _export_load(tmp_path, model, (torch.randn(2, 6, 3),), {"x": {0: Dim("b", max=5), 1: Dim("t", min=4, max=40)}})
    for b, t in ((2, 6), (5, 40), (1, 4), (3, 7), (0, 9), (4, 33)):
        _check(module, model, (torch.randn(b, t, 3),))


class Gate(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) @ y.t()


def test_two_dynamic_dims_in_two_inputs(tmp_path: Path) -> None:
    n, m = Dim("n", min=1, max=32), Dim("m", min=1, max=24)
    _, module = _export_load(tmp_path, Gate(), (torch.randn(4, 8), torch.randn(5, 8)), {"x": {0: n}, "y": {0: m}})
    for a, b in ((4, 5), (32, 1), (1, 24), (17, 9)):
        _check(module, Gate(), (torch.randn(a, 8), torch.randn(b, 8)))


def test_dynamic_parts_run_on_kernels_static_parts_on_the_cpu_backend(tmp_path: Path) -> None:
    class Mixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Linear(16, 16)
            self.conv = nn.Conv2d(3, 8, 3)

        def forward(self, x: torch.Tensor, img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.table(x), self.conv(img)

    torch.manual_seed(0)
    model = Mixed().eval()
    _, module = _export_load(tmp_path, model, (torch.randn(3, 16), torch.randn(1, 3, 12, 12)),
                             {"x": {0: Dim("n", max=8)}, "img": None})
    assert module.backends() == ["cpu"]  # the static convolution
    for n in (3, 8, 1):
        _check(module, model, (torch.randn(n, 16), torch.randn(1, 3, 12, 12)))


def test_a_data_dependent_size_is_refused_at_export() -> None:
    class Nonzero(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nonzero(x)

    class Positive(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[x > 0]

    # aten::nonzero has no kernel, but the reason none could run it is its output's size: that is
    # what the error says, with or without dynamic inputs
    for dynamic_shapes in ({"x": {0: Dim("n", max=8)}}, None):
        with pytest.raises(tern.ExportError) as info:
            tern.export(Nonzero(), (torch.randn(4),), dynamic_shapes=dynamic_shapes)
        assert re.match(r"1 operator\(s\) give an output whose size depends on the data \(no input dim gives it\)"
                        r".*:\n  aten::nonzero \(aten.nonzero.default\): output \[u\d+, 1\], used by:\n"
                        r"    node nonzero: File .*test_dynamic_shapes.py", str(info.value)), str(info.value)
        assert "have no kernel" not in str(info.value)
    with pytest.raises(tern.ExportError,
                       match=r"output of index dim 0: size u0 depends on the data \(no input dim gives it\)"):
        tern.export(Positive(), (torch.randn(4),), dynamic_shapes={"x": {0: Dim("n", max=8)}})


def test_state_and_dynamic_shapes_together(tmp_path: Path) -> None:
    class Count(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("seen", torch.zeros(()))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.seen.add_(x.shape[0])
            return x.sum(0) + self.seen

    model = Count()
    _, module = _export_load(tmp_path, Count(), (torch.randn(3, 4),), {"x": {0: Dim("n", min=1, max=10)}})
    for n in (3, 10, 1, 6):
        x = torch.randn(n, 4)
        ref = model(x)
        assert_close(module(x)[0], ref, rtol=1e-6)
    assert_close(module.state()["seen"], torch.tensor(20.0), rtol=0.0, atol=0.0)


def test_numel_stride_and_sizes_used_as_numbers(tmp_path: Path) -> None:
    class Sizes(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x.reshape(x.numel()) * x.stride(0) + x.storage_offset(), torch.ones(x.size(1)) * x.size(0)

    _, module = _export_load(tmp_path, Sizes(), (torch.randn(3, 5),), {"x": {0: Dim("a", max=9), 1: Dim("b", max=9)}})
    for a, b in ((3, 5), (9, 9), (1, 2), (7, 3)):
        _check(module, Sizes(), (torch.randn(a, b),))
