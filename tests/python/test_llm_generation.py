"""Generation from a language model's .tern file (issue 27): the decoder step
with its KV cache (tern.llm.decoder), its export (tern.llm.export) with the
cache as state written in place (tern.state_in_place), on small GGUF files
written here (llm_files.py).

Oracles: the full module tern.llm.from_gguf builds (itself checked against
Hugging Face's LlamaForCausalLM in test_llm_gguf.py) run by eager PyTorch on
the whole sequence; for the in-place state pass, eager PyTorch on modules
whose state updates it must leave alone.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("gguf")
pytest.importorskip("transformers")

import tern  # noqa: E402
from compare import assert_close  # noqa: E402
from llm_files import hf_llama, write_gguf  # noqa: E402
from tern.llm import from_gguf  # noqa: E402
from tern.llm.decoder import LlamaDecoder, causal_mask  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("llm") / "tiny-Q4_1.gguf"
    write_gguf(hf_llama(tied=True, init_std=0.15), path, "Q4_1")  # continuations that depend on the context
    return path


@pytest.fixture(scope="module")
def exact_file(tiny: Path, tmp_path_factory) -> Path:
    """The exact export (fast=False): float arithmetic, eager's values."""
    out = tmp_path_factory.mktemp("llm") / "tiny-exact.tern"
    tern.llm.export(from_gguf(tiny), max_context=72, max_tokens_per_step=8, fast=False).save(str(out))
    return out


def _step(module, ids: torch.Tensor, start: int, length: int | None = None):
    """Runs tokens ids [1, T] at positions start .. start + T - 1 through a
    step (eager LlamaDecoder or a loaded tern module): the last token's logits."""
    positions = torch.arange(start, start + ids.shape[1])
    mask = causal_mask(positions, length or start + ids.shape[1])
    if isinstance(module, torch.nn.Module):
        with torch.no_grad():
            return module(ids, positions, mask)
    (out,) = module(ids.numpy(), positions.numpy(), mask.numpy())
    return out


def test_a_step_with_the_cache_gives_the_full_modules_logits(tiny: Path) -> None:
    model = from_gguf(tiny)
    ids = torch.tensor([[5, 17, 99, 3, 64, 1, 127, 40, 9, 11, 2]])
    with torch.no_grad():
        full = model(ids)
    step = LlamaDecoder(model, max_context=16).eval()
    assert_close(_step(step, ids[:, :4], 0), full[:, 3])  # a prompt of 4
    assert_close(_step(step, ids[:, 4:7], 4), full[:, 6])  # 3 more at position 4: attends the cached 0 .. 3
    for p in range(7, 11):  # one token a step
        assert_close(_step(step, ids[:, p:p + 1], p), full[:, p])


def test_the_mask_hides_what_the_cache_holds_past_the_position(tiny: Path) -> None:
    """After a longer sequence, a new one starts at 0 over the stale cache:
    the mask must keep the stale entries out."""
    model = from_gguf(tiny)
    step = LlamaDecoder(model, max_context=16).eval()
    _step(step, torch.tensor([[7, 8, 9, 10, 11, 12]]), 0)
    ids = torch.tensor([[40, 41, 42]])
    with torch.no_grad():
        full = model(ids)
    assert_close(_step(step, ids, 0), full[:, 2])


def test_the_exported_step_gives_eagers_logits_prompt_then_tokens(tiny: Path, exact_file: Path) -> None:
    model = from_gguf(tiny)
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9]])  # 11 prompt tokens: two steps of 8 and 3
    with torch.no_grad():
        full = model(ids)
    m = tern.load(str(exact_file), threads=1)
    assert_close(_step(m, ids[:, :8], 0), full[:, 7])
    assert_close(_step(m, ids[:, 8:11], 8), full[:, 10])
    for p in range(11, 15):
        assert_close(_step(m, ids[:, p:p + 1], p), full[:, p])


def test_greedy_tokens_equal_eagers_for_64_tokens(tiny: Path, exact_file: Path) -> None:
    """The exact export's greedy continuation is eager's, on several prompts."""
    model = from_gguf(tiny)
    m = tern.load(str(exact_file), threads=2)
    for prompt in ([1, 2, 3], [100, 7, 55, 55, 2, 90, 31], [42]):
        m.reset()
        want = list(prompt)
        with torch.no_grad():
            for _ in range(64):
                want.append(int(model(torch.tensor([want]))[0, -1].argmax()))
        got = list(prompt)
        logits = _step(m, torch.tensor([prompt]), 0)
        for _ in range(64):
            got.append(int(np.argmax(logits)))
            logits = _step(m, torch.tensor([[got[-1]]]), len(got) - 1)
        assert got == want, f"prompt {prompt}: tern {got[len(prompt):]} vs eager {want[len(prompt):]}"
        assert len(set(got[len(prompt):])) > 10, "a degenerate continuation shows little"


def test_the_kv_cache_is_written_in_place(tiny: Path) -> None:
    """No Move copies the caches back: each is its own index_put's out, so
    the planned memory grows with the context by the caches' bytes once."""
    model = from_gguf(tiny)
    programs = [tern.llm.export(model, max_context=n, max_tokens_per_step=8, fast=False) for n in (72, 144)]
    for program in programs:
        ops = dict(program.op_counts)
        assert "move" not in ops, ops
        assert ops["aten::index_put"] == 2 * 2  # two layers, keys and values
    per_position = 2 * 2 * 2 * 16 * 4  # layers * (k, v) * kv_heads * head_dim * 4 bytes
    mask_row = 8 * 4  # the mask input [T <= 8, L] grows by a column of T floats
    growth = programs[1].planned_bytes - programs[0].planned_bytes
    assert growth < 1.25 * (per_position + mask_row) * 72, f"{growth} bytes for 72 positions: the caches are copied"


class _Counter(torch.nn.Module):
    """Writes row i of its buffer, but reads the old value after the write:
    the state must not be updated in place."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.zeros(4, 3))

    def forward(self, i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        new = self.buf.index_copy(0, i, v)
        old_sum = self.buf.sum(0)  # the value before this call's write
        self.buf.copy_(new)
        return old_sum + new.sum(0)


class _Cache(torch.nn.Module):
    """A KV-cache-like buffer written in place and then read through a slice."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.zeros(1, 6, 2))

    def forward(self, i: torch.Tensor, v: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        self.buf.index_copy_(1, i, v)
        return self.buf[:, :n.shape[0]].sum(1) * 2.0


@pytest.mark.parametrize("partitioners", [None, ()], ids=["cpu", "portable"])
def test_state_read_after_its_update_is_not_written_in_place(partitioners, tmp_path: Path) -> None:
    model = _Counter()
    args = (torch.tensor([1]), torch.ones(1, 3))
    program = tern.export(_Counter(), args, partitioners=partitioners)
    assert "move" in dict(program.op_counts)
    program.save(str(tmp_path / "c.tern"))
    m = tern.load(str(tmp_path / "c.tern"), threads=1)
    for k, row in enumerate([2, 0, 2, 3]):
        i, v = torch.tensor([row]), torch.full((1, 3), float(k + 1))
        with torch.no_grad():
            want = model(i, v)
        (got,) = m(i.numpy(), v.numpy())
        assert_close(got, want)


def test_state_written_in_place_keeps_eagers_values_across_calls(tmp_path: Path) -> None:
    model = _Cache()
    n = torch.export.Dim("n", min=1, max=6)
    args = (torch.tensor([0]), torch.ones(1, 1, 2), torch.zeros(2))
    program = tern.export(_Cache(), args, dynamic_shapes=(None, None, {0: n}))
    assert "move" not in dict(program.op_counts)
    program.save(str(tmp_path / "c.tern"))
    m = tern.load(str(tmp_path / "c.tern"), threads=1)
    for k in range(6):
        i, v, length = torch.tensor([k]), torch.full((1, 1, 2), float(k * k + 1)), torch.zeros(k + 1)
        with torch.no_grad():
            want = model(i, v, length)
        (got,) = m(i.numpy(), v.numpy(), length.numpy())
        assert_close(got, want)
    m.reset()
    (got,) = m(np.array([0]), np.full((1, 1, 2), 5.0, np.float32), np.zeros(1, np.float32))
    assert_close(got, torch.full((1, 2), 10.0))
