"""Writes the frozen metadata.tern in this folder (run once, when
Program.metadata was new; do NOT regenerate it: the point is that later
runtimes keep reading the metadata older exporters wrote).

    .venv/bin/python tests/data/v1_3/make_metadata.py

- metadata.tern: y = x @ w + 1 (x [2, 4], w a constant [4, 3]) with four
  metadata entries (METADATA below: text, binary, empty, a 256-byte key),
  written when metadata was appended to the schema (no version change: a
  1.1 file, as its method needs). tests/python/test_metadata.py checks the
  entries, test_format_compat.py the outputs.

Inputs and PyTorch eager's outputs are kept beside it as .npy files.
"""

from pathlib import Path

import numpy as np
import torch

import tern

HERE = Path(__file__).resolve().parent

METADATA = {
    "app.vocab": "ça\nде\n日本\n".encode(),
    "app.table": bytes(range(256)) * 4,
    "empty": b"",
    "k" * 256: b"longest key",
}


class Affine(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.arange(12, dtype=torch.float32).reshape(4, 3) / 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w + 1


def main() -> None:
    model = Affine().eval()
    x = torch.arange(8, dtype=torch.float32).reshape(2, 4) - 3
    tern.export(model, (x,), partitioners=(), metadata=METADATA).save(HERE / "metadata.tern")
    np.save(HERE / "metadata.input0.npy", x.numpy())
    with torch.no_grad():
        np.save(HERE / "metadata.output0.npy", model(x).numpy())


if __name__ == "__main__":
    main()
