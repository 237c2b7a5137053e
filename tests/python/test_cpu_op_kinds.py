"""The cpu backend's op kinds: one list, backends/cpu/ops.def, drives the
runtime's tables (C++) and the exporter's claims (Python, through
tern._runtime.cpu_op_kinds). Each op family says which cpu.fbs ops its
lowering emits (EMITS); the partitioner claims a node only if the runtime
has every op of its family, and says which one it lacks otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torchao.quantization.pt2e  # noqa: F401  (defines the quantized_decomposed and torchao ops)
from torch import nn

import tern
import tern.backends.cpu as cpu_backend
from compare import assert_outputs_close
from tern.backends.cpu import FAMILIES, CpuPartitioner, family_of, runtime_op_kinds
from tern.backends.cpu.compile import EMITS as COMPILER_EMITS


def test_the_runtime_op_kinds_are_ops_def_read_through_the_bindings() -> None:
    import tern._runtime as _runtime
    from tern.backends.cpu.fb.OpKind import OpKind

    kinds = runtime_op_kinds()
    assert kinds == dict(_runtime.cpu_op_kinds())
    # in the order of cpu.fbs's OpKind union (program.cpp checks it at compile time too)
    union = sorted((v, k) for k, v in vars(OpKind).items() if not k.startswith("_") and k != "NONE")
    assert list(kinds) == [k for _, k in union]
    if cpu_backend.OPS_DEF.is_file():  # the checkout's list, what the bindings were built from
        assert dict(cpu_backend._CPU_OP.findall(cpu_backend.OPS_DEF.read_text())) == kinds


def test_the_families_emit_exactly_the_runtime_op_kinds() -> None:
    kinds = set(runtime_op_kinds())
    emitted = set(COMPILER_EMITS).union(*(family.EMITS for family in FAMILIES))
    assert emitted - kinds == set(), "emitted by a family, but the runtime has no such op"
    assert kinds - emitted == set(), "in backends/cpu/ops.def, but no family's EMITS lists it"


class _KeepPrograms(CpuPartitioner):
    """The cpu partitioner, keeping each subgraph with its compiled program."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[tuple[Any, Any]] = []

    def preprocess(self, subgraph: Any) -> Any:
        from tern.backends.cpu.compile import compile_subgraph

        self.kept.append((subgraph, compile_subgraph(subgraph, self.options)))
        return super().preprocess(subgraph)


class _FloatOps(nn.Module):
    """An op of every float family: Winograd and transposed convolutions, a
    linear layer and a product of two computed matrices, attention, layer
    norm, RMSNorm, softmax, x op number, an add, a pool, a concat, a slice, a
    permute."""

    def __init__(self) -> None:
        super().__init__()
        self.wide = nn.Conv2d(128, 128, 3, padding=1)  # Winograd: 128 channels, 8x8 pixels
        self.up = nn.ConvTranspose2d(128, 8, 2, stride=2)  # 4 phases, interleaved
        self.fc = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)
        self.rms = nn.RMSNorm(16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = nn.functional.max_pool2d(self.up(torch.relu(self.wide(x))), 2)  # [1, 8, 8, 8]
        t = self.rms(self.norm(self.fc(y.reshape(1, 8, 64)[..., :16] * 2.0)))  # [1, 8, 16]
        a = nn.functional.scaled_dot_product_attention(t, t, t)
        s = torch.softmax(t @ t.transpose(1, 2), -1)  # bmm of two computed matrices
        return torch.cat([a + t, t], 1), s, y.permute(0, 2, 3, 1)


def _float() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return _FloatOps().eval(), (torch.randn(1, 128, 8, 8),)


def _gguf() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Linear layers over GGUF weights (BlockLinear; test_cpu_blocklinear.py)."""
    from test_cpu_blocklinear import GGUFMlp

    return GGUFMlp("Q4_0").eval(), (torch.randn(1, 5, 64),)


def _quantized(scheme: str, make_name: str) -> Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]:
    def make() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        import test_quantize

        model, args, calibration = getattr(test_quantize, make_name)()
        return tern.quantize(model, args, calibration=calibration, scheme=scheme, progress=False), args

    return make


def test_every_op_of_an_exported_program_is_one_its_family_emits() -> None:
    """Each op, by the family of the node it is named after (the compiler's
    own ops, at the edges, are named after none), has a kind in that
    family's EMITS; and across these models each family emits every kind it
    lists, so EMITS neither lies nor promises."""
    seen: set[tuple[str, str]] = set()
    for make in (_float, _gguf, _quantized("int8", "_cnn"), _quantized("int8-dynamic", "_mlp"),
                 _quantized("int8-weight", "_mlp")):
        torch.manual_seed(0)
        model, args = make()
        cpu = _KeepPrograms()
        tern.export(model, args, partitioners=[cpu])
        for subgraph, program in cpu.kept:
            nodes = {n.name: n for n in subgraph.graph.nodes}
            for op in program.ops:
                head = op.nodes.split("+")[0]
                family = family_of(nodes[head]) if head else None
                name, emits = (family.__name__, family.EMITS) if family else ("compile", COMPILER_EMITS)
                assert op.kind in emits, f"{op.kind} op ({op.nodes}) is not in {name}.EMITS {emits}"
                seen.add((name.rsplit(".", 1)[-1], op.kind))
    declared = {(f.__name__.rsplit(".", 1)[-1], k) for f in FAMILIES for k in f.EMITS}
    declared |= {("compile", k) for k in COMPILER_EMITS}
    assert declared - seen == set(), "listed in EMITS, but no op of these models"


class _AttentionBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.reshape(2, 5, 2, 8).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(a.transpose(1, 2).reshape(2, 5, 16))


def test_a_kind_the_runtime_lacks_leaves_its_family_on_the_portable_kernels(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    kinds = dict(runtime_op_kinds())
    del kinds["Attention"]
    monkeypatch.setattr(cpu_backend, "runtime_op_kinds", lambda: kinds)
    torch.manual_seed(0)
    model, x = _AttentionBlock().eval(), torch.randn(2, 5, 16)
    cpu = CpuPartitioner()
    program = tern.export(model, (x,), partitioners=[cpu])
    why = "the runtime's cpu backend has no Attention op (backends/cpu/ops.def)"
    assert [(op, reason) for _, op, reason in cpu.refused] == [("aten::scaled_dot_product_attention", why)]
    assert f"aten::scaled_dot_product_attention: {why}" in cpu.report()
    ops = dict(program.op_counts)
    assert ops["aten::scaled_dot_product_attention"] == 1  # on the portable kernels
    assert ops["backend:cpu"] == 2  # the linear layers around it stay in the backend
    path = tmp_path / "model.tern"
    program.save(path)
    with torch.no_grad():
        assert_outputs_close(tern.load(str(path))(x), [model(x)], rtol=1e-4)
