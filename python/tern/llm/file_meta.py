"""The metadata a language model's .tern file carries for its runner
(extension/llm/): the tokenizer, and the settings with the chat format.

    from tern.llm.file_meta import llm_metadata
    tok = read_tokenizer("SmolLM2-135M-Instruct.Q4_1.gguf")
    program = program.with_metadata(llm_metadata(tok, max_context=8192, temperature=0.2, top_p=0.9))

Two keys (docs/format.md "Metadata"; tern.export(..., metadata=...) writes
them, Module::metadata(key) reads them in C++):

"tern.llm.tokenizer": the byte-level BPE vocabulary. Binary, little-endian;
str = u32 byte length + that many bytes (UTF-8):

    b"TBPE"              magic
    u32  version         1
    str  pre             the pre-tokenizer (GGUF tokenizer.ggml.pre: "gpt2", "smollm", "llama3", ...;
                         tokenizer.PRE_TOKENIZERS lists the known names)
    u32  n_tokens        then n_tokens times:
      u8   type          GGUF token_type (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte)
      str  text          GGUF's text: bytes in GPT-2's printable characters ("Ġthe"); a control or
                         user-defined token's text is itself ("<|im_end|>")
    u32  n_merges        then n_merges times, rank = position:
      str  merge         "a b": two token texts; "ab" is a token too
    (nothing after)

"tern.llm.config": UTF-8 text, one `key=value` per line (the first "="
splits); in values a newline is written `\\n` and a backslash `\\\\`. Keys:

    bos, eos         token ids (a key is absent when the model has none)
    add_bos          1: the runner puts the BOS token before a prompt; 0: not
    stop             comma-separated token ids that end generation: eos, the special token an
                     assistant's turn ends with in the chat format, and <|im_end|>, <|eot_id|>,
                     <|eom_id|>, <|end|>, <end_of_turn> where the vocabulary has them as special tokens
    temperature      sampling temperature (<= 0: greedy)
    top_k            keep the k most likely tokens (0: all)
    top_p            keep the most likely tokens up to this probability mass (1: all)
    repeat_penalty   (only when set) llama.cpp's repetition penalty (1: none) ...
    repeat_last_n    ... over the last n tokens
    max_context      the most tokens (prompt + generated) the model attends to
    chat.*           (only when the model has a chat template) its format, from chat_format():
      chat.system_prefix, chat.system_suffix        a system message is prefix + content + suffix
      chat.user_prefix, chat.user_suffix            a user message
      chat.assistant_prefix, chat.assistant_suffix  an assistant message
      chat.generation_prompt   what follows the last message when the model is to answer
      chat.default_system      the system message the template puts first when the conversation
                               does not start with one (empty: none)
      chat.bos_in_template     1: the template starts the text with the BOS token's text; the
                               prompt built from the other keys does not hold it: the runner adds
                               the BOS token when add_bos or chat.bos_in_template is 1
      chat.trim_content        1: the template strips whitespace around each message's content

A reader ignores keys it does not know (later versions may add some).
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from tern.llm.gguf_file import TokenizerData
from tern.llm.tokenizer import CONTROL, PRE_TOKENIZERS, USER_DEFINED

TOKENIZER_KEY = "tern.llm.tokenizer"
CONFIG_KEY = "tern.llm.config"
MAGIC = b"TBPE"
VERSION = 1
# The chat end-of-turn tokens that stop generation when the vocabulary has them.
END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>")
CHAT_KEYS = ("system_prefix", "system_suffix", "user_prefix", "user_suffix", "assistant_prefix",
             "assistant_suffix", "generation_prompt", "default_system", "bos_in_template", "trim_content")


class FileMetaError(ValueError):
    pass


class ChatTemplateError(FileMetaError):
    """The chat template is not a per-role prefix/suffix template (or does not render)."""


# ---- tokenizer blob ---------------------------------------------------------


def _str(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<I", len(b)) + b


def tokenizer_blob(tok: TokenizerData) -> bytes:
    """The "tern.llm.tokenizer" blob of a byte-level BPE tokenizer. Refuses
    what the C++ reader would (checked here so that an export fails, not a
    device): another model, an unknown pre-tokenizer, types outside 0..6, a
    merge whose symbols or result are not tokens."""
    if tok.model != "gpt2":
        raise FileMetaError(f"tokenizer model {tok.model!r}: the runner reads byte-level BPE (\"gpt2\") only")
    if tok.pre not in PRE_TOKENIZERS:
        raise FileMetaError(f"pre-tokenizer {tok.pre!r} is not known; known: {', '.join(sorted(PRE_TOKENIZERS))}")
    types = tok.token_types or [1] * len(tok.tokens)
    if len(types) != len(tok.tokens):
        raise FileMetaError(f"{len(types)} token types for {len(tok.tokens)} tokens")
    if not tok.tokens:
        raise FileMetaError("the vocabulary is empty")
    known = set(tok.tokens)
    out = [MAGIC, struct.pack("<I", VERSION), _str(tok.pre), struct.pack("<I", len(tok.tokens))]
    for i, (t, ty) in enumerate(zip(tok.tokens, types)):
        if not 0 <= ty <= 6:
            raise FileMetaError(f"token {i} ({t!r}) has type {ty}; GGUF token types are 0 to 6")
        out += [struct.pack("<B", ty), _str(t)]
    out.append(struct.pack("<I", len(tok.merges)))
    for r, m in enumerate(tok.merges):
        a, sep, b = m.partition(" ")
        if not sep or a not in known or b not in known or a + b not in known:
            raise FileMetaError(f"merge {r} ({m!r}) is not two tokens whose concatenation is a token")
        out.append(_str(m))
    return b"".join(out)


def read_tokenizer_blob(blob: bytes) -> TokenizerData:
    """The TokenizerData of a "tern.llm.tokenizer" blob (bos, eos and the
    chat template are in the config, not here)."""
    at = 0

    def take(n: int, what: str) -> bytes:
        nonlocal at
        if at + n > len(blob):
            raise FileMetaError(f"{TOKENIZER_KEY}: {what} runs past the end (offset {at}, {n} bytes)")
        at += n
        return blob[at - n:at]

    def u32(what: str) -> int:
        return struct.unpack("<I", take(4, what))[0]

    def text(what: str) -> str:
        return take(u32(what), what).decode("utf-8")

    if take(4, "magic") != MAGIC:
        raise FileMetaError(f"{TOKENIZER_KEY}: not a tokenizer blob (magic)")
    if (v := u32("version")) != VERSION:
        raise FileMetaError(f"{TOKENIZER_KEY}: version {v}, this reads {VERSION}")
    pre = text("pre")
    tokens, types = [], []
    for i in range(u32("token count")):
        types.append(take(1, f"token {i}")[0])
        tokens.append(text(f"token {i}"))
    merges = [text(f"merge {r}") for r in range(u32("merge count"))]
    if at != len(blob):
        raise FileMetaError(f"{TOKENIZER_KEY}: {len(blob) - at} bytes after the merges")
    return TokenizerData(model="gpt2", pre=pre, tokens=tokens, token_types=types, merges=merges, bos=None, eos=None,
                         add_bos=False, chat_template=None)


# ---- config -----------------------------------------------------------------


@dataclass
class LlmConfig:
    """The settings of "tern.llm.config" (the module docstring says each)."""

    max_context: int
    bos: int | None = None
    eos: int | None = None
    add_bos: bool = False
    stop: list[int] = field(default_factory=list)
    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    repeat_penalty: float | None = None
    repeat_last_n: int = 64
    chat: dict[str, str] | None = None  # CHAT_KEYS -> str ("0"/"1" for the flags)
    extra: dict[str, str] = field(default_factory=dict)  # keys this version does not know


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")


def _unescape(v: str, key: str) -> str:
    out, i = [], 0
    while i < len(v):
        c = v[i]
        if c == "\\":
            nxt = v[i + 1:i + 2]
            if nxt not in ("\\", "n"):
                raise FileMetaError(f"{CONFIG_KEY}: {key}: a backslash not followed by \\ or n")
            out.append("\n" if nxt == "n" else "\\")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def config_text(cfg: LlmConfig) -> bytes:
    """The "tern.llm.config" bytes of cfg."""
    items: list[tuple[str, str]] = []
    if cfg.bos is not None:
        items.append(("bos", str(cfg.bos)))
    if cfg.eos is not None:
        items.append(("eos", str(cfg.eos)))
    items += [("add_bos", str(int(cfg.add_bos))), ("stop", ",".join(str(i) for i in cfg.stop)),
              ("temperature", repr(float(cfg.temperature))), ("top_k", str(int(cfg.top_k))),
              ("top_p", repr(float(cfg.top_p)))]
    if cfg.repeat_penalty is not None:
        items += [("repeat_penalty", repr(float(cfg.repeat_penalty))), ("repeat_last_n", str(int(cfg.repeat_last_n)))]
    items.append(("max_context", str(int(cfg.max_context))))
    if cfg.chat is not None:
        items += [(f"chat.{k}", str(cfg.chat[k])) for k in CHAT_KEYS]
    items += sorted(cfg.extra.items())
    for k, _ in items:
        if not k or any(c in k for c in "=\n\\"):
            raise FileMetaError(f"{CONFIG_KEY}: key {k!r} is empty or holds '=', a newline or a backslash")
    return "".join(f"{k}={_escape(v)}\n" for k, v in items).encode("utf-8")


def read_config(blob: bytes) -> LlmConfig:
    """The LlmConfig of "tern.llm.config" bytes."""
    kv: dict[str, str] = {}
    for n, line in enumerate(blob.decode("utf-8").split("\n")):
        if not line:
            continue
        k, sep, v = line.partition("=")
        if not sep:
            raise FileMetaError(f"{CONFIG_KEY}: line {n + 1} has no '='")
        kv[k] = _unescape(v, k)
    if "max_context" not in kv:
        raise FileMetaError(f"{CONFIG_KEY}: no max_context")
    cfg = LlmConfig(max_context=int(kv.pop("max_context")))
    cfg.bos = int(kv.pop("bos")) if "bos" in kv else None
    cfg.eos = int(kv.pop("eos")) if "eos" in kv else None
    cfg.add_bos = kv.pop("add_bos", "0") == "1"
    stop = kv.pop("stop", "")
    cfg.stop = [int(s) for s in stop.split(",")] if stop else []
    cfg.temperature = float(kv.pop("temperature", cfg.temperature))
    cfg.top_k = int(kv.pop("top_k", cfg.top_k))
    cfg.top_p = float(kv.pop("top_p", cfg.top_p))
    if "repeat_penalty" in kv:
        cfg.repeat_penalty = float(kv.pop("repeat_penalty"))
        cfg.repeat_last_n = int(kv.pop("repeat_last_n", cfg.repeat_last_n))
    chat = {k[5:]: kv.pop(k) for k in [k for k in kv if k.startswith("chat.") and k[5:] in CHAT_KEYS]}
    cfg.chat = {k: chat.get(k, "0" if k in ("bos_in_template", "trim_content") else "") for k in CHAT_KEYS} \
        if chat else None
    cfg.extra = kv
    return cfg


def stop_tokens(tok: TokenizerData, chat: dict[str, str] | None) -> list[int]:
    """eos, the special token that starts the assistant's suffix, and the
    END_OF_TURN tokens that are special tokens of the vocabulary."""
    types = tok.token_types or [1] * len(tok.tokens)
    ids = {t: i for i, t in enumerate(tok.tokens)}
    special = {t for t, ty in zip(tok.tokens, types) if ty in (CONTROL, USER_DEFINED) and t}
    out = [tok.eos] if tok.eos is not None else []
    if chat is not None:
        ends = [s for s in special if chat["assistant_suffix"].startswith(s)]
        if ends:
            out.append(ids[max(ends, key=len)])
    out += [ids[t] for t in END_OF_TURN if t in special]
    return list(dict.fromkeys(out))


def llm_config(tok: TokenizerData, max_context: int, **settings) -> LlmConfig:
    """The config of a model with tokenizer `tok`: its BOS/EOS, its chat
    format (from tok.chat_template; ChatTemplateError if it has none a
    runner can follow), its stop tokens; `settings` are LlmConfig's sampling
    fields (temperature, top_k, top_p, repeat_penalty, repeat_last_n)."""
    def text(i: int | None) -> str:
        return tok.tokens[i] if i is not None and 0 <= i < len(tok.tokens) else ""

    chat = chat_format(tok.chat_template, text(tok.bos), text(tok.eos)) if tok.chat_template else None
    return LlmConfig(max_context=max_context, bos=tok.bos, eos=tok.eos, add_bos=tok.add_bos,
                     stop=stop_tokens(tok, chat), chat=chat, **settings)


# ---- chat format ------------------------------------------------------------

# Sentinel contents: words no template changes, that appear nowhere else.
_S, _U1, _U2, _A1 = "TernSentinelSystemQ7", "TernSentinelUserQ7a", "TernSentinelUserQ7b", "TernSentinelAssistantQ7"
_BOS = "TernSentinelBosQ7"


def render_template(template: str, messages: list[dict[str, str]], add_generation_prompt: bool, bos_text: str = "",
                    eos_text: str = "") -> str:
    """Jinja2's rendering of a chat template, in the environment Hugging
    Face's apply_chat_template uses (sandboxed, trim_blocks, lstrip_blocks,
    loop controls, raise_exception(), tojson)."""
    import jinja2
    import jinja2.ext
    import jinja2.sandbox

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = tojson
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                            bos_token=bos_text, eos_token=eos_text)


def render_chat(fmt: dict[str, str], messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """A conversation in chat format `fmt` (chat_format's dict), as the C++
    runner builds it (extension/llm/chat.h): the default system message
    first when the conversation does not start with a system message, each
    message as prefix + content + suffix of its role, then the generation
    prompt. Without the BOS text (fmt["bos_in_template"]: the runner adds the token)."""
    msgs = list(messages)
    if msgs and msgs[0]["role"] != "system" and fmt["default_system"]:
        msgs.insert(0, {"role": "system", "content": fmt["default_system"]})
    out = []
    for m in msgs:
        if m["role"] not in ("system", "user", "assistant"):
            raise ChatTemplateError(f"role {m['role']!r}: the chat format knows system, user and assistant")
        content = m["content"].strip() if fmt["trim_content"] == "1" else m["content"]
        out += [fmt[f"{m['role']}_prefix"], content, fmt[f"{m['role']}_suffix"]]
    if add_generation_prompt:
        out.append(fmt["generation_prompt"])
    return "".join(out)


def _show(text: str) -> str:
    """text with the sentinels named, for error messages."""
    for sentinel, name in ((_S, "{system}"), (_U1, "{user}"), (_U2, "{user 2}"), (_A1, "{assistant}"),
                           (_BOS, "{bos_token}")):
        text = text.replace(sentinel, name)
    return text


def _cut(text: str, sentinel: str, what: str) -> tuple[str, str]:
    if text.count(sentinel) != 1:
        raise ChatTemplateError(f"the chat template writes {what}'s content {text.count(sentinel)} times "
                                f"(in {_show(text)!r}), not once as given")
    before, _, after = text.partition(sentinel)
    return before, after


def _extends(longer: str, shorter: str, what: str) -> str:
    if not longer.startswith(shorter):
        raise ChatTemplateError(f"the chat template is not a per-role prefix/suffix template: {what}: "
                                f"{_show(longer)!r} does not start with {_show(shorter)!r}")
    return longer[len(shorter):]


def _chat_pieces(render, bos_text: str) -> dict[str, str]:
    """Prefixes and suffixes from renderings of sentinel conversations."""
    sys_, u1, a1, u2 = ({"role": r, "content": c} for r, c in
                        (("system", _S), ("user", _U1), ("assistant", _A1), ("user", _U2)))
    one, two, three = render([u1], False), render([u1, a1], False), render([u1, a1, u2], False)
    fmt: dict[str, str] = {}
    fmt["assistant_prefix"], fmt["assistant_suffix"] = _cut(
        _extends(two, one, "adding an assistant message after a user message"), _A1, "the assistant message")
    fmt["user_prefix"], fmt["user_suffix"] = _cut(
        _extends(three, two, "adding a user message after an assistant message"), _U2, "the second user message")
    user_block = fmt["user_prefix"] + _U1 + fmt["user_suffix"]
    with_system = render([sys_, u1], False)
    for text in (one, two, three, with_system):
        if text.count(bos_text) > (1 if text.startswith(bos_text) else 0):
            raise ChatTemplateError(f"the chat template writes the BOS token (bos_token) other than once at the "
                                    f"start: {_show(text)!r}")
    for text, what in ((one, "[user]"), (with_system, "[system, user]")):
        if not text.endswith(user_block):
            raise ChatTemplateError(f"the chat template writes the first user message of {what} differently from "
                                    f"a later one: {_show(text)!r} does not end with {_show(user_block)!r}")
    head_user, head_system = one[:-len(user_block)], with_system[:-len(user_block)]
    starts = [h.startswith(bos_text) for h in (head_user, head_system)]
    if starts[0] != starts[1]:
        raise ChatTemplateError(f"the chat template starts with the BOS text {bos_text!r} only "
                                f"{'without' if starts[0] else 'with'} a system message")
    fmt["bos_in_template"] = "1" if starts[0] else "0"
    if starts[0]:
        head_user, head_system = head_user[len(bos_text):], head_system[len(bos_text):]
    fmt["system_prefix"], fmt["system_suffix"] = _cut(head_system, _S, "the system message")
    fmt["default_system"] = ""
    if head_user:
        p, s = fmt["system_prefix"], fmt["system_suffix"]
        if not (head_user.startswith(p) and head_user.endswith(s) and len(head_user) >= len(p) + len(s)):
            raise ChatTemplateError(f"the chat template writes {_show(head_user)!r} before a conversation without a system "
                                    f"message, which is not a system message ({p!r} ... {s!r})")
        fmt["default_system"] = head_user[len(p):len(head_user) - len(s)]
    fmt["generation_prompt"] = _extends(render([u1], True), one, "asking for the generation prompt")
    return fmt


def _trims(render, fmt: dict[str, str]) -> str:
    """'1' if the template strips the whitespace around contents, else '0'."""
    padded = render([{"role": "user", "content": f" \n{_U1}\t \n"}], False)
    head = (fmt["system_prefix"] + fmt["default_system"] + fmt["system_suffix"]) if fmt["default_system"] else ""
    for trim, content in (("0", f" \n{_U1}\t \n"), ("1", _U1)):
        if padded.endswith(head + fmt["user_prefix"] + content + fmt["user_suffix"]):
            return trim
    raise ChatTemplateError(f"the chat template changes a message's content other than by stripping whitespace: "
                            f"{_show(padded)!r}")


_CHECKS = [
    [("user", "Hello there")],
    [("system", "Be brief.\nAnswer in French."), ("user", "What is 2+2?"), ("assistant", "4, of course."),
     ("user", "And 3+3?")],
    [("user", "Hi"), ("assistant", "Hello! How can I help?"), ("user", "Tell me a joke.\n\nA short one."),
     ("assistant", "No."), ("user", "Please")],
    [("system", "You are a pirate."), ("user", "Ahoy")],
]


def chat_format(template: str, bos_text: str, eos_text: str) -> dict[str, str]:
    """The chat format (CHAT_KEYS -> str) of Jinja chat template `template`
    (GGUF's tokenizer.chat_template), rendered with `bos_text` and `eos_text`
    as bos_token and eos_token. Derived from renderings of conversations of
    sentinel messages, then checked: multi-turn conversations (with and
    without a system message, with and without the generation prompt) built
    from the format must equal the template's own rendering.
    ChatTemplateError names what the template did when it is not a template
    of per-role prefixes and suffixes (e.g. a system message folded into the
    first user message)."""
    import jinja2

    def render(messages: list[dict[str, str]], add_generation_prompt: bool, bos: str = _BOS) -> str:
        try:
            return render_template(template, messages, add_generation_prompt, bos, eos_text)
        except jinja2.TemplateError as e:
            roles = ", ".join(m["role"] for m in messages)
            raise ChatTemplateError(f"the chat template fails on [{roles}]: {e}") from e

    # the pieces from renderings with a sentinel BOS text, so that a BOS the
    # template writes through bos_token is told from the same text written
    # literally (SmolLM2's BOS is <|im_start|>, which its ChatML blocks start with)
    fmt = _chat_pieces(render, _BOS)
    fmt["trim_content"] = _trims(render, fmt)
    for conv in _CHECKS:
        messages = [{"role": r, "content": c} for r, c in conv]
        for gen in (False, True):
            want = render(messages, gen, bos_text)
            got = (bos_text if fmt["bos_in_template"] == "1" else "") + render_chat(fmt, messages, gen)
            if got != want:
                roles = ", ".join(r for r, _ in conv)
                raise ChatTemplateError(f"the chat template renders [{roles}] (generation prompt {gen}) as {want!r}, "
                                        f"not as per-role prefixes and suffixes give it: {got!r}")
    return {k: fmt[k] for k in CHAT_KEYS}


def llm_metadata(tok: TokenizerData, max_context: int, **settings) -> dict[str, bytes]:
    """{TOKENIZER_KEY: blob, CONFIG_KEY: text} for tern.export(metadata=...)
    or program.with_metadata()."""
    return {TOKENIZER_KEY: tokenizer_blob(tok), CONFIG_KEY: config_text(llm_config(tok, max_context, **settings))}
