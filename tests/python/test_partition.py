"""tern.partition.propose_partitions: the groups torch.fx's
CapabilityBasedPartitioner proposes, exactly, on the graphs of real models
(as the exporter hands them to each backend) and on random graphs.

Oracle: CapabilityBasedPartitioner(gm, support, ...).propose_partitions() on
the same graph with the same answers of the support predicate. "The same"
is strict: the same partitions in the same order, with the same ids, each
with the same nodes in the same order, and the predicate asked about the
same nodes in the same order.
"""
from __future__ import annotations

import operator
import random
from typing import Any, Callable

import pytest
import torch
from torch import nn
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

import tern
from tern import partition

Proposal = list[tuple[Any, list[str]]]


def _names(parts: list[Any]) -> Proposal:
    return [(q.id, [n.name for n in q.nodes]) for q in parts]


def _torch_proposal(gm: torch.fx.GraphModule, supported: Callable[[torch.fx.Node], bool],
                    **kw: Any) -> tuple[Proposal, list[str]]:
    asked: list[str] = []

    class Support(OperatorSupportBase):  # type: ignore[misc]
        def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
            asked.append(node.name)
            return supported(node)

    return _names(CapabilityBasedPartitioner(gm, Support(), **kw).propose_partitions()), asked


def _our_proposal(gm: torch.fx.GraphModule, supported: Callable[[torch.fx.Node], bool],
                  **kw: Any) -> tuple[Proposal, list[str]]:
    asked: list[str] = []

    def ask(node: torch.fx.Node) -> bool:
        asked.append(node.name)
        return supported(node)

    return _names(partition.propose_partitions(gm, ask, **kw)), asked


def _assert_same(gm: torch.fx.GraphModule, supported: Callable[[torch.fx.Node], bool], **kw: Any) -> Proposal:
    ours, ours_asked = _our_proposal(gm, supported, **kw)
    theirs, theirs_asked = _torch_proposal(gm, supported, **kw)
    assert ours_asked == theirs_asked
    assert ours == theirs, f"\n{gm.graph}\nours:   {ours}\ntheirs: {theirs}"
    return ours


# ---- the graphs of real models, as the exporter partitions them -------------


@pytest.fixture()
def compared(monkeypatch: pytest.MonkeyPatch) -> list[Proposal]:
    """Each proposal the exporter asks tern.partition for during the test,
    checked against torch's on the same graph and answers (the backend's
    supports() is asked once per node: it may record refusals)."""
    seen: list[Proposal] = []
    ours = partition.propose_partitions

    def checked(gm: torch.fx.GraphModule, supported: Callable[[torch.fx.Node], bool], **kw: Any) -> list[Any]:
        answers: dict[torch.fx.Node, bool] = {}

        def once(node: torch.fx.Node) -> bool:
            if node not in answers:
                answers[node] = supported(node)
            return answers[node]

        got = ours(gm, once, **kw)
        theirs, _ = _torch_proposal(gm, once, **kw)
        assert _names(got) == theirs
        seen.append(theirs)
        return got

    monkeypatch.setattr(partition, "propose_partitions", checked)
    return seen


class BranchyConvNet(nn.Module):
    """Convolutions with residual adds, a concat of two branches, a chunk
    (a multi-output node read through getitems) and a pooled linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.a, self.b = nn.Conv2d(16, 8, 1), nn.Conv2d(16, 8, 3, padding=1)
        self.mix = nn.Conv2d(16, 16, 3, padding=1)
        self.lo_conv = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.relu(self.stem(x))
        y = torch.cat([torch.relu(self.a(x)), torch.sigmoid(self.b(x))], 1)
        x = torch.relu(self.mix(y) + x)
        lo, hi = torch.chunk(x, 2, dim=1)
        z = torch.cat([self.lo_conv(lo) * hi, hi.exp()], 1) + x
        return self.head(z.mean((2, 3))), lo.sum()


class TinyTransformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
                                     for _ in range(2)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _models() -> dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]]:
    from test_backend import Mixed
    from test_cpu_backend import Attention, GroupsAndConcats, InvertedResiduals, SqueezeExcite

    return {
        "branchy-conv": lambda: (BranchyConvNet(), (torch.randn(2, 3, 12, 12),)),
        "transformer": lambda: (TinyTransformer(), (torch.randn(2, 7, 32),)),
        "inverted-residuals": lambda: (InvertedResiduals(), (torch.randn(1, 8, 16, 16),)),
        "groups-concats": lambda: (GroupsAndConcats(), (torch.randn(2, 16, 9, 11),)),
        "squeeze-excite": lambda: (SqueezeExcite(), (torch.randn(2, 8, 9, 7),)),
        "attention": lambda: (Attention(), (torch.randn(2, 10, 32),)),
        "mixed": lambda: (Mixed(), (torch.randn(4, 8), torch.randn(4, 8))),
    }


MODELS = ["branchy-conv", "transformer", "inverted-residuals", "groups-concats", "squeeze-excite", "attention",
          "mixed"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("backend", ["cpu", "tern_test"])
def test_model_graphs_partition_as_torch_does(name: str, backend: str, compared: list[Proposal]) -> None:
    from tern_test_backend import TestPartitioner

    from tern.backends.cpu import CpuPartitioner

    torch.manual_seed(0)
    model, args = _models()[name]()
    try:
        tern.export(model.eval(), args, partitioners=[CpuPartitioner() if backend == "cpu" else TestPartitioner()])
    except tern.ExportError:
        pass  # a model the test backend leaves ops of: its proposals were compared before that
    assert compared


def _tiny_llama(tmp_path: Any, layers: int = 2) -> Any:
    pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    from llm_files import hf_llama, write_gguf

    from tern.llm import from_gguf

    hf = hf_llama(tied=True)
    if layers != 2:
        hf = type(hf)(type(hf.config)(**{**hf.config.to_dict(), "num_hidden_layers": layers})).eval()
    write_gguf(hf, tmp_path / "tiny.gguf", "Q8_0")
    return from_gguf(tmp_path / "tiny.gguf")


def test_a_tiny_llama_generation_program_partitions_as_torch_does(tmp_path: Any, compared: list[Proposal]) -> None:
    import tern.llm

    tern.llm.export(_tiny_llama(tmp_path), max_context=32, max_tokens_per_step=8)  # dynamic shapes, block linears
    assert compared and sum(len(p) for p in compared) > 1


@pytest.mark.parametrize("partitioners", ["cpu", "none-dequantized"])
def test_a_tiny_llama_forward_partitions_as_torch_does(partitioners: str, tmp_path: Any,
                                                        compared: list[Proposal]) -> None:
    from tern.backends.cpu import CpuOptions, CpuPartitioner

    model = _tiny_llama(tmp_path)
    options = CpuOptions(block_linear=False) if partitioners != "cpu" else CpuOptions()
    tern.export(model, (torch.tensor([[5, 17, 99, 3, 64, 1, 127, 40]]),), partitioners=[CpuPartitioner(options)])
    assert compared


# ---- random graphs ------------------------------------------------------------


def _random_graph(rng: random.Random, size: int) -> torch.fx.GraphModule:
    """A DAG of `size` call_function nodes over 1 to 3 inputs: fan-in 1 to 4
    (mostly recent nodes, sometimes far ones), multi-output nodes read
    through getitems (some chained, some mixed with other users), views,
    dead ends, and an output of a few nodes."""
    g = torch.fx.Graph()
    values = [g.placeholder(f"x{i}") for i in range(rng.randint(1, 3))]
    tuples: list[torch.fx.Node] = []
    for _ in range(size):
        kind = rng.random()

        def pick() -> torch.fx.Node:
            if rng.random() < 0.7:
                return values[max(0, len(values) - 1 - int(rng.expovariate(0.4)))]
            return rng.choice(values)

        if kind < 0.12:
            node = g.call_function(torch.ops.aten.split.Tensor, (pick(), 2))
            tuples.append(node)
            for k in range(rng.randint(0, 3)):  # 0: a multi-output node no getitem reads
                item = g.call_function(operator.getitem, (node, k))
                values.append(item)
                if rng.random() < 0.2:  # a nested tuple, read through a getitem of the getitem
                    values.append(g.call_function(operator.getitem, (item, 0)))
            if rng.random() < 0.15:
                values.append(g.call_function(torch.ops.aten.clone.default, (node,)))  # a non-getitem user
        elif kind < 0.2 and tuples:
            values.append(g.call_function(operator.getitem, (rng.choice(tuples), rng.randint(0, 2))))
        elif kind < 0.3:
            values.append(g.call_function(torch.ops.aten.view, (pick(), [-1])))
        elif kind < 0.6:
            values.append(g.call_function(torch.ops.aten.relu.default, (pick(),)))
        elif kind < 0.85:
            values.append(g.call_function(torch.ops.aten.add.Tensor, (pick(), pick())))
        else:
            args = [pick() for _ in range(rng.randint(2, 4))]
            values.append(g.call_function(torch.ops.aten.cat.default, (args,)))
    outs = rng.sample(values, min(len(values), rng.randint(1, 4)))
    g.output(tuple(outs) if len(outs) > 1 else outs[0])
    g.lint()
    return torch.fx.GraphModule(nn.Module(), g)


def _random_support(rng: random.Random, gm: torch.fx.GraphModule) -> Callable[[torch.fx.Node], bool]:
    share = rng.choice([0.2, 0.5, 0.8, 0.95])
    claimed = {n for n in gm.graph.nodes if n.op == "call_function" and rng.random() < share}
    return claimed.__contains__


@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_partition_as_torch_does(seed: int) -> None:
    rng = random.Random(seed)
    groups = 0
    for _ in range(50):
        gm = _random_graph(rng, rng.choice([5, 12, 30, 60, 120]))
        single = rng.random() < 0.8
        groups += len(_assert_same(gm, _random_support(rng, gm), allows_single_node_partition=single))
    assert groups > 50


def test_random_large_graphs_partition_as_torch_does() -> None:
    rng = random.Random(1234)
    for _ in range(4):
        gm = _random_graph(rng, 600)
        _assert_same(gm, _random_support(rng, gm), allows_single_node_partition=True)


def test_nodes_of_other_kinds_may_be_claimed_too() -> None:
    """torch's partitioner asks about placeholders and the output as well,
    and groups them if told to: so does ours."""
    rng = random.Random(7)
    for _ in range(20):
        gm = _random_graph(rng, 20)
        claimed = {n for n in gm.graph.nodes if rng.random() < 0.7 or n.op != "call_function"}
        _assert_same(gm, claimed.__contains__)
