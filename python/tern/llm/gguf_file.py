"""A GGUF file's language model, as Tern reads it: the hyperparameters, the
weights (their bytes as stored) and the tokenizer.

    f = read_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    f.config.layers, f.tensors["blk.0.attn_q.weight"].format.name, f.tokenizer.tokens[:3]

Only the Llama family is read (general.architecture "llama": RMSNorm,
rotary embeddings on pairs of features, grouped-query attention, SwiGLU);
another architecture, or a weight in a format other than F32, F16, Q8_0,
Q4_0 and Q4_1, is a GGUFError that names it.

The container is read here (read_container), not through the `gguf`
package: its GGUFReader builds a numpy view of every metadata string, which
takes seconds for a vocabulary of 49k tokens and 49k merges, where reading
them as Python strings takes a few hundredths of a second. GGUF versions 2
and 3, little-endian, as llama.cpp's docs/gguf.md describes them:

    magic b"GGUF", version u32, tensor count u64, metadata count u64
    metadata: key (string), value type u32, value
    tensor infos: name (string), n_dims u32, ne[n_dims] u64, ggml type u32,
                  offset u64 (from the start of the data section)
    padding to general.alignment (default 32), then the data section

where a string is a u64 byte count and UTF-8 bytes, and a value is one of
_SCALARS below, a string (8) or an array (9: element type u32, count u64,
the elements). The file is mapped read-only and the weights are views of it.
A file that is cut short, holds a length or count beyond its end, a value
type GGUF does not define, or tensors outside the file, overlapping or off
their alignment is a GGUFError that names the file and what is wrong:
every count is checked against the bytes left before anything is allocated.
The `gguf` package is the tests' (tests/python/test_llm_gguf.py writes files
with its GGUFWriter and checks this reader against its GGUFReader).
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tern.llm.blocks import BY_CODE, FORMATS, BlockFormat, row_bytes

ARCHITECTURES = ("llama",)

# ggml.h's enum ggml_type, for messages that name a weight's format (the
# numbers are checked against the gguf package's GGMLQuantizationType in
# tests/python/test_llm_gguf.py); the ones Tern reads are blocks.FORMATS.
GGML_TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
    11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
    19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
    27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4",
    41: "Q1_0",
}

# GGUF's metadata value types: the scalars (as struct formats), then
# 7 bool (one byte), 8 string and 9 array.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 10: "<Q", 11: "<q", 12: "<d"}
_BOOL, _STRING, _ARRAY = 7, 8, 9
_VALUE_TYPES = "0 to 12"
_MAX_DEPTH = 8  # arrays of arrays of ...: GGUF allows them, no file needs this many
_MAX_DIMS = 4  # GGML_MAX_DIMS
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
_HEADER = struct.Struct("<4sIQQ")


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


# ---- the container -------------------------------------------------------


@dataclass
class TensorInfo:
    """A tensor as the file lists it: ne in GGUF order (ne[0] is the row
    length), its ggml type number and where its data starts in the file."""

    name: str
    ne: tuple[int, ...]
    ggml_type: int
    offset: int  # from the start of the file (the data section's start + the listed offset)


@dataclass
class GGUFContainer:
    """What read_container found: the metadata (ints as int, floats as float,
    strings as str, bools as bool, arrays as lists), the tensor infos in the
    file's order, and the file mapped read-only (the weights are views of
    it)."""

    path: Path
    version: int
    metadata: dict
    tensors: list[TensorInfo]
    data_offset: int
    buffer: mmap.mmap


_SCALAR_STRUCTS = {t: struct.Struct(f) for t, f in _SCALARS.items()}
_SCALAR_DTYPES = {t: np.dtype(f) for t, f in _SCALARS.items()}


class _Cursor:
    """A position in the mapped file; every read checks the bytes left first,
    so that a file cut short or a length beyond its end is a GGUFError, not
    an IndexError, a struct.error or an allocation of what the file claims."""

    def __init__(self, buf: mmap.mmap, path: Path) -> None:
        self.buf, self.path, self.pos, self.end = buf, path, 0, len(buf)

    def error(self, what: str) -> GGUFError:
        return GGUFError(f"{self.path}: {what}")

    def need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise self.error(f"truncated: {what} at offset {self.pos} takes {n} bytes, the file ends at {self.end}")

    def u32(self, what: str) -> int:
        self.need(4, what)
        (v,) = _U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return v

    def u64(self, what: str) -> int:
        self.need(8, what)
        (v,) = _U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return v

    def beyond(self, what: str, count: int, size: int) -> GGUFError:
        return self.error(f"{what}: {count} x {size} bytes at offset {self.pos} go beyond the end of the file "
                          f"({self.end} bytes)")

    def string(self, what: str) -> str:
        n = self.u64(f"the length of {what}")
        if n > self.end - self.pos:
            raise self.beyond(f"{what} (a string)", n, 1)
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.error(f"{what} is not UTF-8: {e}") from None

    def strings(self, count: int, what: str) -> list[str]:
        """count strings: the loop of string(), inlined (a vocabulary is
        ~100k of them)."""
        buf, pos, end, unpack = self.buf, self.pos, self.end, _U64.unpack_from
        out = [""] * count
        i = 0
        try:
            for i in range(count):
                if end - pos < 8:
                    self.pos = pos
                    raise self.error(f"truncated: the length of {what}[{i}] at offset {pos} takes 8 bytes, "
                                     f"the file ends at {end}")
                (n,) = unpack(buf, pos)
                pos += 8
                if n > end - pos:
                    self.pos = pos
                    raise self.beyond(f"{what}[{i}] (a string)", n, 1)
                out[i] = buf[pos:pos + n].decode("utf-8")
                pos += n
        except UnicodeDecodeError as e:
            raise self.error(f"{what}[{i}] is not UTF-8: {e}") from None
        self.pos = pos
        return out

    def value(self, vtype: int, what: str, depth: int = 0):
        s = _SCALAR_STRUCTS.get(vtype)
        if s is not None:
            self.need(s.size, what)
            (v,) = s.unpack_from(self.buf, self.pos)
            self.pos += s.size
            return v
        if vtype == _BOOL:
            self.need(1, what)
            self.pos += 1
            return self.buf[self.pos - 1] != 0
        if vtype == _STRING:
            return self.string(what)
        if vtype != _ARRAY:
            raise self.error(f"{what} has value type {vtype}, which GGUF does not define ({_VALUE_TYPES})")
        etype = self.u32(f"the element type of {what}")
        count = self.u64(f"the length of {what}")
        left = self.end - self.pos
        if etype in _SCALAR_DTYPES or etype == _BOOL:
            dtype = _SCALAR_DTYPES.get(etype, np.dtype(np.uint8))
            if count > left // dtype.itemsize:
                raise self.beyond(f"{what} (an array)", count, dtype.itemsize)
            if count == 0:
                return []
            a = np.frombuffer(self.buf, dtype, count, self.pos)
            self.pos += count * dtype.itemsize
            return (a != 0).tolist() if etype == _BOOL else a.tolist()
        if etype == _STRING:
            if count > left // 8:
                raise self.beyond(f"{what} (an array of strings)", count, 8)
            return self.strings(count, what)
        if etype == _ARRAY:
            if depth + 1 >= _MAX_DEPTH:
                raise self.error(f"{what}: arrays nested more than {_MAX_DEPTH} deep")
            if count > left // 12:
                raise self.beyond(f"{what} (an array of arrays)", count, 12)
            return [self.value(_ARRAY, f"{what}[{i}]", depth + 1) for i in range(count)]
        raise self.error(f"{what} is an array of value type {etype}, which GGUF does not define ({_VALUE_TYPES})")


def _map(path: Path) -> mmap.mmap:
    """The file `path`, mapped read-only (np.frombuffer views of it keep it mapped)."""
    if not path.is_file():
        raise GGUFError(f"{path}: no such file")
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            if size < 4:
                raise GGUFError(f"{path}: not a GGUF file ({size} bytes)")
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise GGUFError(f"{path}: cannot be read: {e}") from e


def read_container(path: str | Path) -> GGUFContainer:
    """The metadata and tensor infos of GGUF file `path`, checked against the
    file's size (the tensors' sizes depend on their formats: read_gguf
    checks those)."""
    path = Path(path)
    buf = _map(path)
    c = _Cursor(buf, path)
    if buf[:4] != b"GGUF":
        raise GGUFError(f"{path}: not a GGUF file (it starts with {buf[:4]!r}, not b'GGUF')")
    c.need(_HEADER.size, "the header")
    _, version, n_tensors, n_kv = _HEADER.unpack_from(buf, 0)
    c.pos = _HEADER.size
    if version not in (2, 3):
        if version & 0xFFFF == 0 and version >> 24 in (1, 2, 3):
            raise GGUFError(f"{path}: a big-endian GGUF file (version {version >> 24}); Tern reads little-endian ones")
        if version == 1:
            raise GGUFError(f"{path}: GGUF version 1 (32-bit lengths, before August 2023) is not supported; "
                            "versions 2 and 3 are (convert the model again with a current llama.cpp)")
        raise GGUFError(f"{path}: GGUF version {version} is not supported (versions 2 and 3 are)")
    # the smallest entry: an empty key, a value type and one byte; the smallest
    # tensor info: an empty name, n_dims, the type and the offset
    if n_kv * 13 + n_tensors * 24 > c.end - c.pos:
        raise GGUFError(f"{path}: the header counts {n_kv} metadata entries and {n_tensors} tensors, more than "
                        f"the {c.end - c.pos} bytes after it can hold")

    meta: dict = {}
    for i in range(n_kv):
        key = c.string(f"metadata key #{i}")
        if key in meta:
            raise GGUFError(f"{path}: metadata {key!r} appears twice")
        vtype = c.u32(f"the value type of metadata {key!r}")
        meta[key] = c.value(vtype, f"metadata {key!r}")

    alignment = meta.get("general.alignment", 32)
    if type(alignment) is not int or alignment < 1 or alignment & (alignment - 1):
        raise GGUFError(f"{path}: general.alignment {alignment!r} is not a power of two")

    infos: list[TensorInfo] = []
    names: set[str] = set()
    for i in range(n_tensors):
        name = c.string(f"the name of tensor #{i}")
        if name in names:
            raise GGUFError(f"{path}: tensor {name} appears twice")
        names.add(name)
        n_dims = c.u32(f"the dimension count of tensor {name}")
        if n_dims > _MAX_DIMS:
            raise GGUFError(f"{path}: tensor {name} has {n_dims} dimensions (ggml has at most {_MAX_DIMS})")
        ne = tuple(c.u64(f"dimension {d} of tensor {name}") for d in range(n_dims))
        ggml_type = c.u32(f"the type of tensor {name}")
        offset = c.u64(f"the data offset of tensor {name}")
        if offset % alignment:
            raise GGUFError(f"{path}: tensor {name}'s data offset {offset} is not a multiple of the alignment "
                            f"{alignment}")
        infos.append(TensorInfo(name, ne, ggml_type, offset))
    data_offset = -(-c.pos // alignment) * alignment
    for t in infos:
        t.offset += data_offset
        if t.offset > c.end:
            raise GGUFError(f"{path}: tensor {t.name}'s data starts at offset {t.offset}, beyond the end of the "
                            f"file ({c.end} bytes)")
    return GGUFContainer(path, version, meta, infos, data_offset, buf)


# ---- the model -----------------------------------------------------------


_MISSING = object()
# What a metadata value must be, for the keys read here: a test on the value,
# and its name. A GGUF array has one element type, so its first element
# stands for all of them.
_KINDS = {
    "int": (lambda v: type(v) is int, "an integer"),
    "float": (lambda v: type(v) in (int, float), "a number"),
    "bool": (lambda v: type(v) in (bool, int), "a bool"),
    "str": (lambda v: type(v) is str, "a string"),
    "[str]": (lambda v: type(v) is list and (not v or type(v[0]) is str), "an array of strings"),
    "[int]": (lambda v: type(v) is list and (not v or type(v[0]) is int), "an array of integers"),
}


def _meta(meta: dict, path: Path, key: str, kind: str, default=_MISSING):
    """meta[key], checked to be `kind` (a file's metadata can hold any type
    under any key); default when it is absent, else a GGUFError."""
    v = meta.get(key, _MISSING)
    if v is _MISSING:
        if default is _MISSING:
            raise GGUFError(f"{path}: metadata {key} is missing")
        return default
    test, name = _KINDS[kind]
    if not test(v):
        raise GGUFError(f"{path}: metadata {key} is {type(v).__name__} {_short(v)}, not {name}")
    return v


def _short(v) -> str:
    r = repr(v[:4]) if isinstance(v, list) else repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _tokenizer(meta: dict, path: Path) -> TokenizerData:
    tokens = _meta(meta, path, "tokenizer.ggml.tokens", "[str]", None)
    if not tokens:
        raise GGUFError(f"{path}: no tokenizer (tokenizer.ggml.tokens)")

    def get(key: str, kind: str, default=None):
        return _meta(meta, path, f"tokenizer.{key}", kind, default)

    return TokenizerData(
        model=get("ggml.model", "str", ""), pre=get("ggml.pre", "str", "default"), tokens=tokens,
        token_types=get("ggml.token_type", "[int]", []), merges=get("ggml.merges", "[str]", []),
        bos=get("ggml.bos_token_id", "int"), eos=get("ggml.eos_token_id", "int"),
        add_bos=bool(get("ggml.add_bos_token", "bool", False)), chat_template=get("chat_template", "str"))


def _weights(c: GGUFContainer) -> dict[str, Weight]:
    """The tensors as Weights: views of the mapped file, each checked to lie
    inside it and apart from the others."""
    path, size = c.path, len(c.buffer)
    tensors: dict[str, Weight] = {}
    extents = []
    for t in c.tensors:
        fmt = BY_CODE.get(t.ggml_type)
        if fmt is None:
            fmt_name = GGML_TYPE_NAMES.get(t.ggml_type, f"ggml type {t.ggml_type}")
            raise GGUFError(f"{path}: tensor {t.name} is {fmt_name}; tern.llm reads {', '.join(FORMATS)}")
        ne = list(t.ne)  # GGUF order: ne[0] is the row length
        if not 1 <= len(ne) <= 2 or any(x < 1 for x in ne):
            raise GGUFError(f"{path}: tensor {t.name} has shape {ne} (GGUF order); 1-D and 2-D are read")
        k, n = ne[0], (ne[1] if len(ne) == 2 else 1)
        try:
            nbytes = row_bytes(fmt, k)
        except ValueError as e:
            raise GGUFError(f"{path}: tensor {t.name}: {e}") from e
        if n * nbytes > size - t.offset:
            raise GGUFError(f"{path}: tensor {t.name} ({fmt.name} [{n}, {k}], {n * nbytes} bytes from offset "
                            f"{t.offset}) goes beyond the end of the file ({size} bytes)")
        extents.append((t.offset, t.offset + n * nbytes, t.name))
        rows = np.frombuffer(c.buffer, np.uint8, n * nbytes, t.offset).reshape(n, nbytes)
        tensors[t.name] = Weight(t.name, fmt, (n, k), rows)
    extents.sort()
    for (_, end, a), (start, _, b) in zip(extents, extents[1:]):
        if start < end:
            raise GGUFError(f"{path}: tensors {a} and {b} overlap (bytes {start} to {end})")
    return tensors


def read_tokenizer(path: str | Path) -> TokenizerData:
    """The tokenizer of GGUF file `path`, without the model's checks (a file
    that holds only a vocabulary will do)."""
    c = read_container(path)
    return _tokenizer(c.metadata, c.path)


def read_gguf(path: str | Path) -> GGUFModel:
    """Reads the model in `path` (the weights stay in the file, mapped)."""
    c = read_container(path)
    path, meta = c.path, c.metadata
    arch = meta.get("general.architecture")
    if arch not in ARCHITECTURES:
        raise GGUFError(f"{path}: architecture {arch!r} is not supported (tern.llm reads "
                        f"{', '.join(ARCHITECTURES)})")

    def get(key: str, kind: str = "int", default=_MISSING):
        return _meta(meta, path, f"{arch}.{key}", kind, default)

    tok = _tokenizer(meta, path)
    dim, heads = get("embedding_length"), get("attention.head_count")
    if dim < 1 or heads < 1 or dim % heads:
        raise GGUFError(f"{path}: embedding_length {dim} is not a multiple of attention.head_count {heads}")
    head_dim = get("attention.key_length", "int", dim // heads)
    rope_dims = get("rope.dimension_count", "int", head_dim)
    if rope_dims != head_dim:
        raise GGUFError(f"{path}: rope.dimension_count {rope_dims} != head size {head_dim}: partial rotary "
                        "embeddings are not supported")
    if get("rope.scaling.type", "str", "none") not in ("none", ""):
        raise GGUFError(f"{path}: rope scaling {meta[f'{arch}.rope.scaling.type']!r} is not supported")
    kv_heads = get("attention.head_count_kv", "int", heads)
    if kv_heads < 1 or heads % kv_heads:
        raise GGUFError(f"{path}: attention.head_count {heads} is not a multiple of head_count_kv {kv_heads}")
    config = LlamaConfig(
        vocab=get("vocab_size", "int", len(tok.tokens)), dim=dim, layers=get("block_count"), heads=heads,
        kv_heads=kv_heads, ffn=get("feed_forward_length"), context=get("context_length"),
        norm_eps=float(get("attention.layer_norm_rms_epsilon", "float")),
        rope_base=float(get("rope.freq_base", "float", 10000.0)), head_dim=head_dim)

    tensors = _weights(c)
    return GGUFModel(path, arch, _meta(meta, path, "general.name", "str", path.stem), config, tensors, tok)
