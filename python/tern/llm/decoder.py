"""The Llama of a GGUF file as one step of generation, with its KV cache as
state: the module tern.llm.export writes to a .tern file.

    step = LlamaDecoder(tern.llm.from_gguf(path), max_context=512, max_tokens_per_step=128)
    logits = step(tokens, positions, mask)   # the logits of the last of the step's tokens

One call takes T new tokens (tokens int64 [1, T]) at absolute positions
(positions int64 [T]: where each token sits in the sequence, below
max_context) and an additive attention mask float32 [T, L] over the first L
cache positions (0 where token i may attend position j, -inf where not;
causal attention is mask[i, j] = 0 for j <= positions[i]). It writes the
tokens' keys and values into the cache at their positions, attends over
cache positions 0 .. L - 1 and returns the logits of the step's last token,
float32 [1, vocab]. A prompt is one call with T = its length (or several,
max_tokens_per_step tokens each); each generated token is one call with
T = 1. The cache is the module's state: one buffer per layer for keys and
one for values, [1, kv_heads, max_context + 1, head_dim] (a head's positions
one after the other: the attention reads each head's keys in one run),
zero until written, kept by the loaded method between calls
(tern.Module.reset_state starts a new sequence).

The arithmetic is LlamaGGUF's (tern.llm.llama): the same weights, the same
rotary angles (position * inv_freq), so that a step's logits equal the full
module's at those positions.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tern.llm.llama import KVCache, LlamaGGUF


class LlamaDecoder(nn.Module):
    def __init__(self, model: LlamaGGUF, max_context: int, max_tokens_per_step: int | None = None,
                 layers: int | None = None) -> None:
        """layers: run the first `layers` blocks only (all by default):
        tern.llm.export traces two and repeats the second (tern.repeat_layers)."""
        super().__init__()
        cfg = model.config
        if max_context < 2:
            raise ValueError(f"max_context is {max_context}; a decoder needs at least 2 positions")
        if max_context > cfg.context:
            raise ValueError(f"max_context {max_context} is beyond the model's context length ({cfg.context})")
        self.model, self.config = model, cfg
        self.max_context = max_context
        self.max_tokens_per_step = min(max_tokens_per_step or max_context, max_context)
        self.layers = cfg.layers if layers is None else layers
        if not 1 <= self.layers <= cfg.layers:
            raise ValueError(f"layers is {layers}; the model has {cfg.layers}")
        # one row past max_context, never written or read: with exactly
        # max_context rows, the slice [:, :, :L] would be the whole cache at
        # L = max_context and a view of it below, and torch.export refuses to
        # trace a choice of layout that depends on L
        shape = (1, cfg.kv_heads, max_context + 1, cfg.head_dim)
        for i in range(self.layers):
            self.register_buffer(f"k_cache_{i}", torch.zeros(shape))
            self.register_buffer(f"v_cache_{i}", torch.zeros(shape))

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m, cfg = self.model, self.config
        t, length = tokens.shape[1], mask.shape[1]
        x = m.token_embd.gather(tokens).reshape(1, t, cfg.dim)
        cos, sin = m.rope(positions)
        mask = mask[None, None]
        for i in range(self.layers):  # each layer's work inside its block (tern.repeat_layers relies on it)
            cache = KVCache(getattr(self, f"k_cache_{i}"), getattr(self, f"v_cache_{i}"), positions, length, mask)
            x = m.blocks[i](x, cos, sin, cache)
        return F.linear(m.output_norm(x[:, t - 1]), m.output())


    def layer_names(self, i: int) -> list[str]:
        """The names of layer i's tensors (its block's weights, its cache), in
        the same order for every layer."""
        blk = self.model.blocks[i]
        own = [f"model.blocks.{i}.{n}" for n, _ in (*blk.named_parameters(), *blk.named_buffers())]
        return own + [f"k_cache_{i}", f"v_cache_{i}"]


def causal_mask(positions: torch.Tensor, length: int) -> torch.Tensor:
    """float32 [T, length]: 0 where cache position j <= positions[i], else -inf."""
    j = torch.arange(length)[None, :]
    return torch.where(j <= positions[:, None], 0.0, float("-inf")).to(torch.float32)
