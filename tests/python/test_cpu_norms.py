"""RMSNorm on the cpu backend (issue 26: what a language model needs): the
five or six nodes models export for it (pow, mean, add, rsqrt, mul, and
the weight's mul) run as one RmsNorm op; near misses stay on the portable
kernels, where they run as they are. The oracle: eager PyTorch on the same
module and inputs, 1, 2 and 3 threads giving the same bits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import tern
from compare import assert_close
from tern.backends.cpu import CpuPartitioner
from tern.inspect import read_program
from test_cpu_backend import _payload_ops


class Spelled(nn.Module):
    """x * rsqrt(mean(x^p, dim) + eps) * weight, as Llama and T5 write it."""

    def __init__(self, d: int, power: int = 2, dim: int = -1, weight: bool = True) -> None:
        super().__init__()
        self.power, self.dim = power, dim
        self.weight = nn.Parameter(torch.rand(d) + 0.5) if weight else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * torch.rsqrt(x.pow(self.power).mean(self.dim, keepdim=True) + 1e-6)
        return self.weight * y if self.weight is not None else y


class Between(nn.Module):
    """A norm between two linear layers, as in a transformer block."""

    def __init__(self, norm: nn.Module) -> None:
        super().__init__()
        self.a, self.norm, self.b = nn.Linear(24, 40), norm, nn.Linear(40, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.norm(self.a(x)))


NORMS = {
    "torch_rmsnorm": lambda: nn.RMSNorm(40, eps=1e-5),
    "torch_rmsnorm_no_weight": lambda: nn.RMSNorm(40, eps=1e-5, elementwise_affine=False),
    "spelled_weight_first": lambda: Spelled(40),
    "spelled_no_weight": lambda: Spelled(40, weight=False),
}
NEAR_MISSES = {  # not an RMSNorm: stay on the portable kernels
    "cube": lambda: Spelled(40, power=3),
    "over_rows": lambda: Spelled(40, dim=-2),
}


def _export(model: nn.Module, x: torch.Tensor, tmp_path: Path) -> tuple[Path, list[str]]:
    cpu = CpuPartitioner()
    program = tern.export(model.eval(), (x,), partitioners=[cpu])
    path = tmp_path / "m.tern"
    program.save(path)
    return path, read_program(program.data)["methods"][0]["operators"]


def _check_eager(model: nn.Module, x: torch.Tensor, path: Path) -> None:
    with torch.no_grad():
        want = model(x)
    outs = [tern.load(str(path), threads=t)(x)[0] for t in (1, 2, 3)]
    for got in outs[1:]:
        np.testing.assert_array_equal(got, outs[0])
    assert_close(outs[0], want, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(NORMS))
def test_an_rms_norm_runs_as_one_op_and_matches_eager(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, x = Between(NORMS[name]()), torch.randn(3, 7, 24) * 4
    path, operators = _export(model, x, tmp_path)
    assert not {"aten::pow.Tensor_Scalar", "aten::mean.dim", "aten::rsqrt"} & set(operators), operators
    (ops,) = _payload_ops(path)
    assert [k for k, _ in ops].count("RmsNorm") == 1, ops
    _check_eager(model, x, path)


def test_llama_and_t5_norms_run_as_one_op(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers", reason="transformers not installed (requirements.txt)")
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.t5.modeling_t5 import T5LayerNorm

    torch.manual_seed(0)
    for norm in (LlamaRMSNorm(40, eps=1e-6), T5LayerNorm(40, eps=1e-6)):
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
        model, x = Between(norm), torch.randn(2, 5, 24)
        path, _ = _export(model, x, tmp_path)
        (ops,) = _payload_ops(path)
        assert [k for k, _ in ops].count("RmsNorm") == 1, (type(norm).__name__, ops)
        _check_eager(model, x, path)


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_near_miss_stays_portable_and_matches_eager(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, x = Between(NEAR_MISSES[name]()), torch.randn(3, 7, 24)
    path, operators = _export(model, x, tmp_path)
    assert "aten::pow.Tensor_Scalar" in operators and "aten::rsqrt" in operators, operators
    assert "RmsNorm" not in [k for ops in _payload_ops(path) for k, _ in ops]
    _check_eager(model, x, path)
