"""A NaN in the input reaches the cpu backend's outputs where eager's has
one, through every float kernel's clamp (an activation, or none: the
bounds are then -inf and inf), on every ISA this machine has. x86's
maxps/minps return their second operand when either is NaN: with the
bounds second, a NaN came out as -inf (found by test_cpu_norms.py's
near-miss RMSNorm, whose rsqrt of a negative mean gave NaN)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import tern
from compare import assert_close
from tern.backends.cpu import CpuPartitioner
from test_cpu_backend import ISAS, load_on_isa

MODELS = {
    # (module, input shape): the GEMM, depthwise and GEMV paths, with and without an activation
    "conv3x3_relu6": (lambda: nn.Sequential(nn.Conv2d(8, 24, 3, padding=1), nn.ReLU6()), (1, 8, 9, 9)),
    "conv1x1": (lambda: nn.Conv2d(8, 40, 1), (1, 8, 5, 7)),
    "depthwise_relu": (lambda: nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU()), (1, 16, 8, 8)),
    "linear_rows": (lambda: nn.Linear(24, 40), (7, 24)),
    "linear_one_row": (lambda: nn.Sequential(nn.Linear(24, 40), nn.Hardtanh(-1.0, 1.0)), (1, 24)),
}


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_nan_input_gives_nan_where_eager_does(name: str, isa: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    make, size = MODELS[name]
    model = make().eval()
    x = torch.randn(*size)
    x.view(-1)[3] = float("nan")
    path = tmp_path / "m.tern"
    tern.export(model, (x,), partitioners=[CpuPartitioner()]).save(path)
    m = load_on_isa(path, isa, monkeypatch)
    with torch.no_grad():
        want = model(x)
    assert torch.isnan(want).any()  # the case tests something
    assert_close(m(x)[0], want, rtol=1e-4, what=f"TERN_CPU_ISA={isa}")  # fails where NaN and not-NaN differ
