"""What the op test files share."""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn


class Fn(nn.Module):
    """Wraps a function of the inputs as a module, to export one call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)
