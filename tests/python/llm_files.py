"""Small Llama-family GGUF files for the tests, written from a Hugging
Face LlamaForCausalLM the way llama.cpp's converter writes them (query and
key rows permuted for rotary embeddings on pairs, weights quantized by the
`gguf` package); the HF model is then given the values the file holds, so
that both compute with the same weights.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import gguf
import transformers

from hf_vocab import vocab_of

Q = gguf.GGMLQuantizationType

ROPE_THETA = 10000.0


def hf_llama(tied: bool, seed: int = 0, init_std: float = 0.02, vocab: int = 128,
             layers: int = 2) -> transformers.LlamaForCausalLM:
    """A Llama of `layers` layers, 4 heads over 2 kv heads of 16, vocabulary 128. Its
    weights are normal with init_std (HF's default 0.02 makes a model
    whose greedy continuations repeat one token; 0.15 one whose
    continuations depend on the context)."""
    cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=layers,
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


def write_gguf(model, path: Path, fmt: str, arch: str = "llama", bpe: "Bpe | None" = None) -> None:
    """model's weights as a GGUF file, the 2-D ones in `fmt`; then the HF
    model's weights are set to what the file holds (the dequantized
    values), so that both compute with the same weights. The tokenizer is
    `bpe` (its vocabulary the model's), else tokens "<t0>", "<t1>", ...
    without merges."""
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
    if bpe is not None:
        assert len(bpe.tokens) == cfg.vocab_size, (len(bpe.tokens), cfg.vocab_size)
        bpe.add_to(w)
    else:
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


CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's 2026, and we've 12,345 apples!",
    "Ünïcödé tëxt, ça va? Grüße aus Köln — 東京は晴れ。 Emoji: 🦊🐶🎉 and tabs\tand\nnewlines  double  spaces",
    "def f(x):\n    return x * 2  # code, with indentation\n\n\nprint(f(21))",
    "Numbers 3.14159 and 1000000 and 0x1F; it'll be fine, they'd say; I'm here, you're there.",
] * 20

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


@dataclass
class Bpe:
    """A byte-level BPE vocabulary as GGUF holds it."""

    hf: object  # the Hugging Face tokenizers.Tokenizer it was trained as
    tokens: list[str]
    types: list[int]
    merges: list[str]
    chat_template: str | None = None

    def add_to(self, w) -> None:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(self.tokens)
        w.add_token_types(self.types)
        w.add_token_merges(self.merges)
        w.add_bos_token_id(self.tokens.index("<|im_start|>"))
        w.add_eos_token_id(self.tokens.index("<|im_end|>"))
        if self.chat_template:
            w.add_chat_template(self.chat_template)


def trained_bpe(vocab: int = 600, chat_template: str | None = None) -> Bpe:
    """A byte-level BPE of `vocab` tokens trained on CORPUS with Hugging Face
    tokenizers (the "smollm" pre-tokenizer: single digits, then GPT-2's
    regex), three special tokens (<|endoftext|>, <|im_start|>, <|im_end|>:
    BOS is <|im_start|> and EOS <|im_end|>, as in SmolLM2)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    hf.train_from_iterator(CORPUS, trainer)
    tokens, types, merges = vocab_of(hf, ("<|endoftext|>", "<|im_start|>", "<|im_end|>"))
    return Bpe(hf, tokens, types, merges, chat_template)
