"""Graph passes of the exporter, one per file.

Each pass takes the exporter's torch.fx GraphModule (see tern.graph: user
inputs are placeholders, constants are get_attr nodes) and returns it,
rewritten in place. Every pass keeps the module's outputs equal to eager
PyTorch (within 1e-5 relative), so `gm(*inputs)` stays a valid oracle.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from tern.passes.conv1d_as_conv2d import conv1d_as_conv2d
from tern.passes.eliminate_dead_code import eliminate_dead_code
from tern.passes.fold_batch_norm import fold_batch_norm
from tern.passes.fold_constants import fold_constants
from tern.passes.fold_pad_into_conv import fold_pad_into_conv
from tern.passes.gather_quantized_embeddings import gather_quantized_embeddings
from tern.passes.lower_clamp import lower_clamp
from tern.passes.lower_fft import lower_fft
from tern.passes.lower_full_reductions import lower_full_reductions
from tern.passes.lower_scalar_operands import lower_scalar_operands
from tern.passes.lower_unfold import lower_unfold
from tern.passes.pack_int4 import pack_int4_weights
from tern.passes.remove_asserts import remove_asserts
from tern.passes.remove_noops import remove_noops

if TYPE_CHECKING:
    import torch.fx

Pass = Callable[["torch.fx.GraphModule"], "torch.fx.GraphModule"]

# In order: drop what has no effect, pack int4 weights, gather quantized embedding rows before
# dequantizing them, fold batch norm and symmetric zero pads into convolutions, write 1-d convolutions
# as 2-d ones (which the cpu backend runs), lower to ops the runtime has, compute what depends only on
# constants, drop what is left unused.
DEFAULT_PASSES: tuple[Pass, ...] = (
    remove_asserts,
    remove_noops,
    pack_int4_weights,
    gather_quantized_embeddings,
    fold_batch_norm,
    fold_pad_into_conv,
    conv1d_as_conv2d,
    lower_clamp,
    lower_full_reductions,
    lower_scalar_operands,
    lower_unfold,
    lower_fft,
    fold_constants,
    eliminate_dead_code,
)


def run_passes(gm: "torch.fx.GraphModule", passes: tuple[Pass, ...] = DEFAULT_PASSES) -> "torch.fx.GraphModule":
    """Runs `passes` in order, checking the graph after each."""
    for p in passes:
        gm = p(gm)
        gm.graph.lint()
    gm.recompile()
    return gm


__all__ = [
    "DEFAULT_PASSES",
    "conv1d_as_conv2d",
    "eliminate_dead_code",
    "fold_batch_norm",
    "fold_constants",
    "fold_pad_into_conv",
    "gather_quantized_embeddings",
    "lower_clamp",
    "lower_fft",
    "lower_full_reductions",
    "pack_int4_weights",
    "lower_scalar_operands",
    "lower_unfold",
    "remove_asserts",
    "remove_noops",
    "run_passes",
]
