"""Writes the frozen format-1.3 files in this folder (run once, when 1.3 was
current; do NOT regenerate them for a newer format: the point is that the
runtime keeps reading files that old exporters wrote).

    .venv/bin/python tests/data/v1_3/make_golden.py

- dynamic.tern: dynamic shapes (format 1.3): x [batch, seq, 8] and a mask
  [batch, seq], batch in 1..6 and seq in 2..16 (torch.export.Dim), through a
  linear layer, layer norm, views whose sizes are products of the dims, a
  softmax, a masked mean over the sequence, a concatenation and a max. The
  recorded run has batch 4 and seq 7. Every output row depends on its own
  batch row only, so the first k rows of the inputs must give the first k
  rows of the outputs (tests/cpp/executor_test.cpp checks that at other
  batch sizes).

Inputs and PyTorch eager's outputs are kept beside each as .npy files.
"""

from pathlib import Path

import numpy as np
import torch
from torch.export import Dim

import tern

HERE = Path(__file__).resolve().parent


class Dynamic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 12)
        self.norm = torch.nn.LayerNorm(12)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, t, _ = x.shape
        h = self.norm(self.proj(x)).view(b, t, 3, 4).transpose(1, 2).reshape(b, 3, t * 4)
        weights = torch.softmax(h, dim=-1)
        m = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1)
        return weights, pooled, torch.cat([x, x[:, -1:] * 2], 1).amax(1)


def main() -> None:
    torch.manual_seed(0)
    model = Dynamic().eval()
    x = torch.randn(4, 7, 8)
    mask = torch.tensor([[1] * 7, [1] * 3 + [0] * 4, [0] * 7, [1] * 6 + [0]], dtype=torch.bool)
    seq = Dim("seq", min=2, max=16)
    program = tern.export(model, (x, mask),
                          dynamic_shapes={"x": {0: Dim("batch", min=1, max=6), 1: seq}, "mask": {0: Dim("batch", min=1, max=6), 1: seq}})
    program.save(HERE / "dynamic.tern")
    with torch.no_grad():
        outs = model(x, mask)
    for i, a in enumerate((x, mask)):
        np.save(HERE / f"dynamic.input{i}.npy", a.numpy())
    for i, o in enumerate(outs):
        np.save(HERE / f"dynamic.output{i}.npy", o.numpy())


if __name__ == "__main__":
    main()
