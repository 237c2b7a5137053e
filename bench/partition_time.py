"""The exporter's partition proposal: torch.fx's CapabilityBasedPartitioner
against tern.partition, on the graph of a language model's generation
program. Not part of `make test` or `make bench`:

    PYTHONPATH=<where tern is installed> python bench/partition_time.py [--layers 30] [--gguf FILE]

It runs tern.llm.export(model, max_context=256) up to the partitioner, keeping
the graph it asks tern.partition to partition (with the backend's answers
for its nodes), then proposes partitions for that graph both ways (torch:
its constructor, which builds the dependency sets, and propose_partitions;
tern: propose_partitions), checks that the two agree, and prints the
seconds of each. The model is the tiny Llama of the tests
(tests/python/llm_files.py) with --layers layers, or the GGUF file given.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

import tern.llm
from tern import partition


class _Captured(Exception):
    pass


def captured_graph(model: Any) -> tuple[torch.fx.GraphModule, dict[torch.fx.Node, bool], dict[str, Any]]:
    """The graph the export partitions first (the method's graph), the
    backend's answers for its nodes, and the partitioner's arguments; the
    export stops there."""
    got: list[Any] = []
    ours = partition.propose_partitions

    def keep(gm: torch.fx.GraphModule, supported: Callable[[torch.fx.Node], bool], **kw: Any) -> list[Any]:
        got.append((gm, {n: bool(supported(n)) for n in reversed(gm.graph.nodes)}, kw))
        raise _Captured

    partition.propose_partitions = keep
    try:
        tern.llm.export(model, max_context=256)
    except _Captured:
        pass
    finally:
        partition.propose_partitions = ours
    return got[0]


def tiny_llama(layers: int, folder: Path) -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
    from llm_files import hf_llama, write_gguf

    hf = hf_llama(tied=True)
    hf = type(hf)(type(hf.config)(**{**hf.config.to_dict(), "num_hidden_layers": layers})).eval()
    write_gguf(hf, folder / "tiny.gguf", "Q8_0")
    return tern.llm.from_gguf(folder / "tiny.gguf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=30)
    ap.add_argument("--gguf", help="a Llama-family GGUF file instead of the tiny Llama")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = tern.llm.from_gguf(args.gguf) if args.gguf else tiny_llama(args.layers, Path(tmp))
        t = time.perf_counter()
        gm, answers, kw = captured_graph(model)
        print(f"export up to the partitioner: {time.perf_counter() - t:.1f} s")
    what = args.gguf or f"tiny Llama, {args.layers} layers"

    class Support(OperatorSupportBase):  # type: ignore[misc]
        def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
            return answers[node]

    t0 = time.perf_counter()
    theirs = CapabilityBasedPartitioner(gm, Support(), **kw).propose_partitions()
    t1 = time.perf_counter()
    ours = partition.propose_partitions(gm, answers.__getitem__, **kw)
    t2 = time.perf_counter()
    same = [(q.id, list(q.nodes)) for q in ours] == [(q.id, list(q.nodes)) for q in theirs]
    print(f"{what}: {len(gm.graph.nodes)} nodes, {sum(answers.values())} supported, {len(theirs)} partitions; "
          f"torch {t1 - t0:.2f} s, tern {t2 - t1:.3f} s ({(t1 - t0) / (t2 - t1):.0f}x), "
          f"{'identical' if same else 'DIFFERENT'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
