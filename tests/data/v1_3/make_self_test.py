"""Writes the frozen self_test.tern in this folder (run once, when
Program.self_tests was new; do NOT regenerate it: the point is that later
runtimes keep running the self-tests older exporters wrote).

    .venv/bin/python tests/data/v1_3/make_self_test.py

- self_test.tern: (y, argmax) = (x @ w + 1, argmax(x @ w, dim=1)) (x [2, 4],
  w a constant [4, 3]) with two bundled self-tests (tern.export(...,
  bundle=...)): the example input with the default tolerances (a float32
  and an int64 output), and another input with rtol 1e-3 and atol 1e-2.
  Written when self_tests were appended to the schema (no version change: a
  1.1 file, as its method needs). tests/cpp/format_compat_test.cpp and
  tests/python/test_self_test.py run its tests, test_format_compat.py checks
  the outputs.

Inputs and PyTorch eager's outputs are kept beside it as .npy files.
"""

from pathlib import Path

import numpy as np
import torch

import tern

HERE = Path(__file__).resolve().parent


class AffineArgmax(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.arange(12, dtype=torch.float32).reshape(4, 3) / 10 - 0.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x @ self.w
        return h + 1, h.argmax(dim=1)


def main() -> None:
    model = AffineArgmax().eval()
    x = torch.arange(8, dtype=torch.float32).reshape(2, 4) - 3
    x2 = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, -2.0, 3.0]])
    bundle = [(x,), tern.SelfTest((x2,), rtol=1e-3, atol=1e-2)]
    tern.export(model, (x,), partitioners=(), bundle=bundle).save(HERE / "self_test.tern")
    np.save(HERE / "self_test.input0.npy", x.numpy())
    with torch.no_grad():
        for i, y in enumerate(model(x)):
            np.save(HERE / f"self_test.output{i}.npy", y.numpy())


if __name__ == "__main__":
    main()
