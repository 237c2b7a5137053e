"""Small Llama-family GGUF files for the tests, written from a Hugging
Face LlamaForCausalLM the way llama.cpp's converter writes them (query and
key rows permuted for rotary embeddings on pairs, weights quantized by the
`gguf` package); the HF model is then given the values the file holds, so
that both compute with the same weights.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import gguf
import transformers

Q = gguf.GGMLQuantizationType

ROPE_THETA = 10000.0


def hf_llama(tied: bool, seed: int = 0, init_std: float = 0.02) -> transformers.LlamaForCausalLM:
    """A 2-layer Llama, 4 heads over 2 kv heads of 16, vocabulary 128. Its
    weights are normal with init_std (HF's default 0.02 makes a model
    whose greedy continuations repeat one token; 0.15 one whose
    continuations depend on the context)."""
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                   rms_norm_eps=1e-5, rope_theta=ROPE_THETA, tie_word_embeddings=tied,
                                   initializer_range=init_std)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # norm weights away from 1, so that a missing one shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
    return model


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter: each head's rows (first half, second half)
    interleaved, for rotary embeddings on consecutive pairs."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
          "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
          "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}


def tokens_section(w, vocab: int) -> None:
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    tokens = [f"<t{i}>" for i in range(vocab)]
    w.add_token_list(tokens)
    w.add_token_types([1] * vocab)
    w.add_token_merges([])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def write_gguf(model, path: Path, fmt: str, arch: str = "llama") -> None:
    """model's weights as a GGUF file, the 2-D ones in `fmt`; then the HF
    model's weights are set to what the file holds (the dequantized
    values), so that both compute with the same weights."""
    cfg = model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("tiny")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_vocab_size(cfg.vocab_size)
    tokens_section(w, cfg.vocab_size)
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    out: dict[str, tuple[np.ndarray, str]] = {"token_embd.weight": (sd["model.embed_tokens.weight"], fmt),
                                              "output_norm.weight": (sd["model.norm.weight"], "F32")}
    if not cfg.tie_word_embeddings:
        out["output.weight"] = (sd["lm_head.weight"], fmt)
    for i in range(cfg.num_hidden_layers):
        for hf, gg in _NAMES.items():
            t = sd[f"model.layers.{i}.{hf}.weight"]
            if gg == "attn_q":
                t = _permute(t, cfg.num_attention_heads)
            elif gg == "attn_k":
                t = _permute(t, cfg.num_key_value_heads)
            out[f"blk.{i}.{gg}.weight"] = (t, "F32" if t.ndim == 1 else fmt)
    held = {}
    for name, (t, f) in out.items():
        data = gguf.quants.quantize(t, getattr(Q, f))
        w.add_tensor(name, data, raw_dtype=getattr(Q, f))
        held[name] = gguf.quants.dequantize(data, getattr(Q, f)).astype(np.float32).reshape(t.shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    # the HF model gets the file's values back (un-permuted)
    new = {"model.embed_tokens.weight": held["token_embd.weight"], "model.norm.weight": held["output_norm.weight"]}
    if not cfg.tie_word_embeddings:
        new["lm_head.weight"] = held["output.weight"]
    for i in range(cfg.num_hidden_layers):
        for hf, gg in _NAMES.items():
            t = held[f"blk.{i}.{gg}.weight"]
            if gg in ("attn_q", "attn_k"):  # the inverse permutation
                heads = cfg.num_attention_heads if gg == "attn_q" else cfg.num_key_value_heads
                t = t.reshape(heads, t.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(t.shape)
            new[f"model.layers.{i}.{hf}.weight"] = t
    with torch.no_grad():
        for k, v in new.items():
            model.get_parameter(k).copy_(torch.from_numpy(v))
