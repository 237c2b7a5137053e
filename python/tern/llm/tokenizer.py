"""Byte-level BPE (GGUF tokenizer.ggml.model "gpt2"), as llama.cpp runs it.

    tok = Tokenizer(read_gguf(path).tokenizer)
    ids = tok.encode("Hello world")          # no BOS/EOS added
    text = tok.decode(ids)

Encoding: the text is cut at the special tokens (control and user-defined
ones, matched longest first), each other span is pre-tokenized by the
pre-tokenizer's regexes (tokenizer.ggml.pre: each regex in turn cuts every
piece into its matches and the text between them), each piece's UTF-8
bytes are spelled in GPT-2's printable characters, and the pair of symbols
with the lowest merge rank is merged until none is left. Decoding maps the
tokens' characters back to bytes.

This is the specification the C++ runner's tokenizer (extension/llm/) is
tested against; it is tested itself against Hugging Face's `tokenizers`
built from the same vocabulary and merges.
"""
from __future__ import annotations

from functools import lru_cache

import regex

from tern.llm.gguf_file import TokenizerData

# GPT-2's regex without its last alternative (llama.cpp's form).
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# tokenizer.ggml.pre -> the regexes applied in turn (llama.cpp's llama-vocab.cpp lists them)
PRE_TOKENIZERS: dict[str, tuple[str, ...]] = {
    "default": (_GPT2,), "gpt2": (_GPT2,),
    "smollm": (r"\p{N}", _GPT2), "starcoder": (r"\p{N}", _GPT2), "refact": (r"\p{N}", _GPT2),
    "llama3": (_LLAMA3,), "llama-bpe": (_LLAMA3,),
}

CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values of special tokens


@lru_cache(maxsize=1)
def byte_chars() -> list[str]:
    """GPT-2's byte -> printable character map (bytes that print as
    themselves keep their code; the rest take 256, 257, ...)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = [""] * 256, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


class TokenizerError(ValueError):
    pass


class Tokenizer:
    def __init__(self, data: TokenizerData) -> None:
        if data.model != "gpt2":
            raise TokenizerError(f"tokenizer model {data.model!r}: tern.llm reads byte-level BPE (\"gpt2\") only")
        if data.pre not in PRE_TOKENIZERS:
            raise TokenizerError(f"pre-tokenizer {data.pre!r} is not known; known: {', '.join(sorted(PRE_TOKENIZERS))}")
        self.data = data
        self.tokens = data.tokens
        self.ids = {t: i for i, t in enumerate(data.tokens)}
        self.ranks: dict[tuple[str, str], int] = {}
        for r, m in enumerate(data.merges):
            a, sep, b = m.partition(" ")
            if not sep:
                raise TokenizerError(f"merge {r} ({m!r}) is not two symbols separated by a space")
            self.ranks.setdefault((a, b), r)
        self.regexes = [regex.compile(p) for p in PRE_TOKENIZERS[data.pre]]
        types = data.token_types or [1] * len(data.tokens)
        self.special = {t for t, ty in zip(data.tokens, types) if ty in (CONTROL, USER_DEFINED) and t}
        longest_first = sorted(self.special, key=len, reverse=True)
        self._special_re = regex.compile("|".join(regex.escape(s) for s in longest_first)) if self.special else None
        self.byte_of = {c: b for b, c in enumerate(byte_chars())}
        self._cache: dict[str, list[int]] = {}

    # -- encoding --

    def pre_tokenize(self, text: str) -> list[str]:
        pieces = [text] if text else []
        for rx in self.regexes:
            out = []
            for p in pieces:
                at = 0
                for m in rx.finditer(p):
                    if m.start() > at:
                        out.append(p[at:m.start()])
                    if m.end() > m.start():
                        out.append(m.group())
                    at = m.end()
                if at < len(p):
                    out.append(p[at:])
            pieces = out
        return pieces

    def _bpe(self, piece: str) -> list[int]:
        hit = self._cache.get(piece)
        if hit is not None:
            return hit
        chars = byte_chars()
        syms = [chars[b] for b in piece.encode("utf-8")]
        while len(syms) > 1:
            best, at = None, -1
            for i in range(len(syms) - 1):
                r = self.ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            syms[at:at + 2] = [syms[at] + syms[at + 1]]
        ids = []
        for s in syms:
            if s in self.ids:
                ids.append(self.ids[s])
            else:  # a symbol the vocabulary lacks: its bytes one by one
                for ch in s:
                    if ch not in self.ids:
                        raise TokenizerError(f"byte {self.byte_of[ch]:#04x} has no token in the vocabulary")
                    ids.append(self.ids[ch])
        if len(self._cache) < 65536:
            self._cache[piece] = ids
        return ids

    def encode(self, text: str, special: bool = True) -> list[int]:
        """Token ids of `text`, no BOS or EOS added; with special=True the
        special tokens' texts in it (e.g. "<|im_start|>") are their ids."""
        spans: list[tuple[str, bool]] = []
        if special and self._special_re is not None:
            at = 0
            for m in self._special_re.finditer(text):
                if m.start() > at:
                    spans.append((text[at:m.start()], False))
                spans.append((m.group(), True))
                at = m.end()
            if at < len(text):
                spans.append((text[at:], False))
        else:
            spans = [(text, False)] if text else []
        ids: list[int] = []
        for span, is_special in spans:
            if is_special:
                ids.append(self.ids[span])
            else:
                for piece in self.pre_tokenize(span):
                    ids.extend(self._bpe(piece))
        return ids

    # -- decoding --

    def token_bytes(self, i: int) -> bytes:
        if not 0 <= i < len(self.tokens):
            raise TokenizerError(f"token id {i} is outside the vocabulary (0 .. {len(self.tokens) - 1})")
        t = self.tokens[i]
        if t in self.special:
            return t.encode("utf-8")
        return bytes(self.byte_of[c] if c in self.byte_of else 0x3F for c in t)

    def decode(self, ids) -> str:
        return b"".join(self.token_bytes(int(i)) for i in ids).decode("utf-8", errors="replace")
