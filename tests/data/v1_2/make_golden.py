"""Writes the frozen format-1.2 files in this folder (run once, when 1.2 was
current; do NOT regenerate them for a newer format: the point is that the
runtime keeps reading files that old exporters wrote).

    .venv/bin/python tests/data/v1_2/make_golden.py [name ...]

- state.tern: a model with state (format 1.2): a recurrent cell whose hidden
  state (not zero at export, so the first output depends on the initial
  value stored in the file) and step counter are buffers it mutates, and a
  cache written at the counter's position with index_copy_ (aten::index_put).
  The recorded outputs are those of the first call after load.
- control_flow.tern: torch.while_loop (a backward jump, format 1.2) whose
  body branches with torch.cond on the iteration count, after a cond on the
  input; the iteration count is an input (5 in the recorded run).

Inputs and PyTorch eager's outputs are kept beside each as .npy files.
"""

import sys
from pathlib import Path

import numpy as np
import torch

import tern

HERE = Path(__file__).resolve().parent


class Stateful(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = torch.nn.GRUCell(6, 8)
        self.out = torch.nn.Linear(8 + 8, 3)
        self.register_buffer("hidden", torch.randn(1, 8))
        self.register_buffer("step", torch.tensor([2]))
        self.register_buffer("cache", torch.randn(1, 5, 8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.cell(x, self.hidden)
        self.hidden.copy_(h)
        self.cache.index_copy_(1, self.step, h.unsqueeze(1))
        self.step.add_(1)
        return self.out(torch.cat([h, self.cache.mean(1)], 1)), self.step.clone()


class ControlFlow(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from torch._higher_order_ops import while_loop

        x = torch.cond(x.mean() > 0, lambda v: v * 2, lambda v: v.neg(), (x,))

        def cond(i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return i < n

        def body(i: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, torch.cond(i % 2 == 0, lambda u: self.a(u).tanh(), lambda u: self.b(u).relu(), (v,))

        return while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))[::-1]


def save(name: str, model: torch.nn.Module, args: tuple[torch.Tensor, ...], **export_args: object) -> None:
    model.eval()
    program = tern.export(model, args, **export_args)  # before eager runs: its buffers are the initial state
    program.save(HERE / f"{name}.tern")
    with torch.no_grad():
        outs = model(*args)
    for i, x in enumerate(args):
        np.save(HERE / f"{name}.input{i}.npy", x.numpy())
    for i, o in enumerate([outs] if isinstance(outs, torch.Tensor) else outs):
        np.save(HERE / f"{name}.output{i}.npy", o.numpy())


def main(names: list[str]) -> None:
    """Writes the files named (all when none)."""
    names = names or ["state", "control_flow"]
    torch.manual_seed(0)
    if "state" in names:
        save("state", Stateful(), (torch.randn(1, 6),))
    torch.manual_seed(0)
    if "control_flow" in names:
        save("control_flow", ControlFlow(), (torch.randn(2, 4), torch.tensor(5)))


if __name__ == "__main__":
    main(sys.argv[1:])
