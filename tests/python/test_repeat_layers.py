"""A program of many equal layers made from the trace of its first two
(tern.repeat_layers), as tern.llm.export does.

Oracles: eager PyTorch on the whole model (every layer, its own weights and
state), and the program traced layer by layer (trace_all_layers=True): the
made program computes the same values, bit for bit.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import tern
import tern.ops
import tern.repeat_layers
from compare import assert_close
from tern.export import lower_to_graph, program_of_graph
from tern.repeat_layers import Layers, NotRepeatable


class Layer(nn.Module):
    """A linear map with a residual and a per-layer running sum as state."""

    def __init__(self, width: int, act=torch.tanh) -> None:
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.act = act
        self.register_buffer("total", torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total.add_(x.sum(0))
        return self.act(self.lin(x)) + x + 0.1 * self.total


class Stack(nn.Module):
    def __init__(self, layers, between: bool = False, skip: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.between, self.skip = between, skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first = None
        for layer in self.layers:
            x = layer(x)
            first = x if first is None else first
            if self.between:
                x = x * 2.0
        return x + first if self.skip else x.sum(-1)


def _stack(n: int, seed: int = 0, **kw) -> Stack:
    torch.manual_seed(seed)
    return Stack([Layer(8) for _ in range(n)], **kw).eval()


def _layers(full: Stack) -> Layers:
    names = lambda i: [f"layers.{i}.lin.weight", f"layers.{i}.lin.bias", f"layers.{i}.total"]  # noqa: E731
    tensors = {**dict(full.named_parameters()), **dict(full.named_buffers())}
    return Layers(lambda i: f"layers.{i}", names, len(full.layers), tensors)


def _export_repeated(full: Stack, x: torch.Tensor) -> tern.Program:
    two = Stack(full.layers[:2], full.between, full.skip).eval()
    supported = frozenset(tern.ops.supported_ops())
    gm = lower_to_graph(two, (x,), supported, None, _layers(full))
    from tern.backends.cpu import CpuPartitioner

    return program_of_graph(gm, supported, [CpuPartitioner()])


def _run(program: tern.Program, xs, tmp_path: Path):
    """The outputs of each call, and the state after the last."""
    path = tmp_path / "m.tern"
    program.save(str(path))
    m = tern.load(str(path))
    return [m(x.numpy())[0] for x in xs], m.state()


def test_made_layers_compute_what_every_layer_of_the_model_does(tmp_path: Path) -> None:
    full = _stack(5)
    xs = [torch.randn(3, 8) for _ in range(3)]
    program = _export_repeated(full, xs[0])
    got, state = _run(program, xs, tmp_path)
    eager = _stack(5)  # same seed: same weights, fresh state
    with torch.no_grad():
        for g, x in zip(got, xs):  # three calls: each layer's state carries over, its own
            assert_close(g, eager(x), rtol=1e-5)
    assert sorted(state) == [f"layers.{i}.total" for i in range(5)]
    for i, layer in enumerate(eager.layers):
        assert_close(state[f"layers.{i}.total"], layer.total, rtol=1e-5)


@pytest.mark.parametrize("kw,why", [(dict(between=True), "runs between layers 0 and 1"),
                                    (dict(skip=True), "after the layers, reads layer 0")])
def test_a_trace_that_does_not_repeat_is_refused(kw, why) -> None:
    full = _stack(4, **kw)
    with pytest.raises(NotRepeatable, match=why):
        _export_repeated(full, torch.randn(3, 8))


def test_layers_of_different_ops_are_refused() -> None:
    full = _stack(4)
    full.layers[1].act = torch.relu
    with pytest.raises(NotRepeatable, match="layer 1's"):
        _export_repeated(full, torch.randn(3, 8))


# ---- tern.llm.export ------------------------------------------------------

pytest.importorskip("gguf")
pytest.importorskip("transformers")

from llm_files import hf_llama, write_gguf  # noqa: E402
from tern.llm import from_gguf  # noqa: E402
from tern.llm.decoder import LlamaDecoder, causal_mask  # noqa: E402


def _steps(module, calls):
    """(ids, start) steps through an eager LlamaDecoder or a loaded file: each step's logits."""
    out = []
    for ids, start in calls:
        positions = torch.arange(start, start + ids.shape[1])
        mask = causal_mask(positions, start + ids.shape[1])
        if isinstance(module, torch.nn.Module):
            with torch.no_grad():
                out.append(module(ids, positions, mask).numpy())
        else:
            out.append(module(ids.numpy(), positions.numpy(), mask.numpy())[0])
    return out


CALLS = [(torch.tensor([[5, 17, 99, 3, 64, 1, 127]]), 0), (torch.tensor([[40]]), 7), (torch.tensor([[9, 2]]), 8)]


@pytest.fixture(scope="module")
def four_layers(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("llm") / "four-Q8_0.gguf"
    write_gguf(hf_llama(tied=False, init_std=0.15, layers=4), path, "Q8_0")
    return path


def _count_repeats(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = tern.repeat_layers.repeat_layers

    def counted(ep, layers):
        calls.append(layers.count)
        return real(ep, layers)

    monkeypatch.setattr(tern.repeat_layers, "repeat_layers", counted)
    return calls


@pytest.mark.parametrize("fast", [False, True])
def test_llm_export_from_two_layers_equals_the_trace_of_all(four_layers: Path, tmp_path: Path, monkeypatch,
                                                            fast: bool) -> None:
    model = from_gguf(four_layers)
    repeats = _count_repeats(monkeypatch)
    made = tern.llm.export(model, max_context=16, max_tokens_per_step=8, fast=fast)
    assert repeats == [4]
    traced = tern.llm.export(model, max_context=16, max_tokens_per_step=8, fast=fast, trace_all_layers=True)
    assert repeats == [4]
    outs = []
    for name, program in (("made", made), ("traced", traced)):
        path = tmp_path / f"{name}.tern"
        program.save(str(path))
        outs.append(_steps(tern.load(str(path)), CALLS))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    if not fast:  # float arithmetic: eager's values
        for got, want in zip(outs[0], _steps(LlamaDecoder(model, 16, 8).eval(), CALLS)):
            assert_close(got, want, rtol=1e-4)


def test_llm_export_traces_every_layer_when_a_block_differs(tmp_path: Path, monkeypatch) -> None:
    hf = hf_llama(tied=False, init_std=0.15, layers=4)
    write_gguf(hf, tmp_path / "q8.gguf", "Q8_0")
    write_gguf(hf, tmp_path / "q4.gguf", "Q4_0")
    model = from_gguf(tmp_path / "q8.gguf")
    model.blocks[2] = from_gguf(tmp_path / "q4.gguf").blocks[2]  # one layer in another format
    repeats = _count_repeats(monkeypatch)
    program = tern.llm.export(model, max_context=16, max_tokens_per_step=8, fast=False)
    assert repeats == []
    path = tmp_path / "mixed.tern"
    program.save(str(path))
    for got, want in zip(_steps(tern.load(str(path)), CALLS), _steps(LlamaDecoder(model, 16, 8).eval(), CALLS)):
        assert_close(got, want, rtol=1e-4)
