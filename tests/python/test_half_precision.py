"""float16 and bfloat16 models: exported, saved, loaded and run on the
portable kernels, compared with PyTorch eager run in the same dtype.

Tolerance. Tern computes each op in float32 and rounds its result once
(kernels/portable/util/half.h); eager's CPU kernels do the same for most ops
but a few round intermediate results to the 16-bit type, and the two sum in
different orders. Each op's result can therefore differ by about one unit in
the last place of the output's scale (2^-10 relative for float16, 2^-7 for
bfloat16), and a model compounds that over its layers. The bound per dtype is
|tern - eager| <= tol * (max |eager| + |eager|) per element, relative to each
output's own scale (tests/python/compare.py, no floor at 1), with tol = 8 ulps:
8 * 2^-10 ~ 0.008 (float16) and 8 * 2^-7 ~ 0.06 (bfloat16), loose enough for
a few layers of one-ulp differences, tight enough that a wrong kernel (or a
16-bit accumulator over a long sum) fails.

bfloat16 outputs come back from tern.Module as float32 arrays holding the
exact bfloat16 values (NumPy has no bfloat16; runtime.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tern
from compare import assert_close

TOL = {torch.float16: 8 * 2.0**-10, torch.bfloat16: 8 * 2.0**-7, torch.float32: 1e-4}
HALF_DTYPES = (torch.float16, torch.bfloat16)


def _run(model: nn.Module, args: tuple, tmp_path: Path, **export_kw) -> tuple[list[np.ndarray], tern.Program]:
    model = model.eval()
    program = tern.export(model, args, **export_kw)
    path = tmp_path / "model.tern"
    program.save(path)
    outs = tern.load(str(path))(*args)
    return outs, program


def _check(outs: list[np.ndarray], refs, tol: float | None = None) -> None:
    """Each output against eager (compare.py) at `tol`, or its dtype's TOL, of its own scale."""
    refs = list(refs) if isinstance(refs, (tuple, list)) else [refs]
    assert len(outs) == len(refs), f"{len(outs)} outputs, eager has {len(refs)}"
    for i, (got, want) in enumerate(zip(outs, refs)):
        assert_close(got, want, rtol=tol if tol is not None else TOL.get(want.dtype, 0.0), what=f"output {i}")


def _dtype_id(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(self.gap(x), 1))


def _randomize_bn(model: nn.Module) -> None:
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_dtype_id)
def test_cnn(dtype: torch.dtype, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    _randomize_bn(model)
    model = model.to(dtype).eval()
    x = torch.randn(2, 3, 16, 16).to(dtype)
    outs, program = _run(model, (x,), tmp_path)
    ops = set(dict(program.op_counts))
    assert {"aten::convolution", "aten::max_pool2d_with_indices", "aten::relu"} <= ops, ops
    with torch.no_grad():
        _check(outs, model(x))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_dtype_id)
def test_transformer_encoder(dtype: torch.dtype, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Encoder().to(dtype).eval()
    x = torch.randn(2, 7, 32).to(dtype)
    outs, program = _run(model, (x,), tmp_path)
    assert "aten::native_layer_norm" in dict(program.op_counts), program.op_counts
    with torch.no_grad():
        _check(outs, model(x))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(24, 48)
        self.fc2 = nn.Linear(48, 48)
        self.fc3 = nn.Linear(48, 12)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.gelu(self.fc1(x))
        h = F.silu(self.fc2(h)) + torch.sigmoid(h) * torch.tanh(h) + F.hardswish(h)
        y = self.fc3(h)
        return F.softmax(y, dim=-1), F.log_softmax(y, dim=-1)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_dtype_id)
def test_mlp_activations_softmax(dtype: torch.dtype, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = MLP().to(dtype).eval()
    x = torch.randn(5, 24).to(dtype)
    outs, program = _run(model, (x,), tmp_path)
    assert {"aten::gelu", "aten::silu", "aten::_softmax", "aten::_log_softmax"} <= set(dict(program.op_counts))
    with torch.no_grad():
        _check(outs, model(x))


class Casts(nn.Module):
    def forward(self, h: torch.Tensor, b: torch.Tensor, f: torch.Tensor, i: torch.Tensor):
        return (h.to(torch.bfloat16), h.float(), h.to(torch.int32), h.to(torch.int8), h.to(torch.bool),
                b.half(), b.float(), b.to(torch.int64), b.to(torch.uint8),
                f.half(), f.to(torch.bfloat16), f.double().half(),
                i.half(), i.to(torch.bfloat16))


def test_casts(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    special = torch.tensor([0.0, -0.0, 65504.0, 1e-7, 6e-8, -3.75, 100.5, 2.5])
    h = torch.cat([special, torch.randn(8, generator=g) * 50]).half()
    b = torch.cat([special, torch.randn(8, generator=g) * 50]).to(torch.bfloat16)
    f = torch.cat([torch.tensor([65520.0, 65519.0, 1e6, -1e6, 2.0**-25, 3 * 2.0**-25, float("inf"), float("nan")]),
                   torch.randn(8, generator=g) * 1e3])
    i = torch.tensor([0, 1, -1, 2049, 65504, 65535, 100000, -300, 7, 255, 256, 257, 4097, 16, -16, 33])
    model = Casts()
    outs, program = _run(model, (h, b, f, i), tmp_path)
    assert "aten::_to_copy" in dict(program.op_counts)
    refs = model(h, b, f, i)
    # A cast is one rounding in both: bit-exact.
    _check(outs, refs, tol=0.0)


class Mixed(nn.Module):
    def forward(self, h: torch.Tensor, f: torch.Tensor, b: torch.Tensor, i: torch.Tensor):
        return h + f, h * b, h + i, h * 2.5, i * h, torch.where(h > 0, h, f), h < b


def test_mixed_promotion(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    h = (torch.randn(3, 4, generator=g) * 4).half()
    f = torch.randn(3, 4, generator=g)
    b = (torch.randn(4, generator=g) * 4).to(torch.bfloat16)
    i = torch.randint(-5, 6, (3, 4), generator=g, dtype=torch.int32)
    model = Mixed()
    outs, program = _run(model, (h, f, b, i), tmp_path)
    refs = model(h, f, b, i)
    # float16 with float32 -> float32, float16 with bfloat16 -> float32,
    # int with float16 -> float16, a Python float keeps float16.
    assert [r.dtype for r in refs] == [torch.float32, torch.float32, torch.float16, torch.float16, torch.float16,
                                       torch.float32, torch.bool]
    assert [o.dtype for o in outs] == [np.float32, np.float32, np.float16, np.float16, np.float16, np.float32,
                                       np.bool_]
    # One rounding of an exact float32 result in both: equal up to float32 ulps.
    _check(outs, refs, tol=1e-6)


def test_cpu_backend_leaves_half_nodes_to_the_portable_kernels(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    x = torch.randn(1, 3, 16, 16)
    # float32: the cpu backend claims the convolutions and the linear layer.
    f32 = tern.export(model.eval(), (x,))
    assert "aten::convolution" not in dict(f32.op_counts)
    for dtype in HALF_DTYPES:
        program = tern.export(model.to(dtype).eval(), (x.to(dtype),))
        assert dict(program.op_counts).get("aten::convolution") == 2, program.op_counts
        assert dict(program.op_counts).get("aten::addmm") == 1, program.op_counts
        outs = None
        path = tmp_path / f"{_dtype_id(dtype)}.tern"
        program.save(path)
        module = tern.load(str(path))
        assert module.backends() == [], module.backends()
        outs = module(x.to(dtype))
        with torch.no_grad():
            _check(outs, model(x.to(dtype)))
        model = model.float()


def test_bfloat16_input_as_numpy_bits(tmp_path: Path) -> None:
    model = nn.Sequential(nn.ReLU()).eval()
    x = torch.randn(6).to(torch.bfloat16)
    program = tern.export(model, (x,))
    path = tmp_path / "relu.tern"
    program.save(path)
    module = tern.load(str(path))
    bits = x.view(torch.int16).numpy().view(np.uint16)
    (out,) = module(bits)
    assert_close(out, torch.relu(x), rtol=0.0, atol=0.0)


class Accumulate(nn.Module):
    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(4, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total.add_(x)
        return self.total * 2


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_dtype_id)
def test_state_in_half_dtype(dtype: torch.dtype, tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(4, generator=g).to(dtype) for _ in range(3)]
    program = tern.export(Accumulate(dtype), (xs[0],))
    path = tmp_path / "acc.tern"
    program.save(path)
    module = tern.load(str(path))
    eager = Accumulate(dtype)
    for x in xs:
        _check(module(x), eager(x), tol=0.0)  # one rounding per op in both
    (total,) = module.state().values()
    _check([total], eager.total, tol=0.0)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_dtype_id)
def test_dynamic_sequence_length(dtype: torch.dtype, tmp_path: Path) -> None:
    # The float32-staged kernels (mm, layer norm, attention) are prepared again
    # on each new shape: their float32 buffers must follow.
    torch.manual_seed(0)
    model = Encoder().to(dtype).eval()
    seq = torch.export.Dim("seq", min=2, max=16)
    x = torch.randn(2, 16, 32).to(dtype)
    outs, _ = _run(model, (x,), tmp_path, dynamic_shapes={"x": {1: seq}})
    with torch.no_grad():
        _check(outs, model(x))
    module = tern.load(str(tmp_path / "model.tern"))
    for n in (3, 16, 9):
        y = torch.randn(2, n, 32).to(dtype)
        with torch.no_grad():
            _check(module(y), model(y))
