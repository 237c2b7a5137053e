"""State across calls (format 1.2): models whose forward mutates registered
buffers keep them inside the loaded method between calls, as the nn.Module
keeps them between forward() calls, and can reset them.

The oracle is the same module in eager PyTorch, called the same way: a copy
made before export (export does not run forward, so both start equal).
"""
from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import tern
from compare import assert_close
from tern.inspect import read_program


class StreamingGRU(nn.Module):
    """Audio-style streaming: one frame per call, the hidden state in a buffer,
    and a step counter."""

    def __init__(self, features: int = 16, hidden: int = 32) -> None:
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 4)
        self.register_buffer("hidden", torch.zeros(1, 1, hidden))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, frame: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = self.gru(frame, self.hidden)
        self.hidden.copy_(h)
        self.steps.add_(1)
        return self.head(y[:, -1]), self.steps.clone()


class KVCacheDecoder(nn.Module):
    """One decoder layer that generates a token per call, keeping keys and
    values of the tokens so far in a cache (index_copy_ at the position
    counter) and masking the positions not yet written."""

    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 2, max_len: int = 40) -> None:
        super().__init__()
        self.heads, self.head_dim, self.max_len = heads, dim // heads, max_len
        self.embed = nn.Embedding(vocab, dim)
        self.pos_embed = nn.Embedding(max_len, dim)
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("k_cache", torch.zeros(1, heads, max_len, dim // heads))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_len, dim // heads))
        self.register_buffer("pos", torch.zeros(1, dtype=torch.int64))

    def forward(self, token: torch.Tensor) -> torch.Tensor:
        x = self.embed(token) + self.pos_embed(self.pos).unsqueeze(0)
        q, k, v = self.qkv(self.norm(x)).split(self.heads * self.head_dim, dim=-1)
        q, k, v = (t.view(1, 1, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        self.k_cache.index_copy_(2, self.pos, k)
        self.v_cache.index_copy_(2, self.pos, v)
        visible = torch.arange(self.max_len) <= self.pos
        att = (q @ self.k_cache.transpose(-1, -2)) / math.sqrt(self.head_dim)
        att = att.masked_fill(~visible, float("-inf")).softmax(-1)
        y = (att @ self.v_cache).transpose(1, 2).reshape(1, 1, -1)
        x = x + self.proj(y)
        self.pos.add_(1)
        return self.head(x)[:, -1]


def _load(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path, **kw: Any) -> tern.Module:
    path = tmp_path / "model.tern"
    tern.export(model, args, **kw).save(path)
    return tern.load(str(path))


@pytest.mark.parametrize("partitioners", [None, ()], ids=["cpu_backend", "portable"])
def test_streaming_gru_carries_its_hidden_state_over_100_calls(partitioners: Any, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = StreamingGRU().eval()
    eager = copy.deepcopy(model)
    module = _load(model, (torch.randn(1, 1, 16),), tmp_path, partitioners=partitioners)
    assert set(module.state()) == {"hidden", "steps"}
    frames = torch.randn(100, 1, 1, 16)
    for i, frame in enumerate(frames):
        with torch.no_grad():
            want, steps = eager(frame)
        got, got_steps = module(frame)
        assert_close(got, want)
        assert int(got_steps) == int(steps) == i + 1
    assert_close(module.state()["hidden"], eager.hidden)
    assert np.abs(module.state()["hidden"]).max() > 0.01, "the state changed"

    # reset: back to the buffers at export, and the same outputs again.
    module.reset()
    assert_close(module.state()["hidden"], np.zeros((1, 1, 32), np.float32), rtol=0.0, atol=0.0)
    assert int(module.state()["steps"]) == 0
    fresh = copy.deepcopy(model)
    for frame in frames[:3]:
        with torch.no_grad():
            want, _ = fresh(frame)
        assert_close(module(frame)[0], want)


def test_kv_cache_decoder_generates_32_tokens_like_eager(tmp_path: Path) -> None:
    torch.manual_seed(1)
    model = KVCacheDecoder().eval()
    eager = copy.deepcopy(model)
    module = _load(model, (torch.tensor([[3]]),), tmp_path)
    want_token = got_token = 3
    tokens = []
    for _ in range(32):
        with torch.no_grad():
            want = eager(torch.tensor([[want_token]]))
        (got,) = module(np.array([[got_token]], dtype=np.int64))
        assert_close(got, want)
        want_token, got_token = int(want.argmax()), int(got.argmax())
        assert got_token == want_token
        tokens.append(got_token)
    assert len(set(tokens)) > 1, "the decoder is not stuck on one token"
    state = module.state()
    assert int(state["pos"][0]) == 32
    assert_close(state["k_cache"], eager.k_cache)
    assert_close(state["v_cache"], eager.v_cache)


class Shift(nn.Module):
    """Each call shifts a -> b and x -> a: the new value of b is a's old
    value, which a's own update overwrites."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("a", torch.arange(4.0))
        self.register_buffer("b", -torch.arange(4.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.b.copy_(self.a)
        self.a.copy_(x)
        return self.b * 2


@pytest.mark.parametrize("partitioners", [None, ()], ids=["cpu_backend", "portable"])
def test_states_that_shift_values_do_not_see_each_others_writes(partitioners: Any, tmp_path: Path) -> None:
    model = Shift()
    eager = copy.deepcopy(model)
    module = _load(model, (torch.zeros(4),), tmp_path, partitioners=partitioners)
    for i in range(5):
        x = torch.full((4,), float(i))
        with torch.no_grad():
            want = eager(x)
        assert_close(module(x)[0], want)
        assert_close(module.state()["a"], eager.a)
        assert_close(module.state()["b"], eager.b)


def test_state_is_in_the_file_with_its_initial_value_and_format_1_2(tmp_path: Path) -> None:
    model = StreamingGRU()
    model.hidden.fill_(0.5)  # the value at export is the initial value
    program = tern.export(model, (torch.randn(1, 1, 16),))
    assert [(s.name, s.dtype, s.shape) for s in program.state_specs] == [
        ("hidden", "float32", (1, 1, 32)), ("steps", "int64", ())]
    assert "state  hidden: float32[1, 1, 32] (kept between calls)" in program.summary()
    info = read_program(program.data)
    assert info["header"]["version_minor"] == 2
    method = info["methods"][0]
    for entry in method["state"]:
        assert method["values"][entry["value"]]["storage"] == "State"
        assert method["values"][entry["initial"]]["storage"] == "Constant"
    moves = [i for i in method["instructions"] if i["kind"] == "Move"]
    assert sorted(m["to"] for m in moves) == [s["value"] for s in method["state"]]
    # No other tensor shares the state's bytes at any step.
    plan = program.memory_plan
    last = program.num_instructions - 1
    state_values = {s["value"] for s in method["state"]}
    spans = [i for i in plan.intervals if i.value in state_values]
    assert len(spans) == 2 and all((i.start, i.end) == (0, last) for i in spans)
    path = tmp_path / "model.tern"
    program.save(path)
    assert_close(tern.load(str(path)).state()["hidden"], np.full((1, 1, 32), 0.5, np.float32), rtol=0.0, atol=0.0)


def test_a_model_without_state_stays_format_1_1() -> None:
    program = tern.export(nn.Linear(3, 2), (torch.randn(1, 3),))
    assert read_program(program.data)["header"]["version_minor"] == 1
    assert program.state_specs == ()


class WritesInput(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x * 2


def test_writing_to_an_input_is_an_export_error_naming_it() -> None:
    with pytest.raises(tern.ExportError, match=r"writes to its input 'x' \(Tern inputs are read-only"):
        tern.export(WritesInput(), (torch.zeros(3),))
