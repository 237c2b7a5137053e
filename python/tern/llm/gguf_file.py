"""A GGUF file's language model, as Tern reads it: the hyperparameters, the
weights (their bytes as stored) and the tokenizer, through the `gguf`
package's reader.

    f = read_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    f.config.layers, f.tensors["blk.0.attn_q.weight"].format.name, f.tokenizer.tokens[:3]

Only the Llama family is read (general.architecture "llama": RMSNorm,
rotary embeddings on pairs of features, grouped-query attention, SwiGLU);
another architecture, or a weight in a format other than F32, F16, Q8_0,
Q4_0 and Q4_1, is a GGUFError that names it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tern.llm.blocks import FORMATS, BlockFormat, row_bytes

ARCHITECTURES = ("llama",)


class GGUFError(ValueError):
    """A GGUF file Tern cannot read: the message names the file and what."""


@dataclass
class LlamaConfig:
    vocab: int
    dim: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    context: int
    norm_eps: float
    rope_base: float
    head_dim: int


@dataclass
class Weight:
    """One tensor: rows [N, row_bytes] uint8 (a view of the file where the
    reader maps it), format, and its shape in elements (N, K); 1-D
    tensors are (1, K)."""

    name: str
    format: BlockFormat
    shape: tuple[int, int]
    rows: np.ndarray

    def dequantize(self) -> np.ndarray:
        from tern.llm.blocks import dequantize_numpy

        return dequantize_numpy(self.rows, self.format, self.shape[1])


@dataclass
class TokenizerData:
    """tokenizer.ggml.*: the model ("gpt2": byte-level BPE), the pre-tokenizer
    name, the tokens (id -> text, bytes as GPT-2's printable characters), their
    types, the merges ("a b" in rank order) and the special ids."""

    model: str
    pre: str
    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    bos: int | None
    eos: int | None
    add_bos: bool
    chat_template: str | None


@dataclass
class GGUFModel:
    path: Path
    architecture: str
    name: str
    config: LlamaConfig
    tensors: dict[str, Weight]
    tokenizer: TokenizerData


def _fields(reader, path: Path) -> dict:
    out = {}
    for key, f in reader.fields.items():
        try:
            out[key] = f.contents()
        except Exception as e:  # noqa: BLE001 - a field the reader cannot decode is named
            raise GGUFError(f"{path}: metadata field {key!r} cannot be read: {e}") from e
    return out


def _open(path: str | Path):
    try:
        from gguf import GGUFReader
    except ImportError as e:  # pragma: no cover - pinned in requirements.txt
        raise GGUFError("reading GGUF files needs the `gguf` package (pip install gguf==0.19.0)") from e
    path = Path(path)
    if not path.is_file():
        raise GGUFError(f"{path}: no such file")
    try:
        reader = GGUFReader(str(path), "r")
    except Exception as e:  # noqa: BLE001 - the reader's own message, with the path
        raise GGUFError(f"{path}: not a GGUF file the reader understands: {e}") from e
    return path, reader, _fields(reader, path)


def _tokenizer(meta: dict, path: Path) -> TokenizerData:
    tokens = meta.get("tokenizer.ggml.tokens")
    if not tokens:
        raise GGUFError(f"{path}: no tokenizer (tokenizer.ggml.tokens)")

    def opt_int(key: str) -> int | None:
        v = meta.get(key)
        return None if v is None else int(v)

    return TokenizerData(
        model=str(meta.get("tokenizer.ggml.model", "")), pre=str(meta.get("tokenizer.ggml.pre", "default")),
        tokens=list(tokens), token_types=[int(x) for x in meta.get("tokenizer.ggml.token_type", [])],
        merges=list(meta.get("tokenizer.ggml.merges", [])), bos=opt_int("tokenizer.ggml.bos_token_id"),
        eos=opt_int("tokenizer.ggml.eos_token_id"), add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", False)),
        chat_template=meta.get("tokenizer.chat_template"))


def read_tokenizer(path: str | Path) -> TokenizerData:
    """The tokenizer of GGUF file `path`, without the model's checks (a file
    that holds only a vocabulary will do)."""
    path, _, meta = _open(path)
    return _tokenizer(meta, path)


def read_gguf(path: str | Path) -> GGUFModel:
    """Reads the model in `path` (the weights stay in the file, mapped)."""
    path, reader, meta = _open(path)
    arch = meta.get("general.architecture")
    if arch not in ARCHITECTURES:
        raise GGUFError(f"{path}: architecture {arch!r} is not supported (tern.llm reads "
                        f"{', '.join(ARCHITECTURES)})")

    def need(key: str):
        if f"{arch}.{key}" not in meta:
            raise GGUFError(f"{path}: metadata {arch}.{key} is missing")
        return meta[f"{arch}.{key}"]

    tok = _tokenizer(meta, path)
    dim, heads = int(need("embedding_length")), int(need("attention.head_count"))
    if dim % heads:
        raise GGUFError(f"{path}: embedding_length {dim} is not a multiple of attention.head_count {heads}")
    head_dim = int(meta.get(f"{arch}.attention.key_length", dim // heads))
    rope_dims = int(meta.get(f"{arch}.rope.dimension_count", head_dim))
    if rope_dims != head_dim:
        raise GGUFError(f"{path}: rope.dimension_count {rope_dims} != head size {head_dim}: partial rotary "
                        "embeddings are not supported")
    if meta.get(f"{arch}.rope.scaling.type", "none") not in ("none", ""):
        raise GGUFError(f"{path}: rope scaling {meta[f'{arch}.rope.scaling.type']!r} is not supported")
    kv_heads = int(meta.get(f"{arch}.attention.head_count_kv", heads))
    if kv_heads < 1 or heads % kv_heads:
        raise GGUFError(f"{path}: attention.head_count {heads} is not a multiple of head_count_kv {kv_heads}")
    config = LlamaConfig(
        vocab=int(meta.get(f"{arch}.vocab_size", len(tok.tokens))), dim=dim, layers=int(need("block_count")),
        heads=heads, kv_heads=kv_heads, ffn=int(need("feed_forward_length")),
        context=int(need("context_length")), norm_eps=float(need("attention.layer_norm_rms_epsilon")),
        rope_base=float(meta.get(f"{arch}.rope.freq_base", 10000.0)), head_dim=head_dim)

    tensors: dict[str, Weight] = {}
    for t in reader.tensors:
        fmt_name = t.tensor_type.name
        if fmt_name not in FORMATS:
            raise GGUFError(f"{path}: tensor {t.name} is {fmt_name}; tern.llm reads "
                            f"{', '.join(FORMATS)}")
        fmt = FORMATS[fmt_name]
        ne = [int(x) for x in t.shape]  # GGUF order: ne[0] is the row length
        if len(ne) > 2 or any(x < 1 for x in ne):
            raise GGUFError(f"{path}: tensor {t.name} has shape {ne} (GGUF order); 1-D and 2-D are read")
        k, n = ne[0], (ne[1] if len(ne) == 2 else 1)
        try:
            nbytes = row_bytes(fmt, k)
        except ValueError as e:
            raise GGUFError(f"{path}: tensor {t.name}: {e}") from e
        raw = np.asarray(t.data).view(np.uint8)
        if raw.size != n * nbytes:
            raise GGUFError(f"{path}: tensor {t.name} holds {raw.size} bytes, {fmt_name} [{n}, {k}] takes "
                            f"{n * nbytes}")
        tensors[t.name] = Weight(t.name, fmt, (n, k), raw.reshape(n, nbytes))

    return GGUFModel(path, arch, str(meta.get("general.name", path.stem)), config, tensors, tok)
