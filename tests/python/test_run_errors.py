"""Errors at run time that name the value (issue 28): a data-dependent
failure says what was wrong with what, as eager does ("index 9 is out of
bounds for dimension 0 with size 6"), with the instruction, op and node;
in Python's exception and in tern-run's output. Oracle: the values the test
passes in, and eager's own message for the same call."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import tern
from conftest import built_tool


class Index(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x[i] if self.dim == 0 else x[:, i]


class IndexSelect(nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return torch.index_select(x, -1, i) * 2.0


class Gather(nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, i)


class Embedding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(6, 4)

    def forward(self, i: torch.Tensor) -> torch.Tensor:
        return self.emb(i)


CASES = [  # model, example inputs, failing inputs, the bad index, its dim, that dim's size
    (Index(0), (torch.randn(6, 3), torch.tensor([1, 2])), (torch.randn(6, 3), torch.tensor([1, 9])), 9, 0, 6),
    (Index(1), (torch.randn(6, 3), torch.tensor([1, 2])), (torch.randn(6, 3), torch.tensor([0, 3])), 3, 1, 3),
    (IndexSelect(), (torch.randn(2, 5), torch.tensor([0, 4])), (torch.randn(2, 5), torch.tensor([4, 7])), 7, 1, 5),
    (Gather(), (torch.randn(3, 4), torch.tensor([[0], [1], [2]])), (torch.randn(3, 4), torch.tensor([[0], [5], [2]])),
     5, 1, 4),
    (Embedding(), (torch.tensor([1, 2, 0]),), (torch.tensor([2, 11, 3]),), 11, 0, 6),
]


def _export(model: nn.Module, args, path: Path) -> None:
    tern.export(model.eval(), args, partitioners=()).save(str(path))  # the portable kernels: the ones that check


@pytest.mark.parametrize("case", range(len(CASES)), ids=["index", "index-dim1", "index_select", "gather", "embedding"])
def test_an_index_out_of_range_is_named_with_its_dim_and_size(case: int, tmp_path: Path) -> None:
    model, example, bad, value, dim, size = CASES[case]
    with pytest.raises((IndexError, RuntimeError)):  # eager refuses it too
        model(*bad)
    path = tmp_path / "m.tern"
    _export(model, example, path)
    m = tern.load(str(path))
    with pytest.raises(ValueError) as err:
        m(*[t.numpy() for t in bad])
    message = str(err.value)
    assert f"index {value} is out of bounds for dimension {dim} with size {size}" in message, message
    assert re.search(r"instruction \d+ \(aten::\w+.*, node \w+\)", message), message  # where it failed
    # the next call fails with its own values, not the last call's
    m(*[t.numpy() for t in example])
    again = [t.clone() for t in bad]
    again[-1].view(-1)[0] = size + 30 if again[-1].numel() else 0
    with pytest.raises(ValueError) as err2:
        m(*[t.numpy() for t in again])
    assert f"index {size + 30} is out of bounds" in str(err2.value), str(err2.value)


def test_tern_run_prints_the_reason(tmp_path: Path) -> None:
    model, example, bad, value, dim, size = CASES[0]
    path = tmp_path / "m.tern"
    _export(model, example, path)
    inputs = []
    for i, t in enumerate(bad):
        np.save(tmp_path / f"{i}.npy", t.numpy())
        inputs += ["--input", str(tmp_path / f"{i}.npy")]
    r = subprocess.run([built_tool("tern-run"), str(path), *inputs], capture_output=True, text=True)
    assert r.returncode != 0
    assert f"tern-run: run failed: " in r.stderr and f"index {value} is out of bounds for dimension {dim} with size {size}" \
        in r.stderr.split("tern-run: run failed: ")[1], r.stderr
