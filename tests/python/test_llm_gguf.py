"""tern.llm's GGUF import (issue 27): the block formats, the Llama module
from_gguf builds and the byte-level BPE tokenizer, on small GGUF files
written here.

Oracles: the `gguf` package's own dequantization for the block formats;
Hugging Face's LlamaForCausalLM for the module (the GGUF file is written
from its weights the way llama.cpp's converter writes them: query and key
rows permuted for rotary embeddings on pairs, weights quantized by the
`gguf` package, the HF model then given the dequantized values); Hugging
Face's `tokenizers` for the tokenizer (a byte-level BPE trained here, with
the "smollm" pre-tokenizer's digit split).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")

from compare import assert_close  # noqa: E402
from tern.llm import GGUFError, from_gguf, read_gguf, tokenizer_of  # noqa: E402
from tern.llm.blocks import FORMATS, dequantize_numpy, gguf_dequantize_op  # noqa: E402

Q = gguf.GGMLQuantizationType


# ---- block formats --------------------------------------------------------


@pytest.mark.parametrize("fmt", ["F32", "F16", "Q8_0", "Q4_0", "Q4_1"])
def test_block_formats_dequantize_as_the_gguf_package_does(fmt: str) -> None:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((7, 96)) * rng.uniform(0.01, 3.0, (7, 1))).astype(np.float32)
    w[3, :32] = 0.0  # a block of zeros (scale 0)
    rows = gguf.quants.quantize(w, getattr(Q, fmt)).view(np.uint8).reshape(7, -1)
    want = gguf.quants.dequantize(rows, getattr(Q, fmt)).astype(np.float32).reshape(7, 96)
    got = dequantize_numpy(rows, FORMATS[fmt], 96)
    np.testing.assert_array_equal(got, want)
    op = gguf_dequantize_op()(torch.from_numpy(rows.copy()), FORMATS[fmt].code, 96)
    np.testing.assert_array_equal(op.numpy(), want)
    # the round trip stays within a tenth of the largest weight (4-bit: half a step of a block's scale)
    assert_close(want, w, rtol=0.0, atol=0.1 * float(np.abs(w).max()), what="the quantized weights")


def test_the_dequantize_op_refuses_rows_of_the_wrong_size() -> None:
    with pytest.raises(ValueError, match=r"Q4_0 rows of 64 elements are uint8 \[\.\.\., 36\]"):
        gguf_dequantize_op()(torch.zeros(2, 30, dtype=torch.uint8), FORMATS["Q4_0"].code, 64)
    with pytest.raises(ValueError, match="format 6 is none of"):
        gguf_dequantize_op()(torch.zeros(2, 30, dtype=torch.uint8), 6, 64)


# ---- a tiny Llama written as llama.cpp's converter writes it ---------------


_ROPE_THETA = 10000.0


def _hf_llama(tied: bool, seed: int = 0) -> "transformers.LlamaForCausalLM":
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                   rms_norm_eps=1e-5, rope_theta=_ROPE_THETA, tie_word_embeddings=tied)
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


def _tokens_section(w, vocab: int) -> None:
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    tokens = [f"<t{i}>" for i in range(vocab)]
    w.add_token_list(tokens)
    w.add_token_types([1] * vocab)
    w.add_token_merges([])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def _write_gguf(model, path: Path, fmt: str, arch: str = "llama") -> None:
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
    w.add_rope_freq_base(_ROPE_THETA)
    w.add_vocab_size(cfg.vocab_size)
    _tokens_section(w, cfg.vocab_size)
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


@pytest.mark.parametrize("fmt,tied", [("F32", True), ("F16", False), ("Q8_0", True), ("Q4_0", False),
                                      ("Q4_1", True)])
def test_from_gguf_gives_the_logits_of_hugging_face_llama(fmt: str, tied: bool, tmp_path: Path) -> None:
    hf = _hf_llama(tied)
    path = tmp_path / f"tiny-{fmt}.gguf"
    _write_gguf(hf, path, fmt)
    model = from_gguf(path)
    assert model.tied == tied
    assert model.blocks[0].attn_q.format.name == fmt
    ids = torch.tensor([[5, 17, 99, 3, 64, 1, 127, 40, 8, 33, 21]])
    with torch.no_grad():
        want = hf(ids).logits
        got = model(ids)
    assert got.shape == want.shape == (1, 11, 128)
    assert_close(got, want)
    assert got.std() > 0.1, "the logits are not flat"


def test_the_module_keeps_the_files_bytes(tmp_path: Path) -> None:
    hf = _hf_llama(True)
    path = tmp_path / "tiny.gguf"
    _write_gguf(hf, path, "Q4_1")
    model, f = from_gguf(path), read_gguf(path)
    np.testing.assert_array_equal(model.blocks[1].ffn_down.rows.numpy(), f.tensors["blk.1.ffn_down.weight"].rows)
    assert model.blocks[1].ffn_down.rows.dtype == torch.uint8


def test_another_architecture_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "gpt2.gguf"
    w = gguf.GGUFWriter(str(path), "gpt2")
    _tokens_section(w, 8)
    w.add_tensor("token_embd.weight", np.zeros((8, 32), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(GGUFError, match=r"architecture 'gpt2' is not supported \(tern.llm reads llama\)"):
        from_gguf(path)


def test_a_weight_in_an_unread_format_is_named(tmp_path: Path) -> None:
    hf = _hf_llama(True)
    path = tmp_path / "tiny.gguf"
    _write_gguf(hf, path, "Q5_0")
    with pytest.raises(GGUFError, match=r"tensor token_embd.weight is Q5_0; tern.llm reads F32, F16, Q4_0, Q4_1, Q8_0"):
        from_gguf(path)


def test_a_file_that_is_not_gguf_is_named(tmp_path: Path) -> None:
    path = tmp_path / "junk.gguf"
    path.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(GGUFError, match="junk.gguf: not a GGUF file"):
        from_gguf(path)


# ---- the tokenizer ---------------------------------------------------------

_CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's 2026, and we've 12,345 apples!",
    "Ünïcödé tëxt, ça va? Grüße aus Köln — 東京は晴れ。 Emoji: 🦊🐶🎉 and tabs\tand\nnewlines  double  spaces",
    "def f(x):\n    return x * 2  # code, with indentation\n\n\nprint(f(21))",
    "Numbers 3.14159 and 1000000 and 0x1F; it'll be fine, they'd say; I'm here, you're there.",
] * 20


def _trained_tokenizer(tmp_path: Path):
    """A byte-level BPE trained on _CORPUS with Hugging Face tokenizers (the
    "smollm" pre-tokenizer: single digits, then GPT-2's regex), two special
    tokens; and the same vocabulary in a GGUF file."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    hf.train_from_iterator(_CORPUS, trainer)
    vocab = hf.get_vocab()
    tokens = [""] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    import json

    merges = json.loads(hf.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    types = [3 if t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>") else 1 for t in tokens]
    path = tmp_path / "tok.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_tensor("token_embd.weight", np.zeros((len(tokens), 32), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return hf, path


_TEXTS = [
    "Hello world",
    "The quick brown fox, 12345 apples and 3.14!",
    "  leading and trailing spaces  ",
    "Ünïcödé — 東京は晴れ 🦊🐶🎉 (emoji the corpus has) and 🚀 (one it has not)",
    "tabs\tand\nnewlines\n\n\nand\r\nwindows",
    "it's they'd I'm you're we've she'll",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "",
    "x",
    "😀" * 3 + "0123456789" * 2,
]


def test_tokenizer_gives_hugging_face_tokenizers_ids(tmp_path: Path) -> None:
    hf, path = _trained_tokenizer(tmp_path)
    tok = tokenizer_of(path)
    for text in _TEXTS:
        want = hf.encode(text).ids
        got = tok.encode(text)
        assert got == want, f"{text!r}: {got} != {want}"
        assert tok.decode(got) == text, f"{text!r} does not round-trip"
    assert len(tok.encode(_TEXTS[1])) < len(_TEXTS[1].encode()), "merges were applied"


def test_special_tokens_are_text_when_asked(tmp_path: Path) -> None:
    _, path = _trained_tokenizer(tmp_path)
    tok = tokenizer_of(path)
    ids = tok.encode("<|im_start|>hi", special=True)
    assert ids[0] == tok.ids["<|im_start|>"]
    plain = tok.encode("<|im_start|>hi", special=False)
    assert tok.ids["<|im_start|>"] not in plain and tok.decode(plain) == "<|im_start|>hi"


# ---- export: the runtime reads the blocks ----------------------------------


@pytest.mark.parametrize("fmt,partitioners", [("Q8_0", "exact"), ("Q4_0", "exact"), ("Q4_1", "exact"), ("F16", None),
                                               ("Q4_1", ()), ("Q4_0", None)],
                         ids=["Q8_0", "Q4_0", "Q4_1", "F16", "Q4_1-portable", "Q4_0-block-linear"])
def test_the_exported_module_gives_eager_logits(fmt: str, partitioners, tmp_path: Path) -> None:
    """The cpu backend with CpuOptions(block_linear=False) ("exact": the
    blocks dequantized by the portable kernel, the linear layers in float
    as eager computes them) and without the backend: eager's logits to
    float32 rounding. By default the linear layers are BlockLinear ops,
    which quantize their inputs to int8 blocks of 32 (test_cpu_blocklinear.py):
    within 3 % of the logits' scale."""
    import tern
    from tern.backends.cpu import CpuOptions, CpuPartitioner

    rtol = 0.03 if partitioners is None and fmt != "F16" else 1e-4
    if partitioners == "exact":
        partitioners = [CpuPartitioner(options=CpuOptions(block_linear=False))]
    hf = _hf_llama(tied=fmt != "Q4_0")
    path = tmp_path / f"tiny-{fmt}.gguf"
    _write_gguf(hf, path, fmt)
    model = from_gguf(path)
    ids = torch.tensor([[5, 17, 99, 3, 64, 1, 127, 40]])
    out = tmp_path / "tiny.tern"
    program = tern.export(model, (ids,), partitioners=partitioners)
    assert "tern::gguf_dequantize" in dict(program.op_counts)
    program.save(str(out))
    with torch.no_grad():
        want = model(ids)
    (got,) = tern.load(str(out), threads=1)(ids.numpy())
    assert_close(got, want, rtol=rtol)
    size = out.stat().st_size
    held = sum(w.rows.nbytes for w in read_gguf(path).tensors.values())
    assert size < 1.1 * held + 65536, f"the file ({size} B) holds the blocks, not float weights ({held} B of blocks)"
