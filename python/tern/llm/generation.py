"""A language model as one .tern file, and generation from it.

    module = tern.llm.from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    tern.llm.export(module, max_context=1024).save("smollm2.tern")

The file holds one method, "forward", the step of tern.llm.decoder.LlamaDecoder:
(tokens int64 [1, T], positions int64 [T], mask float32 [T, L]) -> the logits
of the step's last token, float32 [1, vocab], with the KV cache as the
method's state. T is dynamic up to max_tokens_per_step (a prompt is one
step of T tokens, or several), L up to max_context; a generated token is
a step of T = 1. One method serves the prompt and each new token: the
weights are stored once and the cache needs no sharing between methods
(see docs/llm.md on why there is no separate prefill method).

Beside it the file holds what generation needs (tern.llm.file_meta): the
tokenizer, the chat format and the generation defaults.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping

if TYPE_CHECKING:
    from tern.llm.llama import LlamaGGUF
    from tern.repeat_layers import Layers

# The method's input names, in order (tern.llm.decoder.LlamaDecoder.forward).
INPUTS = ("tokens", "positions", "mask")


def export(module: "LlamaGGUF", max_context: int = 1024, *, max_tokens_per_step: int = 128, fast: bool = True,
           metadata: Mapping[str, bytes] | None = None, trace_all_layers: bool = False, **defaults: Any):
    """The generation program of `module` (tern.llm.from_gguf) -> tern.Program.

    max_context: the most tokens a sequence holds (prompt and generated; the
    KV cache is planned for it: 2 * layers * max_context * kv_heads *
    head_dim floats). max_tokens_per_step: the most prompt tokens one step
    takes (longer prompts take several steps). fast=True: the cpu backend
    reads the weight blocks in place and quantizes activations to int8 per
    block of 32, as llama.cpp does; fast=False: weights dequantized to float
    each step and float arithmetic throughout, the same values as eager
    PyTorch (for checking, not for speed). `defaults` (temperature, top_k,
    top_p, ...) are stored as the file's generation defaults.

    torch.export traces the first two layers and the others are made from
    the second (tern.repeat_layers): a second of tracing a layer saved.
    Blocks of different structure (weight formats differing from layer to
    layer), or trace_all_layers=True, trace every layer: the same program,
    slower.
    """
    import warnings

    import torch

    import tern.ops
    from tern.backends.cpu import CpuOptions, CpuPartitioner
    from tern.export import lower_to_graph, program_of_graph
    from tern.llm.decoder import LlamaDecoder, causal_mask
    from tern.llm.llama import LlamaGGUF
    from tern.program import check_metadata
    from tern.repeat_layers import NotRepeatable

    if not isinstance(module, LlamaGGUF):
        raise TypeError(f"tern.llm.export takes the module tern.llm.from_gguf builds, not {type(module).__name__}")
    entries = dict(metadata or {})
    entries.update(_generation_metadata(module, max_context, defaults))
    check_metadata(entries)
    step = LlamaDecoder(module, max_context, max_tokens_per_step).eval()
    t = min(3, step.max_tokens_per_step)
    positions = torch.arange(t)
    args = (torch.zeros(1, t, dtype=torch.int64), positions, causal_mask(positions, t))
    dim_t = torch.export.Dim("T", min=1, max=step.max_tokens_per_step) if step.max_tokens_per_step > 1 else None
    dim_l = torch.export.Dim("L", min=1, max=max_context)
    dynamic = ({1: dim_t}, {0: dim_t}, {0: dim_t, 1: dim_l}) if dim_t is not None else (None, None, {1: dim_l})
    supported = frozenset(tern.ops.supported_ops())
    layers = None if trace_all_layers else _repeated_layers(step)
    gm = None
    if layers is not None:
        two = LlamaDecoder(_first_blocks(module, 2), max_context, max_tokens_per_step, layers=2).eval()
        try:
            gm = lower_to_graph(two, args, supported, dynamic, layers)
        except NotRepeatable as e:
            warnings.warn(f"tern.llm.export: tracing all {layers.count} layers, as the trace of two does not "
                          f"repeat: {e}", stacklevel=2)
    if gm is None:
        gm = lower_to_graph(step, args, supported, dynamic)
    return program_of_graph(gm, supported, [CpuPartitioner(CpuOptions(block_linear=fast))], entries)


def _first_blocks(module: "LlamaGGUF", n: int) -> "LlamaGGUF":
    """`module` with its first n blocks only, sharing their weights: what
    torch.export traces (it lifts every weight of the module, used or not)."""
    import copy

    from torch import nn

    part = copy.copy(module)
    part._modules = dict(module._modules)
    part._modules["blocks"] = nn.ModuleList(module.blocks[:n])
    return part


def _repeated_layers(step) -> "Layers | None":
    """How step's layers 2 .. repeat layer 1 (tern.repeat_layers.Layers), or
    None where tracing them all is the way: fewer than 3 layers, or a block
    of another structure than block 1's."""
    from tern.repeat_layers import Layers

    blocks = step.model.blocks
    if len(blocks) < 3 or any(b.structure() != blocks[1].structure() for b in blocks[2:]):
        return None
    tensors = {**dict(step.named_parameters()), **dict(step.named_buffers())}
    return Layers(lambda i: f"model.blocks.{i}", step.layer_names, len(blocks), tensors)


def _generation_metadata(module: "LlamaGGUF", max_context: int, defaults: Mapping[str, Any]) -> dict[str, bytes]:
    from tern.llm.file_meta import llm_metadata

    return llm_metadata(module.tokenizer, max_context, **defaults)


# ---- generation: the C++ runner (extension/llm/generator.h) ----------------


@dataclass
class Generation:
    """What Generator.generate returns."""

    tokens: list[int]  # the generated ids (a stop token that ended it not included)
    text: str  # their text (bytes that are not UTF-8 replaced)
    prompt_tokens: int
    stopped: bool  # ended by a stop token (else by max_tokens or the context's end)
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    first_token_ms: float  # from the start of the prompt's steps to the first token


class Generator:
    """A language model's .tern file loaded for generation (tern.llm.load).

        g = tern.llm.load("smollm2.tern", threads=2)
        r = g.generate("The capital of France is", max_tokens=16, temperature=0.0)
        r.text, r.tokens, r.decode_tokens_per_s
        for piece in g.stream("Tell me a story", chat=True):   # text as it comes
            print(piece, end="", flush=True)

    The sequence continues across calls (the KV cache keeps the
    conversation): reset() starts a new one; a chat=True prompt after
    a chat=True generation is the conversation's next user turn. Not
    thread-safe: one Generator per thread.
    """

    def __init__(self, path: str, threads: int | None = None) -> None:
        from tern import _runtime

        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a whole number >= 1 (or None for the physical cores), got {threads!r}")
        self.path = str(path)
        self._g = _runtime.Generator(self.path, threads or 0)
        self._chatting = False
        self._stopped = False

    @property
    def max_context(self) -> int:
        return self._g.max_context()

    @property
    def position(self) -> int:
        """Tokens the sequence holds."""
        return self._g.position()

    def tokenize(self, text: str, special: bool = True) -> list[int]:
        """Token ids of `text`, no BOS or EOS added; with special=True the
        special tokens' texts in it ("<|im_end|>") are their ids."""
        return self._g.tokenize(text, special)

    def detokenize(self, ids) -> str:
        return self.detokenize_bytes(ids).decode("utf-8", errors="replace")

    def detokenize_bytes(self, ids) -> bytes:
        return b"".join(self._g.token_bytes(int(i)) for i in ids)

    def reset(self) -> None:
        """A new sequence."""
        self._g.reset()
        self._chatting = False

    def generate(self, prompt: str | list[int], max_tokens: int = 128, **options: Any) -> Generation:
        """Generates after `prompt` (text, or token ids fed as they are) and
        returns the tokens, their text and the speeds. Options: chat=False
        (the prompt is a user message in the file's chat format), system=None
        (its system message), temperature, top_k, top_p, repeat_penalty,
        repeat_last_n (the file's defaults when not given; temperature=0.0
        is greedy), seed=0, stop=True (end at the file's stop tokens).
        A prompt that does not fit the context is a ValueError saying so."""
        tokens = list(self._run(prompt, max_tokens, **options))
        s = self._g.stats()
        return Generation(tokens, self.detokenize(tokens), s["prompt_tokens"], self._stopped,
                          s["prefill_tokens_per_s"], s["decode_tokens_per_s"], s["first_token_ms"])

    def stream(self, prompt: str | list[int], max_tokens: int = 128, **options: Any) -> Iterator[str]:
        """generate(), yielding the text as tokens come (never inside a
        UTF-8 character)."""
        held = b""
        for t in self._run(prompt, max_tokens, **options):
            held += self._g.token_bytes(t)
            cut = _complete_utf8(held)
            if cut:
                yield held[:cut].decode("utf-8", errors="replace")
                held = held[cut:]
        if held:
            yield held.decode("utf-8", errors="replace")

    def stats(self) -> dict[str, float]:
        """The last generation's figures (tokens, milliseconds, tokens/s)."""
        return self._g.stats()

    def _run(self, prompt: str | list[int], max_tokens: int, chat: bool = False, system: str | None = None,
             temperature: float | None = None, top_k: int | None = None, top_p: float | None = None,
             repeat_penalty: float | None = None, repeat_last_n: int | None = None, seed: int = 0,
             stop: bool = True) -> Iterator[int]:
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a whole number >= 1, got {max_tokens!r}")
        if isinstance(prompt, str):
            if chat and self._chatting and self.position > 0:
                ids = self._g.chat_turn(prompt, self._stopped)
            elif chat:
                ids = self._g.chat_prompt(([("system", system)] if system else []) + [("user", prompt)])
            else:
                ids = self._g.text_prompt(prompt)
        else:
            ids = [int(i) for i in prompt]
        d = self._g.defaults()
        self._g.start(ids, max_tokens, d[0] if temperature is None else float(temperature),
                      d[1] if top_k is None else int(top_k), d[2] if top_p is None else float(top_p), int(seed),
                      d[3] if repeat_penalty is None else float(repeat_penalty),
                      d[4] if repeat_last_n is None else int(repeat_last_n), bool(stop))
        self._chatting = chat
        self._stopped = False
        while True:
            more, t = self._g.next()
            if not more:
                self._stopped = t >= 0
                return
            yield t


def _complete_utf8(b: bytes) -> int:
    """Bytes of b up to a trailing incomplete UTF-8 sequence (all when none)."""
    for back in range(1, min(4, len(b)) + 1):
        c = b[-back]
        if c & 0xC0 != 0x80:  # the last sequence's lead byte (or ASCII)
            need = 1 if c < 0x80 else 2 if c >> 5 == 6 else 3 if c >> 4 == 14 else 4 if c >> 3 == 30 else 1
            return len(b) if back >= need else len(b) - back
    return len(b)


def load(path: str, threads: int | None = None) -> Generator:
    """A language model's .tern file (tern.llm.export) ready to generate."""
    return Generator(path, threads)
