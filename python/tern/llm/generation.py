"""A language model as one .tern file, and generation from it.

    module = tern.llm.from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    tern.llm.export(module, max_context=1024).save("smollm2.tern")

The file holds one method, "forward", the step of tern.llm.decoder.LlamaDecoder:
(tokens int64 [1, T], positions int64 [T], mask float32 [T, L]) -> the logits
of the step's last token, float32 [1, vocab], with the KV cache as the
method's state. T is dynamic up to max_tokens_per_step (a prompt is one
step of T tokens, or several), L up to max_context; a generated token is
a step of T = 1. One method serves the prompt and each new token: the
weights are stored once and the cache needs no sharing between methods
(see docs/llm.md on why there is no separate prefill method).

Beside it the file holds what generation needs (tern.llm.file_meta): the
tokenizer, the chat format and the generation defaults.
"""
from __future__ import annotations

from typing import Any, Mapping

from tern.llm.llama import LlamaGGUF

# The method's input names, in order (tern.llm.decoder.LlamaDecoder.forward).
INPUTS = ("tokens", "positions", "mask")


def export(module: LlamaGGUF, max_context: int = 1024, *, max_tokens_per_step: int = 128, fast: bool = True,
           metadata: Mapping[str, bytes] | None = None, **defaults: Any):
    """The generation program of `module` (tern.llm.from_gguf) -> tern.Program.

    max_context: the most tokens a sequence holds (prompt and generated; the
    KV cache is planned for it: 2 * layers * max_context * kv_heads *
    head_dim floats). max_tokens_per_step: the most prompt tokens one step
    takes (longer prompts take several steps). fast=True: the cpu backend
    reads the weight blocks in place and quantizes activations to int8 per
    block of 32, as llama.cpp does; fast=False: weights dequantized to float
    each step and float arithmetic throughout, the same values as eager
    PyTorch (for checking, not for speed). `defaults` (temperature, top_k,
    top_p, ...) are stored as the file's generation defaults.
    """
    import torch

    import tern
    from tern.backends.cpu import CpuOptions, CpuPartitioner
    from tern.llm.decoder import LlamaDecoder, causal_mask

    if not isinstance(module, LlamaGGUF):
        raise TypeError(f"tern.llm.export takes the module tern.llm.from_gguf builds, not {type(module).__name__}")
    step = LlamaDecoder(module, max_context, max_tokens_per_step).eval()
    t = min(3, step.max_tokens_per_step)
    positions = torch.arange(t)
    args = (torch.zeros(1, t, dtype=torch.int64), positions, causal_mask(positions, t))
    dim_t = torch.export.Dim("T", min=1, max=step.max_tokens_per_step) if step.max_tokens_per_step > 1 else None
    dim_l = torch.export.Dim("L", min=1, max=max_context)
    dynamic = ({1: dim_t}, {0: dim_t}, {0: dim_t, 1: dim_l}) if dim_t is not None else (None, None, {1: dim_l})
    options = CpuOptions(block_linear=fast) if "block_linear" in CpuOptions.__dataclass_fields__ else CpuOptions()
    entries = dict(metadata or {})
    entries.update(_generation_metadata(module, max_context, defaults))
    return tern.export(step, args, dynamic_shapes=dynamic, partitioners=[CpuPartitioner(options)], metadata=entries)


def _generation_metadata(module: LlamaGGUF, max_context: int, defaults: Mapping[str, Any]) -> dict[str, bytes]:
    from tern.llm.file_meta import llm_metadata

    return llm_metadata(module.tokenizer, max_context, **defaults)
