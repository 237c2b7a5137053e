"""GGUF's weight formats, as llama.cpp stores them, and the op that reads them.

A GGUF weight of shape [N, K] (N rows of K elements; GGUF lists it as
ne = [K, N]) is N rows of K / block elements blocks each, one block after
the other, every row the same number of bytes:

    format  block  bytes  one block                            element j of the block
    F32     1      4      float32                               the float
    F16     1      2      float16                              the half, as float
    Q8_0    32     34     d: f16, q[32]: int8                   d * q[j]
    Q4_0    32     18     d: f16, q[16]: two 4-bit values each  d * (nib(j) - 8)
    Q4_1    32     20     d: f16, m: f16, q[16]                 d * nib(j) + m

where nib(j) is the low half of q[j] for j < 16 and the high half of
q[j - 16] for j >= 16. Tern keeps these bytes as they are: the file holds
the same bits llama.cpp reads, and `tern::gguf_dequantize` (defined here,
with its eager implementation the reference every kernel is tested
against; kernels/portable/op_gguf.cpp is the portable one) turns them into
float32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class BlockFormat:
    name: str
    code: int  # GGML's type number (ggml.h: enum ggml_type), the op's `format` argument
    block: int  # elements a block
    bytes: int  # bytes a block


FORMATS = {f.name: f for f in (
    BlockFormat("F32", 0, 1, 4),
    BlockFormat("F16", 1, 1, 2),
    BlockFormat("Q4_0", 2, 32, 18),
    BlockFormat("Q4_1", 3, 32, 20),
    BlockFormat("Q8_0", 8, 32, 34),
)}
BY_CODE = {f.code: f for f in FORMATS.values()}


def row_bytes(fmt: BlockFormat, k: int) -> int:
    """Bytes of one row of k elements (k a multiple of the block)."""
    if k % fmt.block:
        raise ValueError(f"a {fmt.name} row of {k} elements: {fmt.name} needs a multiple of {fmt.block}")
    return k // fmt.block * fmt.bytes


def dequantize_numpy(rows: np.ndarray, fmt: BlockFormat, k: int) -> np.ndarray:
    """uint8 [..., row_bytes] -> float32 [..., k], by the table above."""
    lead = rows.shape[:-1]
    if rows.shape[-1] != row_bytes(fmt, k):
        raise ValueError(f"{fmt.name} rows of {k} elements take {row_bytes(fmt, k)} bytes, not {rows.shape[-1]}")
    raw = np.ascontiguousarray(rows, dtype=np.uint8)
    if fmt.name == "F32":
        return raw.view(np.float32).reshape(*lead, k).copy()
    if fmt.name == "F16":
        return raw.view(np.float16).astype(np.float32).reshape(*lead, k)
    b = raw.reshape(*lead, k // fmt.block, fmt.bytes)
    d = b[..., 0:2].copy().view(np.float16).astype(np.float32)  # [..., blocks, 1]
    if fmt.name == "Q8_0":
        q = b[..., 2:].view(np.int8).astype(np.float32)
        return (d * q).reshape(*lead, k)
    qs = b[..., 4:] if fmt.name == "Q4_1" else b[..., 2:]
    nib = np.concatenate([qs & 0xF, qs >> 4], axis=-1).astype(np.float32)  # [..., blocks, 32]
    if fmt.name == "Q4_0":
        return (d * (nib - 8.0)).reshape(*lead, k)
    m = b[..., 2:4].copy().view(np.float16).astype(np.float32)
    return (d * nib + m).reshape(*lead, k)


# ---- the op --------------------------------------------------------------

_SCHEMA = "gguf_dequantize(Tensor rows, int format, int k) -> Tensor"


def gguf_dequantize_op() -> "torch._ops.OpOverload":
    """torch.ops.tern.gguf_dequantize.default, defined on first use:
    (rows uint8 [..., row_bytes], format: a FORMATS code, k) -> float32 [..., k]."""
    from tern.custom_ops import define

    return define("gguf_dequantize", _SCHEMA, _dequantize, _dequantize_meta)


def _format(code: int) -> BlockFormat:
    if code not in BY_CODE:
        raise ValueError(f"tern::gguf_dequantize: format {code} is none of "
                         f"{', '.join(f'{f.name} ({f.code})' for f in FORMATS.values())}")
    return BY_CODE[code]


def _dequantize(rows: "torch.Tensor", format: int, k: int) -> "torch.Tensor":
    """The eager implementation: dequantize_numpy on the rows' bytes."""
    import torch

    fmt = _format(format)
    if rows.dtype != torch.uint8 or rows.dim() < 1 or rows.shape[-1] != row_bytes(fmt, k):
        raise ValueError(f"tern::gguf_dequantize: {fmt.name} rows of {k} elements are uint8 [..., "
                         f"{row_bytes(fmt, k)}], not {rows.dtype} {list(rows.shape)}")
    return torch.from_numpy(dequantize_numpy(rows.detach().cpu().numpy(), fmt, k))


def _dequantize_meta(rows: "torch.Tensor", format: int, k: int) -> "torch.Tensor":
    import torch

    _format(format)
    return rows.new_empty((*rows.shape[:-1], k), dtype=torch.float32)
