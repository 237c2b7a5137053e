"""The C++ runner of a language model's .tern file (extension/llm/: Runner,
Generator) through its CLI, build/tern-llm, on a small Llama written here
with a trained byte-level BPE and a ChatML chat template (llm_files.py).

Oracles: the full module tern.llm.from_gguf builds, run by eager PyTorch on
the whole sequence (greedy: the argmax of its last logits, token after
token); the chat template rendered by jinja2 (file_meta.render_template)
and tokenized by tern.llm.tokenizer (both tested against their own
references in test_llm_chat_format.py and test_llm_gguf.py).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

pytest.importorskip("gguf")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import tern.llm  # noqa: E402
from llm_files import CHATML, hf_llama, trained_bpe, write_gguf  # noqa: E402
from tern.llm import from_gguf, tokenizer_of  # noqa: E402
from tern.llm.file_meta import CONFIG_KEY, read_config, render_template  # noqa: E402

from conftest import built_tool  # noqa: E402
CONTEXT, STEP = 96, 8


def _cli() -> str:
    return built_tool("tern-llm")


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory) -> tuple[Path, Path]:
    """(the GGUF, its exact export): weights in Q8_0, a 600-token BPE, ChatML."""
    d = tmp_path_factory.mktemp("llm-runner")
    bpe = trained_bpe(chat_template=CHATML)
    gguf_path = d / "chat.gguf"
    write_gguf(hf_llama(tied=True, init_std=0.15, vocab=len(bpe.tokens)), gguf_path, "Q8_0", bpe=bpe)
    out = d / "chat.tern"
    tern.llm.export(from_gguf(gguf_path), max_context=CONTEXT, max_tokens_per_step=STEP, fast=False).save(str(out))
    return gguf_path, out


def _run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """stdout as bytes (a random model's tokens are not always UTF-8), stderr as text."""
    r = subprocess.run([_cli(), *args], input=None if stdin is None else stdin.encode(), capture_output=True,
                       timeout=120)
    r.stderr = r.stderr.decode("utf-8", "replace")
    if check and r.returncode != 0:
        raise AssertionError(f"tern-llm {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


def _eager_greedy(model, ids: list[int], n: int, stop: set[int] = frozenset()) -> tuple[list[int], bool]:
    """n greedy tokens after ids (fewer if a stop token comes: it is not returned)."""
    seq, out = list(ids), []
    with torch.no_grad():
        for _ in range(n):
            t = int(model(torch.tensor([seq]))[0, -1].argmax())
            if t in stop:
                return out, True
            out.append(t)
            seq.append(t)
    return out, False


def test_the_file_carries_the_tokenizer_and_settings(chat_model) -> None:
    _, path = chat_model
    cfg = read_config(tern.load(str(path)).metadata()[CONFIG_KEY])
    assert cfg.max_context == CONTEXT
    assert cfg.chat is not None and cfg.chat["user_prefix"] == "<|im_start|>user\n"


def test_greedy_tokens_equal_eagers(chat_model) -> None:
    """A 13-token prompt (two steps of at most 8), then 40 tokens one a step."""
    gguf_path, path = chat_model
    prompt = [5, 77, 310, 12, 9, 450, 123, 64, 3, 449, 18, 200, 41]
    r = json.loads(_run(str(path), "--prompt-ids", ",".join(map(str, prompt)), "--max-tokens", "40",
                        "--temperature", "0", "--ignore-eos", "--threads", "2", "--json").stdout)
    want, _ = _eager_greedy(from_gguf(gguf_path), prompt, 40)
    assert r["prompt"] == prompt and r["prompt_tokens"] == len(prompt)
    assert r["tokens"] == want
    assert len(r["decode_ms"]) == 39 and r["generated"] == 40  # the last token is returned, not fed


def test_a_chat_prompt_is_the_templates_and_its_answer_eagers(chat_model) -> None:
    gguf_path, path = chat_model
    question = "What's 2+2? Grüße 🦊"
    r = json.loads(_run(str(path), "--chat", "--prompt", question, "--max-tokens", "24", "--temperature", "0",
                        "--json").stdout)
    tok = tokenizer_of(gguf_path)
    text = render_template(CHATML, [{"role": "user", "content": question}], True)
    assert r["prompt"] == tok.encode(text)
    end = tok.ids["<|im_end|>"]
    want, stopped = _eager_greedy(from_gguf(gguf_path), r["prompt"], 24, {end})
    assert r["tokens"] == want and r["stopped"] == stopped


def test_a_conversation_keeps_its_cache_across_turns(chat_model) -> None:
    """--interactive: each line a user turn, answered on its own line; the
    second answer is eager's greedy continuation of the whole conversation."""
    gguf_path, path = chat_model
    turns = ["Hello there", "and 12,345 apples?"]
    r = _run(str(path), "--chat", "--interactive", "--max-tokens", "12", "--temperature", "0",
             stdin="\n".join(turns) + "\n")
    model, tok = from_gguf(gguf_path), tokenizer_of(gguf_path)
    end = tok.ids["<|im_end|>"]
    seq: list[int] = []
    expected = b""
    for i, turn in enumerate(turns):
        if i == 0:
            ids = tok.encode(render_template(CHATML, [{"role": "user", "content": turn}], True))
        else:  # the previous answer's end of turn (when it stopped), then the new turn
            ids = tok.encode(("<|im_end|>\n" if stopped else "") + f"<|im_start|>user\n{turn}<|im_end|>\n"
                             "<|im_start|>assistant\n")
        seq += ids
        answer, stopped = _eager_greedy(model, seq, 12, {end})
        seq += answer
        expected += b"".join(tok.token_bytes(t) for t in answer) + b"\n"
    assert r.stdout == expected
    assert r.stderr.count("tokens/s") == 2 * len(turns)


def test_sampling_is_reproducible_from_its_seed(chat_model) -> None:
    _, path = chat_model
    args = [str(path), "--prompt-ids", "1,40,41,42", "--max-tokens", "30", "--temperature", "1.0", "--top-k", "0",
            "--top-p", "1.0", "--ignore-eos", "--json"]
    a, b, c = (json.loads(_run(*args, "--seed", s).stdout)["tokens"] for s in ("7", "7", "8"))
    assert a == b
    assert a != c  # 30 draws from a 451-token distribution at temperature 1


def test_a_prompt_longer_than_the_context_is_refused(chat_model) -> None:
    _, path = chat_model
    r = _run(str(path), "--prompt-ids", ",".join(["5"] * (CONTEXT + 1)), "--json", check=False)
    assert r.returncode == 1
    assert f"97 tokens after the 0 in the sequence exceed its context of {CONTEXT} tokens" in r.stderr


def test_generation_stops_at_the_end_of_the_context(chat_model) -> None:
    _, path = chat_model
    r = json.loads(_run(str(path), "--prompt-ids", ",".join(["5"] * (CONTEXT - 4)), "--max-tokens", "50",
                        "--temperature", "0", "--ignore-eos", "--json").stdout)
    assert r["generated"] == 5  # 4 fed after the prompt fill the context; the fifth is returned, not fed


def test_a_file_that_is_not_a_language_model_is_named(tmp_path: Path) -> None:
    import tern

    class Affine(torch.nn.Module):
        def forward(self, x):
            return x * 2.0 + 1.0

    tern.export(Affine(), (torch.zeros(2, 3),)).save(str(tmp_path / "affine.tern"))
    r = _run(str(tmp_path / "affine.tern"), "--prompt-ids", "1", check=False)
    assert r.returncode == 1
    assert "is not a decoder step" in r.stderr


# ---- the same runner from Python: tern.llm.load -----------------------------


def test_python_generate_equals_eager_and_stream_equals_generate(chat_model) -> None:
    gguf_path, path = chat_model
    g = tern.llm.load(str(path), threads=1)
    tok = tokenizer_of(gguf_path)
    text = "The quick brown fox, 12345 apples!"
    assert g.tokenize(text) == tok.encode(text)
    assert g.detokenize(g.tokenize(text)) == text
    r = g.generate(text, max_tokens=20, temperature=0.0, stop=False)
    want, _ = _eager_greedy(from_gguf(gguf_path), tok.encode(text), 20)
    assert r.tokens == want and r.prompt_tokens == len(tok.encode(text))
    assert r.decode_tokens_per_s > 0 and r.prefill_tokens_per_s > 0
    g.reset()
    pieces = list(g.stream(text, max_tokens=20, temperature=0.0, stop=False))
    assert "".join(pieces) == r.text and len(pieces) > 1


def test_python_chat_turns_continue_the_conversation(chat_model) -> None:
    gguf_path, path = chat_model
    g = tern.llm.load(str(path), threads=2)
    a = g.generate("Hello there", chat=True, max_tokens=12, temperature=0.0)
    b = g.generate("and 12,345 apples?", chat=True, max_tokens=12, temperature=0.0)
    cli = _run(str(path), "--chat", "--interactive", "--max-tokens", "12", "--temperature", "0",
               stdin="Hello there\nand 12,345 apples?\n").stdout
    tok = tokenizer_of(gguf_path)
    assert cli == b"".join(tok.token_bytes(t) for t in a.tokens) + b"\n" + b"".join(
        tok.token_bytes(t) for t in b.tokens) + b"\n"


def test_python_errors_name_the_problem(chat_model, tmp_path: Path) -> None:
    _, path = chat_model
    g = tern.llm.load(str(path), threads=1)
    with pytest.raises(ValueError, match=f"exceed its context of {CONTEXT} tokens"):
        g.generate([5] * (CONTEXT + 3))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        g.generate([100000])
    with pytest.raises(ValueError, match="max_tokens must be"):
        g.generate("hi", max_tokens=0)
    with pytest.raises(ValueError, match="cannot load the language model"):
        tern.llm.load(str(tmp_path / "missing.tern"))


# ---- the tern command: llm-export, inspect ---------------------------------


def test_tern_llm_export_writes_a_file_tern_inspect_describes(chat_model, tmp_path: Path) -> None:
    import sys

    gguf_path, _ = chat_model
    out = tmp_path / "cli.tern"
    tern_cmd = [sys.executable, "-m", "tern.cli"]
    r = subprocess.run([*tern_cmd, "llm-export", str(gguf_path), "-o", str(out), "--max-context", "48",
                        "--max-tokens-per-step", "4"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "2 layers, dim 64, 4 heads (2 kv), vocabulary 451" in r.stderr and "wrote" in r.stderr
    shown = subprocess.run([*tern_cmd, "inspect", str(out)], capture_output=True, text=True, timeout=60).stdout
    assert "tokenizer: byte-level BPE, pre-tokenizer 'smollm', 451 tokens (3 special)" in shown
    assert "context: 48 tokens; BOS 1 '<|im_start|>'; EOS 2 '<|im_end|>'; stop at 2 '<|im_end|>'" in shown
    assert "user      '<|im_start|>user\\n' ... '<|im_end|>\\n'" in shown
    g = json.loads(_run(str(out), "--prompt-ids", "1,2,3", "--max-tokens", "4", "--json").stdout)
    assert g["generated"] >= 1
    bad = subprocess.run([*tern_cmd, "llm-export", str(tmp_path / "none.gguf"), "-o", str(tmp_path / "x.tern")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "none.gguf: no such file" in bad.stderr
