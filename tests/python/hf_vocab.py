"""A Hugging Face `tokenizers` BPE's vocabulary as a GGUF file lists it:
the tokens by id, their types (3: control, the special ones; 1: normal)
and the merges as "a b" strings (llm_files.py and test_llm_tokenizer_cpp.py)."""
from __future__ import annotations

import json
from typing import Any, Iterable


def vocab_of(hf: Any, specials: Iterable[str]) -> tuple[list[str], list[int], list[str]]:
    table = hf.get_vocab()
    tokens = [""] * len(table)
    for t, i in table.items():
        tokens[i] = t
    merges = json.loads(hf.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    special = set(specials)
    return tokens, [3 if t in special else 1 for t in tokens], merges
