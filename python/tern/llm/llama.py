"""The Llama family as a PyTorch module over a GGUF file's weights, kept in
the file's formats (tern.llm.blocks): each weight is its rows of blocks, a
uint8 buffer, read through tern::gguf_dequantize where it is used.

    model = tern.llm.from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    logits = model(torch.tensor([[1, 2, 3]]))        # [1, 3, vocab]

The arithmetic is llama.cpp's for general.architecture "llama": RMSNorm
(x / sqrt(mean(x^2) + eps) * w), rotary embeddings on consecutive pairs of
features (GGUF stores the query and key weights permuted for that form),
grouped-query attention with a causal mask, SwiGLU (down(silu(gate(x)) *
up(x))), a final norm and the output layer (the token embedding's rows
when the file has no output.weight).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tern.llm.blocks import gguf_dequantize_op
from tern.llm.gguf_file import GGUFError, GGUFModel, LlamaConfig, Weight


class GGUFWeight(nn.Module):
    """A weight [N, K] as its GGUF rows (uint8 [N, row_bytes], a buffer)."""

    def __init__(self, w: Weight) -> None:
        super().__init__()
        self.format, self.k = w.format, w.shape[1]
        self.register_buffer("rows", torch.from_numpy(w.rows.copy()))

    def forward(self) -> torch.Tensor:
        return gguf_dequantize_op()(self.rows, self.format.code, self.k)

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows `ids` only, dequantized: an embedding lookup."""
        return gguf_dequantize_op()(self.rows.index_select(0, ids.reshape(-1)), self.format.code, self.k)

    def extra_repr(self) -> str:
        return f"{self.format.name}, [{self.rows.shape[0]}, {self.k}]"


class RMSNorm(nn.Module):
    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotates features (2i, 2i + 1) of x [B, T, H, D] by angle i of each
    position: cos, sin [T, D / 2]."""
    pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack([a * c - b * s, a * s + b * c], dim=-1).reshape(x.shape)


_NORMS = ("attn_norm", "ffn_norm")  # a block's norm weights (F32 rows, read as floats)
_MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")  # kept as blocks


def expected_tensors(cfg: LlamaConfig) -> dict[str, tuple[tuple[int, int], bool]]:
    """Each tensor a Llama of `cfg` reads: its (rows, row length) and
    whether the file must have it (output.weight: the embedding's rows when
    absent; rope_freqs.weight: Llama 3's per-frequency factors)."""
    q, kv = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    out = {"token_embd.weight": ((cfg.vocab, cfg.dim), True), "output_norm.weight": ((1, cfg.dim), True),
           "output.weight": ((cfg.vocab, cfg.dim), False), "rope_freqs.weight": ((1, cfg.head_dim // 2), False)}
    shapes = {"attn_norm": (1, cfg.dim), "ffn_norm": (1, cfg.dim), "attn_q": (q, cfg.dim), "attn_k": (kv, cfg.dim),
              "attn_v": (kv, cfg.dim), "attn_output": (cfg.dim, q), "ffn_gate": (cfg.ffn, cfg.dim),
              "ffn_up": (cfg.ffn, cfg.dim), "ffn_down": (cfg.dim, cfg.ffn)}
    for i in range(cfg.layers):
        out.update({f"blk.{i}.{n}.weight": (shapes[n], True) for n in _NORMS + _MATRICES})
    return out


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig, w: dict[str, Weight], i: int, norm) -> None:
        super().__init__()
        p = f"blk.{i}."
        self.cfg = cfg
        for name in _NORMS:
            setattr(self, name, norm(p + name + ".weight"))
        for name in _MATRICES:
            setattr(self, name, GGUFWeight(w[p + name + ".weight"]))

    def structure(self) -> tuple:
        """What a trace of the block depends on besides its weights' values:
        blocks of equal structure trace to the same graph."""
        mats = tuple((n, getattr(self, n).format.code, tuple(getattr(self, n).rows.shape)) for n in _MATRICES)
        return mats + tuple((n, tuple(getattr(self, n).weight.shape)) for n in _NORMS)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: "KVCache | None" = None
                ) -> torch.Tensor:
        """x [B, T, dim] at the positions cos, sin [T, head_dim / 2] rotate
        by. Without a cache: causal attention over x's own T positions. With
        one (batch 1): the step's keys and values are written into it at
        cache.positions and the step attends over its first cache.length
        positions under cache.mask."""
        cfg = self.cfg
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q = F.linear(h, self.attn_q()).reshape(b, t, cfg.heads, cfg.head_dim)
        k = F.linear(h, self.attn_k()).reshape(b, t, cfg.kv_heads, cfg.head_dim)
        v = F.linear(h, self.attn_v()).reshape(b, t, cfg.kv_heads, cfg.head_dim)
        q, k = rope_pairs(q, cos, sin), rope_pairs(k, cos, sin)
        gqa = cfg.kv_heads != cfg.heads
        if cache is None:
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True, enable_gqa=gqa)
        else:
            cache.keys.index_copy_(2, cache.positions, k.transpose(1, 2))
            cache.values.index_copy_(2, cache.positions, v.transpose(1, 2))
            keys, values = cache.keys[:, :, :cache.length], cache.values[:, :, :cache.length]  # [1, kv_heads, L, d]
            o = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, attn_mask=cache.mask, enable_gqa=gqa)
        x = x + F.linear(o.transpose(1, 2).reshape(b, t, cfg.heads * cfg.head_dim), self.attn_output())
        h = self.ffn_norm(x)
        return x + F.linear(F.silu(F.linear(h, self.ffn_gate())) * F.linear(h, self.ffn_up()), self.ffn_down())


@dataclass
class KVCache:
    """One layer's cache for a step (tern.llm.decoder): keys and values
    [1, kv_heads, rows >= max_context, head_dim], the step's positions int64 [T],
    the positions attended (0 .. length - 1) and the additive mask
    [1, 1, T, length]."""

    keys: torch.Tensor
    values: torch.Tensor
    positions: torch.Tensor
    length: int
    mask: torch.Tensor


class LlamaGGUF(nn.Module):
    """forward(tokens int64 [B, T]) -> logits float32 [B, T, vocab], for
    positions 0 .. T - 1."""

    def __init__(self, model: GGUFModel) -> None:
        super().__init__()
        cfg, w = model.config, model.tensors
        self.config, self.name = cfg, model.name
        self.tokenizer = model.tokenizer  # tern.llm.gguf_file.TokenizerData: what tern.llm.export stores
        expected = expected_tensors(cfg)
        missing = [n for n, (_, required) in expected.items() if required and n not in w]
        if missing:
            raise GGUFError(f"{model.path}: tensors missing for a {cfg.layers}-layer llama: {', '.join(missing[:5])}"
                            + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
        for name, (shape, _) in expected.items():
            if name in w and w[name].shape != shape:
                raise GGUFError(f"{model.path}: {name} is [{w[name].shape[0]}, {w[name].shape[1]}] (rows, row "
                                f"length); the hyperparameters make it [{shape[0]}, {shape[1]}]")

        def norm(name: str) -> RMSNorm:
            return RMSNorm(torch.from_numpy(w[name].dequantize().reshape(-1)), cfg.norm_eps)

        self.token_embd = GGUFWeight(w["token_embd.weight"])
        self.blocks = nn.ModuleList(Block(cfg, w, i, norm) for i in range(cfg.layers))
        self.output_norm = norm("output_norm.weight")
        self.tied = "output.weight" not in w
        self.output = self.token_embd if self.tied else GGUFWeight(w["output.weight"])
        inv = 1.0 / (cfg.rope_base ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim))
        if "rope_freqs.weight" in w:  # Llama 3's per-frequency factors: angle / factor
            inv = inv / torch.from_numpy(w["rope_freqs.weight"].dequantize().reshape(-1)).double()
        self.register_buffer("inv_freq", inv.float(), persistent=False)

    def rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin [T, head_dim / 2] of the angles position * inv_freq."""
        ang = positions.to(torch.float32)[:, None] * self.inv_freq[None, :]
        return ang.cos(), ang.sin()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        b, t = tokens.shape
        x = self.token_embd.gather(tokens).reshape(b, t, self.config.dim)
        cos, sin = self.rope(torch.arange(t))
        for blk in self.blocks:
            x = blk(x, cos, sin)
        return F.linear(self.output_norm(x), self.output())


def from_gguf(path) -> LlamaGGUF:
    """The PyTorch module of the Llama-family model in GGUF file `path`
    (eval mode, its weights in the file's formats). A file of another
    architecture, or with weights in formats other than F32, F16, Q8_0,
    Q4_0 and Q4_1, raises GGUFError naming them."""
    from tern.llm.gguf_file import read_gguf

    return LlamaGGUF(read_gguf(path)).eval()
