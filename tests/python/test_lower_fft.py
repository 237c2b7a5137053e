"""The FFT and unfold lowerings (tern.passes.lower_fft, lower_unfold): torch.stft
and torch.fft.rfft models export without a complex dtype and match eager.

Tolerance: the DFT runs as a float32 matmul over N points, pocketfft as
float32 butterflies; both round each output within a few ulp of
max |x| * sqrt(N), so the error is held to 1e-5 of the largest output (no
floor at 1: tests/python/compare.py), ten times the float32 rounding of
that sum for N = 512.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import tern
from compare import assert_outputs_close
from tern.inspect import read_program


def _run(tmp_path: Path, model: nn.Module, x: torch.Tensor, tol: float = 1e-5) -> list[str]:
    model.eval()
    path = tmp_path / "model.tern"
    tern.export(model, (x,)).save(path)
    outs = tern.load(str(path))(x)
    with torch.no_grad():
        ref = model(x)
    refs = list(ref) if isinstance(ref, tuple) else [ref]
    assert_outputs_close(outs, refs, rtol=tol)
    return list(read_program(path)["methods"][0]["operators"])


class Stft(nn.Module):
    def __init__(self, n_fft: int, hop: int, center: bool, normalized: bool, out: str) -> None:
        super().__init__()
        self.n_fft, self.hop, self.center, self.normalized, self.out = n_fft, hop, center, normalized, out
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.stft(x, self.n_fft, self.hop, window=self.window, center=self.center,
                       normalized=self.normalized, return_complex=True)
        if self.out == "abs":
            return z.abs()
        if self.out == "power":
            return z.abs().pow(2)
        if self.out == "real_imag":
            return torch.view_as_real(z)
        return torch.angle(z)  # not lowered: export must name the op


@pytest.mark.parametrize("n_fft,hop,center,normalized,out", [
    (256, 64, True, False, "abs"),
    (512, 128, True, True, "power"),
    (64, 16, False, False, "real_imag"),
    (100, 25, True, False, "abs"),  # N not a power of two
])
def test_stft(tmp_path: Path, n_fft: int, hop: int, center: bool, normalized: bool, out: str) -> None:
    x = torch.randn(2, 3000, generator=torch.Generator().manual_seed(0))
    ops = _run(tmp_path, Stft(n_fft, hop, center, normalized, out), x)
    assert not any("fft" in op for op in ops), ops


class Rfft(nn.Module):
    def __init__(self, norm: str | None, part: str) -> None:
        super().__init__()
        self.norm, self.part = norm, part

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.fft.rfft(x, norm=self.norm).transpose(0, 1)[1:]
        return z.real if self.part == "real" else z.imag if self.part == "imag" else z.abs()


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("part", ["real", "imag", "abs"])
def test_rfft(tmp_path: Path, norm: str | None, part: str) -> None:
    x = torch.randn(4, 6, 48, generator=torch.Generator().manual_seed(1)) * 3
    _run(tmp_path, Rfft(norm, part), x)


def test_unsupported_use_of_complex_is_named(tmp_path: Path) -> None:
    x = torch.randn(1, 1000)
    with pytest.raises(tern.ExportError, match="fft"):
        tern.export(Stft(64, 16, True, False, "angle").eval(), (x,))


class Unfold(nn.Module):
    def __init__(self, dim: int, size: int, step: int) -> None:
        super().__init__()
        self.dim, self.size, self.step = dim, size, step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.unfold(self.dim, self.size, self.step) * 2


@pytest.mark.parametrize("dim,size,step", [(-1, 5, 2), (1, 3, 3), (0, 2, 1), (2, 7, 7)])
def test_unfold(tmp_path: Path, dim: int, size: int, step: int) -> None:
    x = torch.randn(4, 9, 15, generator=torch.Generator().manual_seed(2))
    ops = _run(tmp_path, Unfold(dim, size, step), x, tol=0.0)
    assert "aten::unfold" not in ops
