"""Writes the frozen cpu_dynamic.tern in this folder (run once, when the cpu
backend's payload version 5 was new; do NOT regenerate it: the point is that
later runtimes keep reading the payloads older exporters wrote).

    .venv/bin/python tests/data/v1_3/make_cpu_dynamic.py

- cpu_dynamic.tern: a transformer layer (a linear q, k, v projection,
  attention under a padding mask, a residual, layer norm, a GELU MLP) over
  x [batch, seq, 16] and a bool mask [batch, seq], batch in 1..4 and seq in
  2..16 (torch.export.Dim), on the cpu backend with dynamic sizes (payload
  version 5: its sizes are expressions of its inputs' sizes). The recorded
  run has batch 3 and seq 9. Every output row depends on its own batch row
  only: the first k rows of the inputs give the first k rows of the outputs
  (tests/cpp/no_malloc_test.cpp runs it at other batch sizes).

Inputs and PyTorch eager's outputs are kept beside it as .npy files.
"""

from pathlib import Path

import numpy as np
import torch
from torch.export import Dim

import tern

HERE = Path(__file__).resolve().parent


class Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.norm = torch.nn.LayerNorm(16)
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, 2, 8).permute(2, 0, 3, 1, 4)
        keep = mask[:, None, None, :]  # [b, 1, 1, t]: a padding mask over the keys
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        h = self.norm(x + a.transpose(1, 2).reshape(b, t, 16))
        return h + self.down(torch.nn.functional.gelu(self.up(h)))


def main() -> None:
    torch.manual_seed(0)
    model = Layer().eval()
    x = torch.randn(3, 9, 16)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 5:] = False
    mask[2, 8:] = False
    batch, seq = Dim("batch", min=1, max=4), Dim("seq", min=2, max=16)
    program = tern.export(model, (x, mask), dynamic_shapes={"x": {0: batch, 1: seq}, "mask": {0: batch, 1: seq}})
    program.save(HERE / "cpu_dynamic.tern")
    with torch.no_grad():
        out = model(x, mask)
    for i, a in enumerate((x, mask)):
        np.save(HERE / f"cpu_dynamic.input{i}.npy", a.numpy())
    np.save(HERE / "cpu_dynamic.output0.npy", out.numpy())


if __name__ == "__main__":
    main()
