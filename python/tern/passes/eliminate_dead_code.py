"""Removes nodes whose results nobody uses, and constants nobody reads.

Runs last so that what earlier passes disconnected (the old convolution and
batch norm after folding, replaced constants) does not reach the file.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tern.graph import drop_unused_constants

if TYPE_CHECKING:
    import torch.fx


def eliminate_dead_code(gm: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
    """Drops unused pure nodes (fx's own rule), then unused get_attr constants."""
    gm.graph.eliminate_dead_code()
    drop_unused_constants(gm)
    return gm
