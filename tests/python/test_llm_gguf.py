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


from llm_files import Q, hf_llama as _hf_llama, tokens_section as _tokens_section, trained_bpe, write_gguf as _write_gguf  # noqa: E402,F401,E501


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

def _trained_tokenizer(tmp_path: Path):
    """A byte-level BPE trained with Hugging Face tokenizers (llm_files.trained_bpe),
    and the same vocabulary in a GGUF file."""
    bpe = trained_bpe()
    path = tmp_path / "tok.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    bpe.add_to(w)
    w.add_tensor("token_embd.weight", np.zeros((len(bpe.tokens), 32), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return bpe.hf, path


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
