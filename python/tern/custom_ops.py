"""Tern's own ops in the `tern::` namespace of torch.library (a file names
them in its op table beside the ATen ones; each has a portable kernel in
kernels/portable/ops.def): tern::dequantize_affine_int4
(passes/pack_int4.py), tern::gguf_dequantize (llm/blocks.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import torch

_LIBS: list[object] = []  # a registration lives as long as its library object


def define(name: str, schema: str, eager: Callable, meta: Callable) -> "torch._ops.OpOverload":
    """torch.ops.tern.<name>.default, defined on first use: `schema` (its
    signature, starting with `name`), `eager` its implementation on real
    tensors (the reference for the kernels), `meta` its output's shape and
    dtype for tracing."""
    import torch

    if not hasattr(torch.ops.tern, name):
        lib = torch.library.Library("tern", "FRAGMENT")
        lib.define(schema)
        lib.impl(name, eager, "CompositeExplicitAutograd")
        lib.impl(name, meta, "Meta")
        _LIBS.append(lib)
    return getattr(torch.ops.tern, name).default
