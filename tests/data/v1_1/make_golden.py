"""Writes the frozen format-1.1 files in this folder (run once, when 1.1 was
current; do NOT regenerate them for a newer format: the point is that the
runtime keeps reading files that old exporters wrote).

    .venv/bin/python tests/data/v1_1/make_golden.py

- attention.tern: kernels only: a multi-head attention block with layer norm
  and a residual (bmm, softmax, permute/view, addmm, layer norm).
- cpu_block.tern: a small conv net (stem, depthwise, residual block, pools,
  linear head) on the cpu backend (payload version 1): the backend's
  payload format frozen too.
- delegated.tern: elementwise chains handed to the "tern_test" backend
  (tests/cpp/test_backend.h, tests/python/tern_test_backend.py) around a
  linear layer and a convolution on kernels: two BackendCall delegates with
  constants moved into their payloads.

Inputs and PyTorch eager's outputs are kept beside each as .npy files.
"""

import sys
from pathlib import Path

import numpy as np
import torch

import tern

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
from tern_test_backend import TestPartitioner  # noqa: E402


class Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        self.ln = torch.nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x + self.attn(x, x, x, need_weights=False)[0])


class Delegated(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.rand(2, 4, 6, 6) + 0.5)
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.relu(x * self.scale - y)
        b = self.conv(a)
        return torch.relu(b + a) * y, a


class CpuBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = torch.nn.Conv2d(16, 16, 1)
        self.fc = torch.nn.Linear(16, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.relu6(self.stem(x))
        y = torch.nn.functional.max_pool2d(torch.relu(self.pw(torch.nn.functional.hardswish(self.dw(y))) + y), 3, 2, 1)
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def save(name: str, model: torch.nn.Module, args: tuple[torch.Tensor, ...], **export_args: object) -> None:
    model.eval()
    tern.export(model, args, **export_args).save(HERE / f"{name}.tern")
    with torch.no_grad():
        outs = model(*args)
    for i, x in enumerate(args):
        np.save(HERE / f"{name}.input{i}.npy", x.numpy())
    for i, o in enumerate([outs] if isinstance(outs, torch.Tensor) else outs):
        np.save(HERE / f"{name}.output{i}.npy", o.numpy())


def main() -> None:
    torch.manual_seed(0)
    save("attention", Attention(), (torch.randn(2, 5, 16),), partitioners=())
    save("delegated", Delegated(), (torch.randn(2, 4, 6, 6), torch.randn(2, 4, 6, 6)),
         partitioners=[TestPartitioner()])
    torch.manual_seed(0)  # added later, seeded on its own so the files above stay as they were
    save("cpu_block", CpuBlock(), (torch.randn(1, 3, 20, 20),))


if __name__ == "__main__":
    main()
